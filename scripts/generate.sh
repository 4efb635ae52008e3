#!/usr/bin/env bash
# Installs dependencies, builds Radix, and runs its main job: the built-in
# MLP example (trace -> compile -> run, with timings and a reference check).
# Extra arguments go to `radix example` (see `build/radix help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh -DRADIX_BUILD_TESTS=OFF -DRADIX_BUILD_BENCH=OFF
./build/radix example "$@"
