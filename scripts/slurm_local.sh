#!/usr/bin/env bash
# meshc — scripts/slurm_local.sh: a Slurm cluster of one machine, for tests (docs/testing.md).
#
#   scripts/slurm_local.sh run -- COMMAND...
#
# Starts munged, slurmctld and slurmd (Debian's munge, slurmctld and slurmd packages) with a
# configuration, key, state and sockets of their own in a temporary folder, waits until the
# node takes jobs, runs COMMAND, and stops the daemons and removes the folder when COMMAND
# ends, fails or is interrupted. COMMAND sees SLURM_CONF, so `srun`, `sinfo` and
# `meshc run --launcher srun` reach this cluster. The node offers MESHC_SLURM_CPUS CPUs
# (default 8, more than the machine's cores, so that a 4-rank job fits; ranks share cores).
#
# Needs root (slurmd starts jobs as their user) and the packages; exits 2 with the reason
# where it cannot start a daemon. Ports are derived from the process id, so concurrent runs
# do not collide. The system's own munge and Slurm services, if any, are left alone.
set -euo pipefail

usage() {
  echo "usage: scripts/slurm_local.sh run -- COMMAND..." >&2
  exit 2
}
(($# >= 3)) && [[ $1 == run && $2 == -- ]] || usage
shift 2
for tool in munged slurmctld slurmd srun sinfo; do
  command -v "$tool" >/dev/null || {
    echo "slurm_local.sh: '$tool' is not installed (scripts/bootstrap.sh installs Slurm)" >&2
    exit 2
  }
done
[[ $(id -u) == 0 ]] || { echo "slurm_local.sh: needs root (slurmd runs jobs as their user)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/meshc-slurm.XXXXXX")
chmod 700 "$work"
id=$$
ctld_port=$((20000 + (id % 2000) * 4))
node=$(hostname -s)

child=
cleanup() {
  # COMMAND's process group first, politely (meshc passes SIGTERM on to
  # srun), then for good; then every job still in the cluster, whose tasks
  # belong to slurmd's step daemons, not to COMMAND; then the daemons.
  if [[ -n $child ]] && kill -0 -- "-$child" 2>/dev/null; then
    kill -TERM -- "-$child" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 -- "-$child" 2>/dev/null || break; sleep 0.1; done
    kill -9 -- "-$child" 2>/dev/null || true
  fi
  if [[ -f $work/slurmctld.pid ]]; then
    scancel --full --quiet $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
    for _ in $(seq 100); do
      [[ -z $(squeue -h -o %i 2>/dev/null) ]] && ! pgrep -x slurmstepd >/dev/null && break
      sleep 0.1
    done
  fi
  for pidfile in slurmd.pid slurmctld.pid munged.pid; do
    if [[ -f $work/$pidfile ]]; then
      pid=$(cat "$work/$pidfile")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail_start() {
  echo "slurm_local.sh: $1 did not start; its log:" >&2
  tail -20 "$work/$1.log" >&2 || true
  exit 2
}

# munge: a key of its own, a socket in the folder.
mkdir -p "$work/munge"
chmod 700 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 600 "$work/munge/munge.key"
munged --force --socket="$work/munge/socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munged.pid" --log-file="$work/munged.log" \
  --seed-file="$work/munge/seed" || fail_start munged

mkdir -p "$work/state" "$work/spool"
cat >"$work/slurm.conf" <<CONF
ClusterName=meshc
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$((ctld_port + 1))
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=pmix
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=${MESHC_SLURM_CPUS:-8} State=UNKNOWN
PartitionName=meshc Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF=$work/slurm.conf

slurmctld -i -f "$SLURM_CONF" || fail_start slurmctld
slurmd -f "$SLURM_CONF" || fail_start slurmd
for _ in $(seq 100); do
  if sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix)'; then
    break
  fi
  sleep 0.2
done
sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix)' || {
  echo "slurm_local.sh: the node did not come up; slurmctld and slurmd logs:" >&2
  tail -10 "$work/slurmctld.log" "$work/slurmd.log" >&2 || true
  exit 2
}

status=0
setsid "$@" &
child=$!
wait "$child" || status=$?
exit "$status"
