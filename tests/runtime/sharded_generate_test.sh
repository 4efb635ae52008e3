#!/usr/bin/env bash
# `mpirun -np N radix generate --sharded` (tensor-parallel stories260K)
# prints the same greedy text as one process, for N = 2 and 4; a job size
# the model's heads do not divide (3) fails with a clear error.
# Usage: sharded_generate_test.sh MPIRUN RADIX MODEL [MPIRUN FLAGS...]
set -u
mpirun="$1"; radix="$2"; model="$3"; shift 3
args=(generate --model "$model" --temperature 0 --steps 200 --prompt "One day, Tom")
want=$("$radix" "${args[@]}" 2>/dev/null) || { echo "FAIL: the one-process run failed"; exit 1; }
echo "one process: $want"
errf=$(mktemp)
trap 'rm -f "$errf"' EXIT
status=0
for np in 2 4; do
  got=$(timeout 300 "$mpirun" "$@" -np "$np" "$radix" "${args[@]}" --sharded 2>"$errf")
  rc=$?
  if [[ $rc -ne 0 || "$got" != "$want" ]]; then
    echo "FAIL: np $np (exit $rc) printed:"; echo "$got"; cat "$errf"; status=1
  else
    echo "np $np: same text ($(tail -1 "$errf"))"
  fi
done
err=$(timeout 300 "$mpirun" "$@" -np 3 "$radix" "${args[@]}" --sharded 2>&1)
rc=$?
if [[ $rc -eq 0 ]] || ! grep -q "tensor parallelism over 3 devices needs n_kv_heads and hidden_dim divisible by it" <<<"$err"; then
  echo "FAIL: np 3 should be refused (exit $rc):"; echo "$err"; status=1
else
  echo "np 3: refused as expected"
fi
exit $status
