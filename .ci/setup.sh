#!/usr/bin/env bash
# Installs every Debian package the build, the demo and the tests need.
# Idempotent: packages already present are skipped without touching apt.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap bazel-platforms
  llvm-22 llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  clang-22 libclang-rt-22-dev libfuzzer-22-dev clang-format
  libabsl-dev libgtest-dev libgmock-dev
  libopenmpi-dev openmpi-bin
  python3-dev pybind11-dev python3-numpy python3-pytest
  python3-venv python3-pip python3-setuptools python3-wheel
  nlohmann-json3-dev libopenblas-dev libtbb-dev liburing-dev
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libffi-dev libncurses-dev
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "setup: note: /usr/local/cuda/bin/nvcc not found; CUDA targets will not build" >&2
fi
