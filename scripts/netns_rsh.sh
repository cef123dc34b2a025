#!/bin/sh
# meshc — scripts/netns_rsh.sh: OpenMPI's rsh agent for the hosts of scripts/netns_hosts.sh.
#
#   netns_rsh.sh HOST COMMAND...
#
# mpirun calls its agent as ssh would be called, to start its daemon on HOST; this one runs
# COMMAND inside HOST's network namespace (<MESHC_HOSTS_PREFIX>HOST) with HOST as the hostname
# (its own UTS namespace), so OpenMPI sees a separate node reached over the network. COMMAND
# is a shell line (mpirun may start it with "PATH=...; export PATH; ..."), as ssh runs it.
#
# MESHC_HOSTS_HIDE=HOST:DIR makes DIR empty on HOST (an empty tmpfs mounted over it in a mount
# namespace of the host's own), as a folder missing on one machine: for the fault tests.
host=$1
shift
hide=
case ${MESHC_HOSTS_HIDE:-} in
  "$host":/*) hide="mount -t tmpfs meshc-hidden '${MESHC_HOSTS_HIDE#*:}' && " ;;
esac
exec ip netns exec "${MESHC_HOSTS_PREFIX:?set by netns_hosts.sh}$host" \
  unshare --uts --mount sh -c "hostname $host && $hide$*"
