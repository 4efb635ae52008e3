#!/usr/bin/env bash
# Builds llama.cpp's llama-bench, the LLM peer of `radix bench`, outside the
# repository. The source comes from the npm package node-llama-cpp, which
# ships llama.cpp as a git bundle (node_modules/node-llama-cpp/llama/
# gitRelease.bundle); npm is the only network access (--ignore-scripts: its
# postinstall, which downloads prebuilt binaries, does not run).
#
#   scripts/build-llama-cpp.sh          # prints the path of llama-bench last
#
# Folder: $RADIX_LLAMA_CPP_DIR, default ~/.cache/radix/llama.cpp:
#   node_modules/   the npm package          src/    the bundle's clone
#   build/          CMake + Ninja (Release)  VERSION what was built (npm version, commit, tag)
# Each step is skipped when its output is already there; delete a folder to redo it.
# Variables: RADIX_LLAMA_CPP_JOBS (default 2), RADIX_LLAMA_CPP_NPM_VERSION (default: the
# latest node-llama-cpp; e.g. 3.22.1, the version this was written against),
# RADIX_LLAMA_CPP_ISA: native (default: GGML_NATIVE, this CPU's instructions, in build/) or
# avx2 (ggml's x86 defaults without GGML_NATIVE: SSE4.2, AVX, AVX2, FMA, F16C, BMI2 and no
# AVX-512, in build-avx2/): the peer of `radix bench --target-cpu znver3` on an AVX-512 host.
set -euo pipefail

dir="${RADIX_LLAMA_CPP_DIR:-$HOME/.cache/radix/llama.cpp}"
jobs="${RADIX_LLAMA_CPP_JOBS:-2}"
pkg="node-llama-cpp${RADIX_LLAMA_CPP_NPM_VERSION:+@$RADIX_LLAMA_CPP_NPM_VERSION}"
mkdir -p "$dir"
cd "$dir"
say() { echo "build-llama-cpp: $*" >&2; }

need() { command -v "$1" >/dev/null || { say "needs $1 (apt-get install ${2:-$1})"; exit 1; }; }
need git; need cmake; need ninja ninja-build

# 1. The npm package (only for its bundle).
bundle="$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle"
if [[ ! -f "$bundle" ]]; then
  need npm
  say "npm install --ignore-scripts $pkg into $dir"
  [[ -f package.json ]] || echo '{ "name": "radix-llama-cpp", "private": true }' > package.json
  npm install --ignore-scripts --no-audit --no-fund --loglevel=error "$pkg" >&2
  [[ -f "$bundle" ]] || { say "$pkg has no llama/gitRelease.bundle"; exit 1; }
fi

# 2. The source: a clone of the bundle (one squashed commit).
if [[ ! -f src/CMakeLists.txt ]]; then
  say "cloning $bundle into $dir/src"
  rm -rf src
  git -c advice.detachedHead=false clone -q "$bundle" src
fi

# 3. llama-bench only: no tests, examples, server, app, curl / OpenSSL; static
#    libraries, so the binary runs from anywhere.
case "${RADIX_LLAMA_CPP_ISA:-native}" in
  native) build=build; native=ON ;;
  avx2) build=build-avx2; native=OFF ;;
  *) say "RADIX_LLAMA_CPP_ISA must be native or avx2, got '$RADIX_LLAMA_CPP_ISA'"; exit 1 ;;
esac
if [[ ! -f $build/build.ninja ]]; then
  say "configuring $dir/$build"
  cmake -S src -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=$native -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON -DBUILD_SHARED_LIBS=OFF -Wno-dev >&2
fi
ninja -C $build -j"$jobs" llama-bench >&2   # a no-op when up to date

bin="$dir/$build/bin/llama-bench"
[[ -x "$bin" ]] || { say "no $bin after the build"; exit 1; }

# What was built: the npm package's version, the tag node-llama-cpp records for
# its llama.cpp (llama/llama.cpp.info.json), the bundle's commit and llama.cpp's
# own version line.
if [[ ! -f VERSION || "$bin" -nt VERSION ]]; then
  {
    echo "node-llama-cpp $(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' node_modules/node-llama-cpp/package.json | head -1)"
    echo "llama.cpp.info.json: $(tr -d '\n ' < node_modules/node-llama-cpp/llama/llama.cpp.info.json)"
    echo "bundle commit $(git -C src rev-parse HEAD)"
    echo "llama-bench --version: $("$bin" --version 2>&1 | tr '\n' ' ')"
  } > VERSION
fi
say "built: $(tr '\n' ';' < VERSION)"
echo "$bin"
