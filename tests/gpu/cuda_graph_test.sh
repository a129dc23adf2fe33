#!/usr/bin/env bash
# Bazel wrapper of cuda_graph_check.py: zero-run --cuda-graph=on equals off
# bit for bit, falls back saying why, and --allow-tf32 stays near f32;
# without a GPU, the flags on the CPU and one clear line for --device cuda.
# Usage: cuda_graph_test.sh ZERO_COMPILE ZERO_RUN
set -euo pipefail
exec /usr/bin/python3 tests/gpu/cuda_graph_check.py \
  --zero-compile "$1" --zero-run "$2"
