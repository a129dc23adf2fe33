#!/usr/bin/env bash
# Bazel wrapper: runs a pytest file with Debian's Python, the zerosbp
# package (python_api/ in runfiles) importable and the CLI tools named.
# Usage: pytest.sh TEST_FILE
set -euo pipefail
export PYTHONPATH="$PWD/python_api${PYTHONPATH:+:$PYTHONPATH}"
export ZEROSBP_COMPILE="$PWD/compiler/tools/zero-compile/zero-compile"
export ZEROSBP_RUN="$PWD/runtime/tools/zero-run/zero-run"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@"
