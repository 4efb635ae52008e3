#!/usr/bin/env bash
# Configures and builds Radix into ./build (Release, Ninja, -j2).
# Extra arguments are passed to the cmake configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir "$@" >/dev/null
ninja -C build -j"${RADIX_JOBS:-2}"
