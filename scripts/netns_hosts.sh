#!/usr/bin/env bash
# meshc — scripts/netns_hosts.sh: several hosts on one machine, for tests (docs/testing.md).
#
#   scripts/netns_hosts.sh run N -- COMMAND...
#
# Makes N hosts h1..hN as Linux network namespaces, each with its own address on a bridge
# (veth pairs, iproute2) and its own hostname, runs COMMAND, and removes them all when
# COMMAND ends, fails or is interrupted. MPI traffic between the hosts crosses real network
# interfaces (OpenMPI's tcp transport), not shared memory. COMMAND sees:
#
#   MESHC_HOSTS_MPIRUN_ARGS  what `meshc run --mpirun-args` needs to place ranks on the hosts:
#                            the hostfile (slots: MESHC_HOSTS_SLOTS, default 1 per host),
#                            OpenMPI's rsh agent pointed at scripts/netns_rsh.sh (which enters
#                            the host's namespace) and the interface the transports use
#   MESHC_HOSTS_PREFIX       the namespaces' name prefix (<prefix>h1 ...), for fault tests
#   MESHC_HOSTS_SUBNET       the hosts' /24 (the bridge is .1, host hK is .(10+K))
#
# Needs root (or CAP_NET_ADMIN) and iproute2; exits 2 with the reason where it cannot make a
# namespace. Names and the subnet are derived from the process id, so concurrent runs do not
# collide. Real machines need none of this: docs/user-guide.md shows their hostfile.
set -euo pipefail

usage() {
  echo "usage: scripts/netns_hosts.sh run N -- COMMAND..." >&2
  exit 2
}
(($# >= 4)) && [[ $1 == run && $3 == -- ]] || usage
count=$2
shift 3
[[ $count =~ ^[1-9]$ ]] || usage
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

id=$$
prefix="mc${id}"
bridge="mcbr${id}"
subnet_base="10.$((200 + id % 50)).$(((id / 50) % 250))"
work=$(mktemp -d "${TMPDIR:-/tmp}/meshc-hosts.XXXXXX")

# Processes still inside a host (a daemon stuck after a fault) would keep its namespace and
# links alive after `ip netns del`: they are killed first.
child=
cleanup() {
  # COMMAND runs in a process group of its own: whatever it left (an mpirun stuck in its
  # abort) goes with it.
  [[ -n $child ]] && kill -9 -- "-$child" 2>/dev/null || true
  for ((k = 1; k <= count; ++k)); do
    ip netns pids "${prefix}h$k" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "${prefix}h$k" 2>/dev/null || true
    ip link del "${prefix}v$k" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "${prefix}probe" 2>/dev/null || {
  echo "netns_hosts.sh: cannot create network namespaces (needs root or CAP_NET_ADMIN)" >&2
  exit 2
}
ip netns del "${prefix}probe"

ip link add "$bridge" type bridge
ip addr add "$subnet_base.1/24" dev "$bridge"
ip link set "$bridge" up
: >"$work/hosts"
for ((k = 1; k <= count; ++k)); do
  ns="${prefix}h$k"
  ip netns add "$ns"
  ip link add "${prefix}v$k" type veth peer name eth0 netns "$ns"
  ip link set "${prefix}v$k" master "$bridge" up
  ip -n "$ns" addr add "$subnet_base.$((10 + k))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  echo "h$k slots=${MESHC_HOSTS_SLOTS:-1}" >>"$work/hosts"
done

export MESHC_HOSTS_PREFIX=$prefix
export MESHC_HOSTS_SUBNET="$subnet_base.0/24"
export MESHC_HOSTS_MPIRUN_ARGS="--hostfile $work/hosts --mca plm_rsh_agent $repo/scripts/netns_rsh.sh --mca oob_tcp_if_include $MESHC_HOSTS_SUBNET --mca btl_tcp_if_include $MESHC_HOSTS_SUBNET --mca btl self,vader,tcp"
status=0
setsid "$@" &
child=$!
wait "$child" || status=$?
exit "$status"
