#!/bin/bash
# Builds the zerosbp wheel from what Bazel made: the package, its extension,
# and zero-compile, zero-run, zero-checkpoint and zero-sim as commands.
#
#   bazel run -c opt //python_api/wheel -- [OUT_DIR]     (default: ./dist)
#   python3 -m venv --system-site-packages env
#   env/bin/pip install --no-index OUT_DIR/zerosbp-*.whl
#
# The wheel is for this machine's Python (3.11) and Debian packages: the
# extension and the tools link LLVM/MLIR, OpenMPI, oneTBB and, where it was
# found, CUDA from them (.ci/setup.sh installs them). Everything is offline:
# setuptools, wheel and pip are Debian's.
set -euo pipefail

runfiles="${RUNFILES_DIR:-$0.runfiles}/zerosbp"
if [[ $# -gt 1 ]]; then
  echo "usage: bazel run -c opt //python_api/wheel -- [OUT_DIR]" >&2
  exit 2
fi
out="${1:-dist}"
if [[ "$out" != /* ]]; then
  out="${BUILD_WORKING_DIRECTORY:-$PWD}/$out"
fi

for module in setuptools wheel pip; do
  if ! /usr/bin/python3 -c "import $module" 2>/dev/null; then
    echo "build_wheel: Python's $module is missing (apt-get install" \
      "python3-$module)" >&2
    exit 1
  fi
done

stage=$(mktemp -d "${TMPDIR:-/tmp}/zerosbp-wheel.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/zerosbp/bin" "$out"
# The package's modules and extension, as their runfiles hold them.
cp -rL "$runfiles/python_api/zerosbp/." "$stage/zerosbp/"
for tool in compiler/tools/zero-compile/zero-compile \
  runtime/tools/zero-run/zero-run \
  runtime/tools/zero-checkpoint/zero-checkpoint \
  runtime/tools/zero-sim/zero-sim; do
  cp -L "$runfiles/$tool" "$stage/zerosbp/bin/"
done
cp -L "$runfiles/python_api/wheel/pyproject.toml" \
  "$runfiles/python_api/wheel/setup.py" "$runfiles/LICENSE" \
  "$runfiles/README.md" "$stage/"
chmod -R u+w "$stage"

echo "build_wheel: building in $stage" >&2
/usr/bin/python3 -m pip wheel --no-build-isolation --no-deps --no-index \
  --disable-pip-version-check --quiet --wheel-dir "$out" "$stage"
wheel=$(ls -t "$out"/zerosbp-*.whl | head -n 1)
echo "$wheel"
