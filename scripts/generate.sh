#!/usr/bin/env bash
# Installs dependencies, builds Radix, and runs its main job: the stories260K
# Llama model in models/ writes a story (radix generate: load the weights,
# compile prefill + decode, stream the text, print load / compile / tokens-per-
# second timings). Compiled programs are kept in build/executable-cache, so a
# second run loads them instead of compiling. Extra arguments go to
# `radix generate` (see `build/radix generate --help`), e.g.
#   ./scripts/generate.sh --temperature 0 --prompt "One day, Tom"
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh -DRADIX_BUILD_TESTS=OFF -DRADIX_BUILD_BENCH=OFF
./build/radix generate --model models/stories260K/stories260K.bin --cache-dir build/executable-cache "$@"
