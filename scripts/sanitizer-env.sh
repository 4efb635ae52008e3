# Sourced by scripts/fuzz.sh and scripts/test-asan.sh: symbolized sanitizer
# reports. ASan / UBSan look for an unversioned llvm-symbolizer, which Debian
# installs only under versioned names; pick the first one present unless the
# caller set ASAN_SYMBOLIZER_PATH.
if [[ -z "${ASAN_SYMBOLIZER_PATH:-}" ]]; then
  for s in llvm-symbolizer llvm-symbolizer-22 llvm-symbolizer-14; do
    if command -v "$s" >/dev/null; then export ASAN_SYMBOLIZER_PATH="$(command -v "$s")"; break; fi
  done
fi
