#!/usr/bin/env bash
# `radix example --sharded data|tensor` under mpirun -np 2 and -np 4 prints
# the unsharded run's output row and passes the same reference check.
# Usage: sharded_example_test.sh MPIRUN RADIX [MPIRUN FLAGS...]
set -u
mpirun="$1"; radix="$2"; shift 2
want=$("$radix" example --iters 3) || { echo "FAIL: the unsharded run failed"; exit 1; }
want_out=$(grep "^  output" <<<"$want")
echo "unsharded: $want_out"
status=0
for np in 2 4; do
  for mode in data tensor; do
    got=$(timeout 300 "$mpirun" "$@" -np "$np" "$radix" example --iters 3 --sharded "$mode" 2>&1)
    rc=$?
    got_out=$(grep "^  output" <<<"$got")
    echo "np $np $mode (exit $rc): $got_out"
    if [[ $rc -ne 0 || "$got_out" != "$want_out" ]] || ! grep -q "check .*: OK" <<<"$got" ||
       ! grep -q "sharded   $mode parallel over mesh\[x=$np\]" <<<"$got"; then
      echo "FAIL: np $np $mode"; echo "$got"; status=1
    fi
  done
done
exit $status
