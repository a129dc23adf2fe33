#!/usr/bin/env bash
# Compiles the same models with zero-compile at two commits and compares the
# plans byte for byte and the JSON reports leaving out timings and the plan
# path: what a refactor that must not change behaviour is held to.
#
# Usage: bench/compile/compare_commits.sh OLD NEW [WORKDIR]
#   Each commit is checked out in a git worktree under WORKDIR (default a
#   temporary directory) and built with `bazel build -c opt`.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: compare_commits.sh OLD NEW [WORKDIR]" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${3:-$(mktemp -d)}
mkdir -p "$WORK"

# compile_cases ZERO_COMPILE REPO OUT: the models, each a plan and a report.
compile_cases() {
  local zc=$1 repo=$2 out=$3
  mkdir -p "$out"
  echo '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}}' \
    > "$out/bf16.json"
  echo '{"fp16": {"enabled": true, "loss_scale": 0}, "zero_optimization":' \
    '{"stage": 3, "overlap_comm": true}, "gradient_clipping": 1.0}' \
    > "$out/fp16.json"
  run() {
    local name=$1
    shift
    "$zc" "$@" --report=json -o "$out/$name.zplan" > "$out/$name.report.json"
  }
  for s in 0 1 2 3; do run tiny_s$s --preset=tiny --world=4 --stage=$s; done
  run tiny_bf16 --preset=tiny --world=2 --config="$out/bf16.json"
  run tiny_fp16 --preset=tiny --world=4 --config="$out/fp16.json"
  run tiny_eval --preset=tiny --world=4 --stage=3 --eval
  run mlp_s2 "$repo/examples/mlp/mlp.mlir" --world=4 --stage=2
  run gpt2_mlir_s3 "$repo/examples/gpt2/gpt2_tiny.mlir" --world=4 --stage=3
  run gpt2_ds2 --preset=tiny --world=4 \
    --config="$repo/examples/gpt2/ds_zero2.json"
}

for side in old new; do
  commit=$1
  [ "$side" = new ] && commit=$2
  tree=$WORK/tree-$side
  if [ ! -e "$tree" ]; then
    git -C "$ROOT" worktree add -f -q "$tree" "$commit"
  fi
  (cd "$tree" && bazel build -c opt //compiler/tools/zero-compile > \
    "$WORK/build-$side.log" 2>&1) || {
    echo "compare_commits: building $commit failed ($WORK/build-$side.log)" >&2
    exit 1
  }
  bin=$(cd "$tree" && bazel info -c opt bazel-bin 2>/dev/null)
  compile_cases "$bin/compiler/tools/zero-compile/zero-compile" "$tree" \
    "$WORK/out-$side"
done

python3 - "$WORK/out-old" "$WORK/out-new" <<'PY'
import filecmp, json, os, sys
old, new = sys.argv[1:]
def strip(x):
    # Timings and where the plan was written differ run to run.
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items()
                if not k.endswith("_ms") and k != "plan_file"}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
same = differ = 0
for name in sorted(os.listdir(old)):
    a, b = os.path.join(old, name), os.path.join(new, name)
    if name.endswith(".zplan"):
        ok = filecmp.cmp(a, b, shallow=False)
    elif name.endswith(".report.json"):
        ok = strip(json.load(open(a))) == strip(json.load(open(b)))
    else:
        continue
    same += ok
    differ += not ok
    print(("identical  " if ok else "DIFFERENT  ") + name)
print("%d identical, %d different" % (same, differ))
sys.exit(1 if differ else 0)
PY
