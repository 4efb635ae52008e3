#!/usr/bin/env bash
# Installs this build into a temporary prefix, configures examples/consumer
# against it with find_package(Radix), builds and runs it. The consumer never
# sees the source or build tree.
set -euo pipefail
build_dir=$1 source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/examples/consumer" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
out=$("$work/build/consumer")
echo "$out"
[[ "$out" == "consumer: f32[b=2,o=2] OK, 0 mismatches" ]]
# The installed CLI runs from the prefix too.
"$work/prefix/bin/radix" --help >/dev/null
echo "installed package: OK"
