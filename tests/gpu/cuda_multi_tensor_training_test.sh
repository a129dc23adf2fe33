#!/usr/bin/env bash
# Bazel wrapper of cuda_multi_tensor_check.py: zero-run --multi-tensor=on
# equals off bit for bit and the report counts the merged launches; without
# a GPU, the flag on the CPU and one clear line for --device cuda.
# Usage: cuda_multi_tensor_training_test.sh ZERO_COMPILE ZERO_RUN
set -euo pipefail
exec /usr/bin/python3 tests/gpu/cuda_multi_tensor_check.py \
  --zero-compile "$1" --zero-run "$2"
