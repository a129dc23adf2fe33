#!/usr/bin/env bash
# `bazel run //examples/chargpt -- [flags]`: the character-level GPT-2 demo
# with Debian's Python and the zerosbp package (in runfiles). Outputs land
# in the directory bazel run was started from.
set -euo pipefail
runfiles="${RUNFILES_DIR:-$0.runfiles}/zerosbp"
export PYTHONPATH="$runfiles/python_api:$runfiles/examples/chargpt${PYTHONPATH:+:$PYTHONPATH}"
if [[ -n "${BUILD_WORKING_DIRECTORY:-}" ]]; then
  cd "$BUILD_WORKING_DIRECTORY"
fi
exec /usr/bin/python3 "$runfiles/examples/chargpt/train.py" "$@"
