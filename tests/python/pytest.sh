#!/usr/bin/env bash
# Bazel wrapper: runs pytest files with Debian's Python and the zerosbp
# package (python_api/ in runfiles) importable.
# Usage: pytest.sh TEST_FILE... ; ZEROSBP_TOOLS_* name the CLI tools.
set -euo pipefail
export PYTHONPATH="$PWD/python_api${PYTHONPATH:+:$PYTHONPATH}"
export ZEROSBP_COMPILE="$PWD/compiler/tools/zero-compile/zero-compile"
export ZEROSBP_RUN="$PWD/runtime/tools/zero-run/zero-run"
export ZEROSBP_SIM="$PWD/runtime/tools/zero-sim/zero-sim"
export ZEROSBP_CHECKPOINT="$PWD/runtime/tools/zero-checkpoint/zero-checkpoint"
export ZEROSBP_PYTHON="$PWD/python_api/python"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@"
