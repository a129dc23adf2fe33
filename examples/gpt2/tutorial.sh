#!/usr/bin/env bash
# `bazel run //examples/gpt2:tutorial [-- --json $PWD/tutorial.json]`:
# DeepSpeed's ZeRO tutorial models compiled and a scaled-down one trained
# (see tutorial.py). Bazel passes zero-compile and zero-run as arguments.
set -euo pipefail
root="${RUNFILES_DIR:-$0.runfiles}/zerosbp"
[[ -d "$root" ]] || root="$PWD"
compile="$root/$1"
run="$root/$2"
shift 2
# Relative paths in the arguments are the caller's.
cd "${BUILD_WORKING_DIRECTORY:-$PWD}"
exec /usr/bin/python3 "$root/examples/gpt2/tutorial.py" "$compile" "$run" "$@"
