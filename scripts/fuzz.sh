#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang + ASan + UBSan) and runs each for
# a bounded time on a copy of its seed corpus (fuzz/corpus/<target>/).
#
#   scripts/fuzz.sh [seconds per target, default 60] [target ...]
#
# Targets: safetensors gguf llama2c llama2c_tokenizer sentencepiece (all by
# default). Fails if any target crashes, leaks, times out or runs out of
# memory; the reproducer and the log are left in <build>/run/<target>/ (a
# crash reproduces with: <build>/<target>_fuzzer <build>/run/<target>/crash-*).
#
# Environment: RADIX_FUZZ_BUILD_DIR (default ./build-fuzz), RADIX_FUZZ_CXX
# (default clang++-14), RADIX_JOBS (build parallelism, default 2).
# New inputs found during a run stay in <build>/run/<target>/corpus; the
# committed seeds are not modified.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SECS=${1:-60}
shift || true
ALL=(safetensors gguf llama2c llama2c_tokenizer sentencepiece)
TARGETS=("$@")
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=("${ALL[@]}")

BUILD=${RADIX_FUZZ_BUILD_DIR:-build-fuzz}
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
CXX=${RADIX_FUZZ_CXX:-clang++-14}
if ! command -v "$CXX" >/dev/null; then
  echo "fuzz: $CXX not found (scripts/install-deps.sh installs clang-14 and libclang-rt-14-dev)" >&2
  exit 1
fi

mkdir -p "$BUILD"
# One fuzz run per build folder at a time (e.g. two ctest runs).
exec 9>"$BUILD/.lock"
flock 9

start=$SECONDS
cmake -S fuzz -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$BUILD" -j"${RADIX_JOBS:-2}" >"$BUILD/build.log" 2>&1 || { cat "$BUILD/build.log"; exit 1; }
echo "fuzz: built in $((SECONDS - start)) s"

# Leaks count as bugs; UB aborts. The fuzzers set their own options so that
# an outer ASAN_OPTIONS (scripts/test-asan.sh's) does not apply to them.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
source scripts/sanitizer-env.sh  # (the working directory is the repository root)

failed=()
RADIX_FUZZ_TMPDIR=
trap 'if [[ -n "$RADIX_FUZZ_TMPDIR" ]]; then rm -rf "$RADIX_FUZZ_TMPDIR"; fi' EXIT
for t in "${TARGETS[@]}"; do
  bin="$BUILD/${t}_fuzzer"
  if [[ ! -x "$bin" || ! -d "fuzz/corpus/$t" ]]; then
    echo "fuzz: unknown target '$t' (known: ${ALL[*]})" >&2
    exit 1
  fi
  run="$BUILD/run/$t"
  rm -rf "$run"
  mkdir -p "$run/corpus"
  cp fuzz/corpus/"$t"/* "$run/corpus/"
  # The fuzzer's input files go to a folder removed afterwards, crash or not.
  shm=/dev/shm
  [[ -d $shm && -w $shm ]] || shm=${TMPDIR:-/tmp}
  export RADIX_FUZZ_TMPDIR
  RADIX_FUZZ_TMPDIR=$(mktemp -d "$shm/radix-fuzz-$t.XXXXXX")
  t0=$SECONDS
  rc=0
  # -timeout: one input taking this long is a hang; -rss_limit_mb: a loader
  # must not allocate far more than its input justifies.
  "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$run/" "$run/corpus" >"$run/log" 2>&1 || rc=$?
  rm -rf "$RADIX_FUZZ_TMPDIR"
  execs=$(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$run/log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$run/log" | tail -1 || true)
  if [[ $rc -ne 0 ]]; then
    echo "fuzz: $t FAILED (exit $rc) after $((SECONDS - t0)) s; log: $run/log" >&2
    grep -E -A40 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|FUZZ_CHECK failed' "$run/log" |
      head -80 >&2 || tail -40 "$run/log" >&2
    ls "$run"/crash-* "$run"/leak-* "$run"/timeout-* "$run"/oom-* 2>/dev/null >&2 || true
    failed+=("$t")
  else
    echo "fuzz: $t ok: $execs inputs in $((SECONDS - t0)) s, $cov, corpus $(ls "$run/corpus" | wc -l) files"
  fi
done

echo "fuzz: total $((SECONDS - start)) s"
if [[ ${#failed[@]} -ne 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
