#!/bin/sh
# meshc — scripts/netns_rsh.sh: OpenMPI's rsh agent for the hosts of scripts/netns_hosts.sh.
#
#   netns_rsh.sh HOST COMMAND...
#
# mpirun calls its agent as ssh would be called, to start its daemon on HOST; this one runs
# COMMAND inside HOST's network namespace (<MESHC_HOSTS_PREFIX>HOST) with HOST as the hostname
# (its own UTS namespace), so OpenMPI sees a separate node reached over the network. COMMAND
# is a shell line (mpirun may start it with "PATH=...; export PATH; ..."), as ssh runs it.
host=$1
shift
exec ip netns exec "${MESHC_HOSTS_PREFIX:?set by netns_hosts.sh}$host" \
  unshare --uts sh -c "hostname $host && $*"
