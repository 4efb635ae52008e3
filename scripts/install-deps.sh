#!/usr/bin/env bash
# Installs every Debian package Radix needs to build, test and benchmark.
# A no-op (no apt call at all) when everything is already present.
set -euo pipefail

# MLIR/LLVM by major version only: Debian's security updates replace point
# releases, so pinning one (e.g. 22.1.8) would break on the next update.
PKGS=(
  cmake ninja-build g++ pkg-config
  libmlir-22-dev mlir-22-tools llvm-22-dev libomp-22-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev libdnnl-dev
  libxxhash-dev nlohmann-json3-dev libsentencepiece-dev
  openmpi-bin libopenmpi-dev
  clang-14 libclang-rt-14-dev
)

missing=()
for p in "${PKGS[@]}"; do
  name="${p%%=*}"
  want="${p#*=}"
  have="$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)"
  if [[ "$have" != "install ok installed"* ]]; then
    missing+=("$p"); continue
  fi
  if [[ "$p" == *=* && "$have" != *" $want" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
