#!/usr/bin/env bash
# Installs dependencies, builds Radix with its tests and benchmarks, and runs
# the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh -DRADIX_BUILD_TESTS=ON -DRADIX_BUILD_BENCH=ON
ctest --test-dir build --output-on-failure -j2 --timeout 600
