#!/usr/bin/env bash
# bazel run -c opt //bench/pytorch -- --json $PWD/bench/pytorch/results.json
# Installs Debian's python3-torch when it is missing (only this benchmark
# needs it), then runs the comparison.
set -euo pipefail
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "pytorch_bench: installing python3-torch" >&2
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
      python3-torch >&2; then
    $sudo apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
      python3-torch >&2
  fi
fi
exec /usr/bin/python3 bench/pytorch/pytorch_bench.py "$@"
