#!/usr/bin/env bash
# Bazel wrapper: runs a test script with Debian's Python (it has numpy).
# Usage: python_test.sh SCRIPT [ARGS...]
set -euo pipefail
exec /usr/bin/python3 "$@"
