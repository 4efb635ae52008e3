#!/usr/bin/env bash
# Packs what a GPU machine (the `device` tool's nvidia-h200, which has no MLIR
# and no network) needs to run Radix's CUDA checks: the built binaries
# (build/radix, libradix, the CUDA and op test executables) and every shared
# library they load, glibc and its loader included (the device image's may be
# older). Two xz parts under .device/, each small enough for one call's carry
# (64 MiB with the working tree): carry part 1 in a first call, part 2 in the
# next (the warm machine keeps what the first unpacked). Run after a build:
#   scripts/cuda-device-pack.sh [build-dir]
# then see scripts/cuda-device-check.sh for the two device calls.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=.device
rm -rf "$out" && mkdir -p "$out/stage/lib" "$out/stage/bin/tests"
grep -qxF "/.device/" .git/info/exclude 2>/dev/null || echo "/.device/" >> .git/info/exclude
bins=("$build/radix" "$build/tests/cuda_backend_test" "$build"/tests/ops_*_test)
cp "${bins[0]}" "$out/stage/bin/"
for t in "${bins[@]:1}"; do cp "$t" "$out/stage/bin/tests/"; done
# The shared libraries: the closure ldd prints (libradix, MLIR, LLVM, libomp,
# OpenMPI, OpenBLAS, oneDNN, glibc...), plus the loader itself.
ldd "${bins[@]}" | awk '/=>/ {print $3}' | grep '^/' | sort -u | while read -r lib; do cp -L "$lib" "$out/stage/lib/"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$out/stage/lib/"
# Split by size into two parts (the big MLIR / LLVM libraries apart).
(cd "$out/stage" && ls -S lib | awk 'NR % 2 == 1' | sed 's|^|lib/|' > ../part1.list &&
  { ls -S lib | awk 'NR % 2 == 0' | sed 's|^|lib/|'; echo bin; } > ../part2.list)
for p in 1 2; do
  tar -C "$out/stage" -cf - -T "$out/part$p.list" | xz -T0 -6 > "$out/part$p.tar.xz"
done
rm -rf "$out/stage" "$out"/part*.list
ls -la "$out"
