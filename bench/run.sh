#!/usr/bin/env bash
# Builds (if needed) and runs the Radix benchmarks. OpenBLAS's AVX-512 core is
# selected here, for the matmul command only (OpenBLAS 0.3.21 picks Haswell on
# Zen 5 otherwise); the code never sets it.
#
#   bench/run.sh [extra Google Benchmark flags, e.g. --benchmark_repetitions=9]
#
# Env: BUILD_DIR (default build-bench), JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-bench}
JOBS=${JOBS:-2}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRADIX_BUILD_TESTS=OFF -DRADIX_BUILD_BENCH=ON
fi
ninja -C "$BUILD_DIR" -j"$JOBS" radix_bench_matmul radix_bench_elementwise radix_bench_math radix_bench_ops \
  radix_bench_topk radix_bench_conv radix_bench_donation radix_bench_call radix_bench_isa
# SkylakeX needs AVX-512: on a CPU without it OpenBLAS dies with SIGILL, so
# there we fall back to the core OpenBLAS picks itself (and say so).
CORE=SkylakeX
if ! grep -qw avx512f /proc/cpuinfo; then
  echo "run.sh: this CPU has no AVX-512; OPENBLAS_CORETYPE=SkylakeX would crash (SIGILL)." >&2
  echo "run.sh: comparing against OpenBLAS's own choice for this CPU instead." >&2
  CORE=
fi
if [[ -n "$CORE" ]]; then
  OPENBLAS_CORETYPE=$CORE "$BUILD_DIR/bench/radix_bench_matmul" "$@"
else
  "$BUILD_DIR/bench/radix_bench_matmul" "$@"
fi
"$BUILD_DIR/bench/radix_bench_elementwise" "$@"
"$BUILD_DIR/bench/radix_bench_math" "$@"
"$BUILD_DIR/bench/radix_bench_ops" "$@"
"$BUILD_DIR/bench/radix_bench_topk" "$@"
"$BUILD_DIR/bench/radix_bench_conv" "$@"
"$BUILD_DIR/bench/radix_bench_donation" "$@"
"$BUILD_DIR/bench/radix_bench_call" "$@"
"$BUILD_DIR/bench/radix_bench_isa" "$@"
