#!/usr/bin/env bash
# Radix's CUDA checks on a GPU machine, from the repository root, with what
# scripts/cuda-device-pack.sh packed here (the device image has no MLIR). One
# part per call (a call carries 64 MiB at most); the warm machine keeps the
# unpacked .device-root/ between the calls (the second must follow within
# the machine's idle window):
#   call 1: carry [".device/part1.tar.xz"],
#           command: bash scripts/cuda-device-check.sh unpack 1
#   call 2: carry [".device/part2.tar.xz"], timeout_s 600,
#           command: bash scripts/cuda-device-check.sh unpack 2 && bash scripts/cuda-device-check.sh run
# `run` writes bench/CUDA_RESULTS.md's raw material to $OUT (or ./cuda-out):
#   tests.log      the CUDA backend's tests and the whole op harness on the GPU
#   example.log    radix example --platform cuda (MLP against its reference)
#   generate.log   stories260K greedy text on CUDA and on the CPU (must be equal)
#   bench.md       radix bench-cuda: f32 / bf16 matmul 4096^3 TFLOP/s, copy bandwidth,
#                  110M-shape Llama decode / prefill tokens/s, compile times
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dev=$root/.device-root
case "${1:-}" in
  unpack)
    mkdir -p "$dev"
    xz -dc ".device/part$2.tar.xz" | tar -C "$dev" -xf -
    echo "unpacked part $2: $(ls "$dev/lib" | wc -l) libraries"
    exit 0 ;;
  run) ;;
  *) echo "usage: $0 unpack 1|2 | run" >&2; exit 2 ;;
esac
out=${OUT:-$root/cuda-out}
mkdir -p "$out"
# The binaries were built in /work/main: their test data paths point there.
[ -e /work/main ] || { mkdir -p /work && ln -s "$root" /work/main; }
nv=$(ls -d /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu 2>/dev/null | tr '\n' ':')
run() { "$dev/lib/ld-linux-x86-64.so.2" --library-path "$dev/lib:$nv" "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
{
  run "$dev/bin/tests/cuda_backend_test"
  for t in "$dev"/bin/tests/ops_*_test; do
    echo "== $(basename "$t") on CUDA"
    RADIX_TEST_PLATFORM=cuda run "$t" --gtest_brief=1
  done
} 2>&1 | tee "$out/tests.log" | grep -E "PASSED|FAILED|SKIPPED|==" 
run "$dev/bin/radix" example --platform cuda --iters 20 2>&1 | tee "$out/example.log"
for p in cuda cpu; do
  echo "== $p"
  run "$dev/bin/radix" generate --platform $p --model models/stories260K/stories260K.bin --temperature 0 --steps 60
done 2>&1 | tee "$out/generate.log"
run "$dev/bin/radix" bench --write-models /tmp/radix-models --filter 110M > /dev/null 2>&1
run "$dev/bin/radix" bench-cuda --model /tmp/radix-models/stories110M-random.safetensors 2>&1 | tee "$out/bench.md"
