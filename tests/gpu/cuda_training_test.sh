#!/usr/bin/env bash
# Bazel wrapper of cuda_training_check.py: the tiny GPT-2 trained on the GPU
# equals the CPU; without a GPU, --device cuda fails with one clear line.
# Usage: cuda_training_test.sh ZERO_COMPILE ZERO_RUN
set -euo pipefail
exec /usr/bin/python3 tests/gpu/cuda_training_check.py \
  --zero-compile "$1" --zero-run "$2"
