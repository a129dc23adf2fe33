#!/usr/bin/env bash
# Bazel wrapper: train_cases.py with the built tools (see its docstring).
# Usage: train_cases_test.sh ZERO_COMPILE ZERO_RUN [train_cases.py flags]
set -euo pipefail
zero_compile="$1"
zero_run="$2"
shift 2
exec /usr/bin/python3 tests/integration/train_cases.py \
  --zero-compile "$zero_compile" --zero-run "$zero_run" "$@"
