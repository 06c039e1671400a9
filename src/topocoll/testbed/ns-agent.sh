#!/bin/sh
# Open MPI's plm_rsh_agent for the topocoll testbed, used in place of ssh:
#   ns-agent.sh [ssh options] HOST COMMAND...
# runs COMMAND (a shell command line, as ssh runs it) in HOST's network
# namespace, in a UTS namespace of its own whose hostname is HOST, so that
# MPI sees a separate node named after the topology's machine.
while [ $# -gt 0 ]; do
    case "$1" in -*) shift ;; *) break ;; esac
done
host=$1
shift
exec ip netns exec "topocoll-m-$host" unshare --uts sh -c 'hostname "$0" && eval "$*"' "$host" "$@"
