#!/usr/bin/env bash
# The one command to run on the GPU machine, with a bundle that
# bench/gpu/bundle.sh made: every GPU test, compute-sanitizer, and the
# GPT-2 small benchmark against PyTorch eager, eager with SDPA and
# torch.compile, at batches 8 and 16 when bundled. Each step has its own
# time limit and the next step runs whatever happened; the last line sums
# them up.
# Everything fits in 10 minutes (the limits add up to 600 s).
#
# Usage: on_gpu.sh BUNDLE_DIR OUT_DIR [gpu_bench.py options]
#
# OUT_DIR receives seventeen files: on_gpu.txt (everything printed, with
# nvidia-smi and the summary), kernels.txt (cuda_kernels_test, then
# cuda_attention_test, cuda_matmul_epilogue_test, nccl_comm_test, then
# shared_device_comm_test), training_check.txt and .json,
# graph_check.txt and .json (CUDA graph and TF32), multi_tensor.txt and
# .json (cuda_multi_tensor_test, then the multi-tensor launches' training
# check), sanitizer.txt (zero-run
# under memcheck, then cuda_attention_test's small shapes under memcheck
# and racecheck), offload.txt and .json (offload_gpu.py), gpu_bench.txt and
# .json, and the benchmark's op breakdown
# of the bf16 batch-8 step, fused and unfused: gpu_ops.csv and the two
# zero-run traces gpu_trace_bf16_b8_{fused,unfused}.json. The scripts run
# are the bundle's copies.
set -uo pipefail

if [ $# -lt 2 ]; then
  echo "usage: on_gpu.sh BUNDLE_DIR OUT_DIR [gpu_bench.py options]" >&2
  exit 2
fi
BUNDLE=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && OUT=$(cd "$2" && pwd) || exit 2
shift 2
# Seconds per step; override through the environment.
T_KERNELS=${T_KERNELS:-40}
T_ATTENTION=${T_ATTENTION:-20}
T_EPILOGUE=${T_EPILOGUE:-25}
T_NCCL=${T_NCCL:-30}
T_SHARED=${T_SHARED:-15}
T_CHECK=${T_CHECK:-60}
T_GRAPH=${T_GRAPH:-45}
T_MULTI_TENSOR=${T_MULTI_TENSOR:-30}
# zero-run under memcheck took 1 s of its 75 on an H200: 30 went to
# T_MULTI_TENSOR.
T_SANITIZER=${T_SANITIZER:-30}
# GPT-2 small with its optimizer offloaded (offload_gpu.py): five plans.
T_OFFLOAD=${T_OFFLOAD:-45}
T_SANITIZER_ATTENTION=${T_SANITIZER_ATTENTION:-45}
T_BENCH=${T_BENCH:-215}
export PYTHONUNBUFFERED=1

exec > >(tee "$OUT/on_gpu.txt") 2>&1
TEE=$!
BEGIN=$SECONDS
SUMMARY=()
PART=$(mktemp)
trap 'rm -f "$PART"' EXIT

# What a step's output says in brief: gtest's counts, compute-sanitizer's
# error summary, the training check's verdict.
brief() {
  local passed skipped failed
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\..*/\1/p' "$1")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\},.*/\1/p' "$1")
  failed=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\{0,1\},.*/\1/p' "$1")
  if [ -n "$passed$skipped$failed" ]; then
    printf ' (%s passed, %s skipped, %s failed)' \
      "${passed:-0}" "${skipped:-0}" "${failed:-0}"
  fi
  grep -o 'ERROR SUMMARY: [0-9]* errors\{0,1\}' "$1" | tail -1 |
    sed 's/.*/ (&)/' | tr -d '\n'
  grep -o '^SKIPPED: no CUDA device\|^[0-9]* check(s) failed$' "$1" |
    tail -1 | sed 's/.*/ (&)/' | tr -d '\n'
}

# step NAME LIMIT LOG COMMAND...: runs COMMAND, adds its output to LOG,
# prints the output's tail, and records how it ended.
step() {
  local name=$1 limit=$2 log=$3 start=$SECONDS rc took
  shift 3
  echo
  echo "== $name (limit ${limit}s): $*"
  timeout --kill-after=10 "$limit" "$@" > "$PART" 2>&1
  rc=$?
  cat "$PART" >> "$log"
  tail -n 15 "$PART"
  took=$((SECONDS - start))
  case $rc in
    0) SUMMARY+=("$name ok ${took}s$(brief "$PART")") ;;
    124|137) SUMMARY+=("$name TIMED OUT after ${took}s$(brief "$PART")") ;;
    *) SUMMARY+=("$name FAILED rc=$rc ${took}s$(brief "$PART")") ;;
  esac
}

# shellcheck source=/dev/null
source "$BUNDLE/env.sh"
COMMIT=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["commit"])' "$BUNDLE/plans/plans.json" 2>&1)
echo "bundle $BUNDLE, commit $COMMIT"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
timeout 30 nvidia-smi || echo "nvidia-smi failed"
if ldd "$BUNDLE/bin/zero-run" | grep 'not found'; then
  echo "zero-run has unresolved libraries (above)"
fi

: > "$OUT/kernels.txt"
step kernels "$T_KERNELS" "$OUT/kernels.txt" \
  "$BUNDLE/bin/cuda_kernels_test" --gtest_color=no
# Fused attention (runtime/cuda/Attention.cu) in its own binary, so that a
# fault there cannot hide the other kernels' results.
step attention "$T_ATTENTION" "$OUT/kernels.txt" \
  "$BUNDLE/bin/cuda_attention_test" --gtest_color=no
# nn.matmul_bias(_gelu) on cuBLASLt (runtime/cuda/MatmulEpilogue.cpp), also in
# its own binary; it prints each comparison's largest error.
step matmul_epilogue "$T_EPILOGUE" "$OUT/kernels.txt" \
  "$BUNDLE/bin/cuda_matmul_epilogue_test" --gtest_color=no
step nccl "$T_NCCL" "$OUT/kernels.txt" \
  "$BUNDLE/bin/nccl_comm_test" --gtest_color=no
# Ranks that share one GPU: SharedDeviceComm against the CPU backend.
step shared_device "$T_SHARED" "$OUT/kernels.txt" \
  "$BUNDLE/bin/shared_device_comm_test" --gtest_color=no

CHECK=$BUNDLE/scripts/cuda_training_check.py
if [ -f "$CHECK" ]; then
  # The manifest's correctness plans, each with its loss tolerance.
  mapfile -t PLANS < <(python3 - "$BUNDLE" <<'PY'
import json, os, sys
bundle = sys.argv[1]
with open(os.path.join(bundle, "plans", "plans.json")) as f:
    for entry in json.load(f)["check"].values():
        print("--plan=%s:%g" % (os.path.join(bundle, entry["file"]),
                                entry["loss_rtol"]))
PY
)
  : > "$OUT/training_check.txt"
  step training_check "$T_CHECK" "$OUT/training_check.txt" \
    python3 "$CHECK" --zero-run "$BUNDLE/bin/zero-run" "${PLANS[@]}" \
    --steps 4 --out "$OUT/training_check.json"
else
  SUMMARY+=("training_check not bundled")
fi

GRAPH_CHECK=$BUNDLE/scripts/cuda_graph_check.py
if [ -f "$GRAPH_CHECK" ]; then
  : > "$OUT/graph_check.txt"
  step graph_check "$T_GRAPH" "$OUT/graph_check.txt" \
    python3 "$GRAPH_CHECK" --zero-run "$BUNDLE/bin/zero-run" \
    --plans "$BUNDLE/plans" --out "$OUT/graph_check.json"
else
  SUMMARY+=("graph_check not bundled")
fi

# The optimizer's updates and casts as multi-tensor launches
# (runtime/cuda/MultiTensor.h): the kernels against the single ones, then
# training with --multi-tensor=on against off, bit for bit.
MULTI_CHECK=$BUNDLE/scripts/cuda_multi_tensor_check.py
if [ -f "$MULTI_CHECK" ] && [ -x "$BUNDLE/bin/cuda_multi_tensor_test" ]; then
  : > "$OUT/multi_tensor.txt"
  step multi_tensor "$T_MULTI_TENSOR" "$OUT/multi_tensor.txt" \
    bash -c '"$1" --gtest_color=no
             kernels=$?
             python3 "$2" --zero-run "$3" --plans "$4" --out "$5"
             exit $((kernels || $?))' _ \
    "$BUNDLE/bin/cuda_multi_tensor_test" "$MULTI_CHECK" \
    "$BUNDLE/bin/zero-run" "$BUNDLE/plans" "$OUT/multi_tensor.json"
else
  SUMMARY+=("multi_tensor not bundled")
fi

SANITIZER=$(command -v compute-sanitizer ||
            ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$SANITIZER" ]; then
  : > "$OUT/sanitizer.txt"
  step sanitizer "$T_SANITIZER" "$OUT/sanitizer.txt" \
    "$SANITIZER" --tool memcheck --error-exitcode 1 \
    "$BUNDLE/bin/zero-run" "$BUNDLE/plans/tiny_f32_stage2.zplan" \
    --device cuda --steps 2
  # Every attention kernel on small shapes: out-of-bounds accesses
  # (memcheck), then shared-memory races (racecheck); fails if either does.
  step sanitizer_attention "$T_SANITIZER_ATTENTION" "$OUT/sanitizer.txt" \
    bash -c '"$1" --tool memcheck --error-exitcode 1 "$2" "$3" --gtest_color=no
             memcheck=$?
             "$1" --tool racecheck --error-exitcode 1 "$2" "$3" --gtest_color=no
             exit $((memcheck || $?))' _ "$SANITIZER" \
    "$BUNDLE/bin/cuda_attention_test" \
    --gtest_filter=CudaAttention.EveryKernelOnSmallShapes
else
  SUMMARY+=("sanitizer: compute-sanitizer not found")
fi

# ZeRO-Offload on GPT-2 small: step time against no offload, the host
# update's GB/s, the same losses.
OFFLOAD=$BUNDLE/scripts/offload_gpu.py
if [ -f "$OFFLOAD" ] && [ -f "$BUNDLE/plans/offload_cpu.zplan" ]; then
  : > "$OUT/offload.txt"
  step offload "$T_OFFLOAD" "$OUT/offload.txt" \
    python3 "$OFFLOAD" --zero-run "$BUNDLE/bin/zero-run" \
    --plans "$BUNDLE/plans" --steps 6 --out "$OUT/offload.json"
else
  SUMMARY+=("offload not bundled")
fi

# Batches 8 and 16, those the bundle has plans for (bundle.sh --batch 8,16);
# a --batch among the options given here comes later and wins.
BENCH_BATCHES=$(python3 - "$BUNDLE" <<'PY' 2>/dev/null
import json, os, sys
with open(os.path.join(sys.argv[1], "plans", "plans.json")) as f:
    bench = list(json.load(f)["bench"].values())
print(",".join(str(b) for b in (8, 16) if any(e["batch"] == b for e in bench)))
PY
)
BENCH_ARGS=()
if [ -n "$BENCH_BATCHES" ]; then
  BENCH_ARGS=(--batch "$BENCH_BATCHES")
fi
: > "$OUT/gpu_bench.txt"
# With the rows, the "ZeroSBP unfused" rows (batch 8) and the op breakdown,
# fused against unfused (bf16 batch 8: gpu_ops.csv and the two traces), both
# from bundle.sh's unfused plans; about 20 s of the step's time in all.
step gpu_bench "$T_BENCH" "$OUT/gpu_bench.txt" \
  python3 "$BUNDLE/scripts/gpu_bench.py" --bundle "$BUNDLE" \
  --zero-run-timeout 100 --json "$OUT/gpu_bench.json" --ops-dir "$OUT" \
  ${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"} "$@"
# gpu_bench.py's last line counts its rows: ran, failed, skipped, stopped.
BENCH_ROWS=$(sed -n 's/^gpu_bench: \([0-9]* rows: .*\)$/\1/p' \
  "$OUT/gpu_bench.txt" | tail -1)
if [ -n "$BENCH_ROWS" ]; then
  SUMMARY[${#SUMMARY[@]}-1]+=" ($BENCH_ROWS)"
fi

echo
SEP="; "
LINE=$(printf "%s$SEP" "${SUMMARY[@]}")
echo "on_gpu: ${LINE}$((SECONDS - BEGIN))s in all"
exec >&- 2>&-
wait "$TEE"
