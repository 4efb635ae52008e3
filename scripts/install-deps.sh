#!/usr/bin/env bash
# Installs every Debian package Radix needs to build, test and benchmark.
# A no-op (no apt call at all) when everything is already present.
set -euo pipefail

MLIR_VERSION="1:22.1.8-1~deb12u1"
PKGS=(
  cmake ninja-build g++ pkg-config
  "libmlir-22-dev=${MLIR_VERSION}" "mlir-22-tools=${MLIR_VERSION}" "llvm-22-dev=${MLIR_VERSION}"
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
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
