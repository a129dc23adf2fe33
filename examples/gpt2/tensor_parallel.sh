#!/usr/bin/env bash
# `bazel run //examples/gpt2:tensor_parallel [-- --json $PWD/tp.json]`: the
# tutorial's 10B model with ZeRO-2 on 32 ranks at --model-parallel-size 1,
# 2 and 4, memory per rank (see tensor_parallel.py). Bazel passes
# zero-compile as the first argument.
set -euo pipefail
root="${RUNFILES_DIR:-$0.runfiles}/zerosbp"
[[ -d "$root" ]] || root="$PWD"
compile="$root/$1"
shift
# Relative paths in the arguments are the caller's.
cd "${BUILD_WORKING_DIRECTORY:-$PWD}"
exec /usr/bin/python3 "$root/examples/gpt2/tensor_parallel.py" "$compile" "$@"
