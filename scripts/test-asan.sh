#!/usr/bin/env bash
# Builds Radix and its tests with AddressSanitizer + UndefinedBehaviorSanitizer
# (g++, RelWithDebInfo, benchmarks off) into ./build-asan and runs the whole
# test suite with ctest. Extra arguments are passed to ctest (e.g. -R Gguf;
# then the two LD_PRELOAD tests below are not run).
#
# Only Radix's own code (libradix, the CLI and the tests) is instrumented:
# Debian's libMLIR.so / libLLVM.so and the JIT-compiled kernels are not, so
# ASan does not see accesses made by them (a kernel writing out of bounds of
# a Radix buffer goes unnoticed), but it does see every Radix-side access.
#
# ASAN_OPTIONS:
#   detect_leaks=0      LeakSanitizer is off: JITs still alive at exit are
#                       leaked on purpose (object_jit.cc: the LLVM statics they
#                       use may already be gone), and a scalar body that throws
#                       while MLIR builds its op (reduce / sort / scatter with a
#                       bad body) unwinds through libMLIR, which is built
#                       without exceptions, so the half-built op leaks (5 tests
#                       report leaks). ASAN_OPTIONS=detect_leaks=1 shows them.
#   allocator_may_return_null=1  Buffer.AllocationTooLargeIsAnError asks for
#                       2^62 bytes and expects an error, not ASan's abort.
#
# OutsideProgram.* and InstalledPackage.* build an uninstrumented program
# (the README's g++ line, an installed find_package(Radix) consumer) against
# the instrumented libradix.so: the ASan runtime then loads after libLLVM.so,
# whose static constructors crash in ASan's not yet initialized interceptors.
# They run last, with the runtime preloaded (LD_PRELOAD=libasan.so).
# UBSAN_OPTIONS: print_stacktrace=1, halt_on_error=1 (any UB fails the test).
#
# -fno-sanitize=vptr: libradix is built with -fno-rtti (as MLIR is), and
# UBSan's vptr check needs the typeinfo of Radix's polymorphic classes
# (WeightStore, Tokenizer, ...), which then does not exist: the CLI and the
# tests would not link.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

BUILD=${RADIX_ASAN_BUILD_DIR:-build-asan}
SAN="-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

start=$SECONDS
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DRADIX_BUILD_TESTS=ON -DRADIX_BUILD_BENCH=OFF \
  -DCMAKE_C_FLAGS="$SAN" -DCMAKE_CXX_FLAGS="$SAN" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
ninja -C "$BUILD" -j"${RADIX_JOBS:-2}"
built=$SECONDS

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
source scripts/sanitizer-env.sh  # (the working directory is the repository root)
status=0
# Fuzz.Loaders is left out: the fuzzers are ASan + UBSan builds already.
ctest --test-dir "$BUILD" --output-on-failure -j2 --timeout 1800 \
  -E '^(Fuzz|OutsideProgram|InstalledPackage)\.' "$@" || status=$?
if [[ $# -eq 0 ]]; then
  LD_PRELOAD="$(realpath "$(g++ -print-file-name=libasan.so)")" \
    ctest --test-dir "$BUILD" --output-on-failure -j2 --timeout 1800 \
    -R '^(OutsideProgram|InstalledPackage)\.' || status=$?
fi
echo "test-asan: build $((built - start)) s, ctest $((SECONDS - built)) s, exit $status"
exit $status
