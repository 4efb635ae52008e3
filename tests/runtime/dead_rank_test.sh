#!/usr/bin/env bash
# A rank that dies while the others wait in a collective ends the whole job
# with an error within a bound (mpirun aborts the survivors), never a hang.
# Usage: dead_rank_test.sh MPIRUN SHARDED_MPI_BINARY [MPIRUN FLAGS...]
set -u
mpirun="$1"; bin="$2"; shift 2
start=$(date +%s)
out=$(timeout 120 "$mpirun" "$@" -np 2 "$bin" --die-before-collective 2>&1)
rc=$?
echo "$out"
echo "mpirun exit status $rc after $(( $(date +%s) - start )) s"
[[ $rc -eq 124 ]] && { echo "FAIL: the job hung (killed by the 120 s bound)"; exit 1; }
[[ $rc -eq 0 ]] && { echo "FAIL: the job reported success"; exit 1; }
grep -q "rank 1 exits now" <<<"$out" || { echo "FAIL: rank 1 never reached its exit"; exit 1; }
grep -q "rank 0 waits in the all-reduce" <<<"$out" || { echo "FAIL: rank 0 never reached the collective"; exit 1; }
echo "PASS: the dead rank ended the job"
