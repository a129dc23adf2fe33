#!/usr/bin/env bash
# `bazel run //examples/mlp:train [-- --steps 100 --optimizer adam]`:
# OneFlow's ZeRO tutorial on the zerosbp Python API (see train.py), run by
# Debian's Python with the package (python_api/ in runfiles) importable.
set -euo pipefail
root="${RUNFILES_DIR:-$0.runfiles}/zerosbp"
[[ -d "$root" ]] || root="$PWD"
export PYTHONPATH="$root/python_api${PYTHONPATH:+:$PYTHONPATH}"
# Relative paths in the arguments are the caller's.
cd "${BUILD_WORKING_DIRECTORY:-$PWD}"
exec /usr/bin/python3 "$root/examples/mlp/train.py" "$@"
