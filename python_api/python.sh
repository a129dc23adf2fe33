#!/bin/bash
# Runs Debian's /usr/bin/python3 with the zerosbp package importable:
#   bazel run //python_api:python -- train.py
#   bazel run //python_api:python -- -m zerosbp.launch -n 4 train.py
set -euo pipefail
runfiles="${RUNFILES_DIR:-$0.runfiles}"
export PYTHONPATH="$runfiles/zerosbp/python_api${PYTHONPATH:+:$PYTHONPATH}"
if [[ -n "${BUILD_WORKING_DIRECTORY:-}" ]]; then
  cd "$BUILD_WORKING_DIRECTORY"
fi
exec /usr/bin/python3 "$@"
