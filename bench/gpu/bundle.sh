#!/usr/bin/env bash
# Gathers everything bench/gpu/on_gpu.sh needs on a GPU machine that has no
# Bazel, no MLIR and none of the build's Debian packages: the binaries, the
# shared libraries they link (all but CUDA's, cuBLAS's, NCCL's and the C/C++
# runtime's, which that machine has in newer versions), the compiled plans,
# the scripts, and env.sh to find the libraries there.
#
# Usage: bench/gpu/bundle.sh [--batch N[,N...]] [--no-build] [OUTDIR]
#   OUTDIR     default .gpu-bundle at the repository root (git-ignored)
#   --batch    global batches (sequences) of the GPT-2 plans; default 8,16;
#              batch 8 also gets them unfused (gpu_bench.py's unfused row)
#   --no-build take the binaries Bazel already built (-c opt) as they are
#
# The parameters (500 MB for GPT-2 small) are not bundled: gpu_bench.py
# draws them on the GPU machine.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=.gpu-bundle
BATCHES=8,16
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --batch) BATCHES=$2; shift 2 ;;
    --batch=*) BATCHES=${1#--batch=}; shift ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bundle.sh: unknown option $1" >&2; exit 2 ;;
    *) OUT=$1; shift ;;
  esac
done
if ! [[ $BATCHES =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]]; then
  echo "bundle.sh: --batch takes positive integers separated by commas" >&2
  exit 2
fi
case "$OUT" in /*) ;; *) OUT=$ROOT/$OUT ;; esac

TARGETS=(//runtime/tools/zero-run //compiler/tools/zero-compile
         //tests/gpu:cuda_kernels_test //tests/gpu:cuda_attention_test
         //tests/gpu:cuda_matmul_epilogue_test //tests/gpu:nccl_comm_test
         //tests/gpu:shared_device_comm_test //tests/gpu:cuda_multi_tensor_test)
if [ "$BUILD" = 1 ]; then
  bazel build -c opt "${TARGETS[@]}"
fi
BAZEL_BIN=$(bazel info -c opt bazel-bin 2>/dev/null)
ZERO_RUN=$BAZEL_BIN/runtime/tools/zero-run/zero-run
ZERO_COMPILE=$BAZEL_BIN/compiler/tools/zero-compile/zero-compile
TESTS=("$BAZEL_BIN/tests/gpu/cuda_kernels_test"
       "$BAZEL_BIN/tests/gpu/cuda_attention_test"
       "$BAZEL_BIN/tests/gpu/cuda_matmul_epilogue_test"
       "$BAZEL_BIN/tests/gpu/nccl_comm_test"
       "$BAZEL_BIN/tests/gpu/shared_device_comm_test"
       "$BAZEL_BIN/tests/gpu/cuda_multi_tensor_test")
for f in "$ZERO_RUN" "$ZERO_COMPILE" "${TESTS[@]}"; do
  if [ ! -x "$f" ]; then
    echo "bundle.sh: $f is missing (build it with -c opt)" >&2
    exit 1
  fi
done
# Without /usr/local/cuda here, zero-run is built without the CUDA executor.
# grep reads all of ldd's output: with -q it would stop early, ldd would die of
# SIGPIPE and pipefail would report a failure.
if ! ldd "$ZERO_RUN" | grep 'libcudart\.so' > /dev/null; then
  echo "bundle.sh: $ZERO_RUN does not link CUDA" \
    "(no /usr/local/cuda at build time)" >&2
  exit 1
fi

# A bundle is rebuilt from scratch; anything else at OUTDIR is left alone.
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT")" ] &&
   [ ! -e "$OUT/.zerosbp-gpu-bundle" ]; then
  echo "bundle.sh: $OUT exists and is not a bundle; not overwriting it" >&2
  exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/plans" "$OUT/scripts"
touch "$OUT/.zerosbp-gpu-bundle"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

# --- binaries and their libraries -------------------------------------------
BINARIES=("$ZERO_RUN" "${TESTS[@]}")
for f in "${BINARIES[@]}"; do
  cp -L "$f" "$OUT/bin/"
  chmod 755 "$OUT/bin/$(basename "$f")"
done
# CUDA's libraries come from the GPU machine's pip packages (env.sh); glibc,
# libstdc++ and libgcc_s are newer there than here and must not be shadowed.
SKIP='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libutil|libresolv'
SKIP+='|libstdc\+\+|libgcc_s|libcudart|libcublas|libcublasLt|libnccl)\.so'
mkdir -p "$STAGE/lib"
for f in "${BINARIES[@]}"; do
  if ldd "$f" | grep 'not found' > /dev/null; then
    echo "bundle.sh: $f has unresolved libraries:" >&2
    ldd "$f" | grep 'not found' >&2
    exit 1
  fi
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ ! $name =~ $SKIP ]]; then
    cp -L "$path" "$STAGE/lib/$name"
  fi
done
# xz: libopenblas alone is 36 MB, and the bundle travels with the working tree.
tar -C "$STAGE" -cJf "$OUT/lib.tar.xz" lib
ls "$STAGE/lib" > "$OUT/lib.txt"

# --- plans ------------------------------------------------------------------
# The benchmark's optimizer: torch.optim.Adam's defaults but lr, no weight
# decay; adam_w_mode off so that it is Adam, as in PyTorch.
LR=1e-4
compile() {  # compile NAME ARGS...: plans/NAME.zplan and its report
  local name=$1; shift
  "$ZERO_COMPILE" "$@" --report=json -o "$OUT/plans/$name.zplan" \
    > "$STAGE/$name.report.json"
}
ds_config() {  # ds_config FILE BATCH BF16(true|false)
  cat > "$1" <<EOF
{
  "train_batch_size": $2,
  "bf16": {"enabled": $3},
  "optimizer": {"type": "Adam",
                "params": {"lr": $LR, "betas": [0.9, 0.999], "eps": 1e-8,
                           "weight_decay": 0.0, "adam_w_mode": false}},
  "zero_optimization": {"stage": 0}
}
EOF
}
# The same settings as a --pipeline string (zero-compile refuses --config with
# --pipeline, and a DeepSpeed config has no key for the fusions).
ds_pipeline() {  # ds_pipeline BATCH PRECISION
  echo "stage=0 optimizer=adam lr=$LR beta1=0.9 beta2=0.999 eps=1e-8" \
    "weight-decay=0 precision=$2 train-batch-size=$1"
}
# The compiler before fusion: gpu_bench.py's "ZeroSBP unfused" row and the op
# breakdown (docs/design.md#fusion).
UNFUSED="fuse-attention=false fuse-epilogues=false recompute-cheap=false"
# preset layers hidden heads seq vocab
MODELS=("small 12 768 12 1024 50257" "tiny 2 64 4 32 512")
BENCH_PLANS=()
PIPELINES=()
for batch in ${BATCHES//,/ }; do
  for model in "${MODELS[@]}"; do
    read -r preset layers hidden heads seq vocab <<< "$model"
    for precision in fp32 bf16; do
      bf16=false; [ "$precision" = bf16 ] && bf16=true
      name=gpt2_${preset}_${precision}_b${batch}
      ds_config "$OUT/plans/$name.json" "$batch" "$bf16"
      dims=(--num-layers="$layers" --hidden-size="$hidden"
            --num-attention-heads="$heads" --seq-length="$seq"
            --vocab-size="$vocab" --batch-size="$batch" --world=1)
      compile "$name" "${dims[@]}" --config="$OUT/plans/$name.json"
      shape="$layers $hidden $heads $seq $vocab"
      BENCH_PLANS+=("$name $preset $precision $batch $shape on")
      # Batch 8 only, to keep on_gpu.sh's time: the same plan unfused.
      if [ "$batch" = 8 ]; then
        pipeline=$(ds_pipeline "$batch" "$precision")
        # The pipeline string must be the DeepSpeed config: its plan with
        # the fusions on is the config's, byte for byte.
        "$ZERO_COMPILE" "${dims[@]}" --pipeline="$pipeline" \
          -o "$STAGE/$name.pipeline.zplan" > /dev/null
        if ! cmp -s "$STAGE/$name.pipeline.zplan" "$OUT/plans/$name.zplan"; then
          echo "bundle.sh: --pipeline='$pipeline' compiles another plan" \
            "than plans/$name.json; fix ds_pipeline" >&2
          exit 1
        fi
        compile "${name}_unfused" "${dims[@]}" \
          --pipeline="$pipeline $UNFUSED"
        BENCH_PLANS+=("${name}_unfused $preset $precision $batch $shape off")
        PIPELINES+=("${name}_unfused $pipeline $UNFUSED")
      fi
    done
  done
done
# The correctness plans of tests/gpu/cuda_training_check.py (its own set).
CHECK_PLANS=()
for stage in 0 1 2 3; do
  compile tiny_f32_stage$stage --preset=tiny --world=1 --stage=$stage
  CHECK_PLANS+=("tiny_f32_stage$stage 1e-4")
done
echo '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}}' \
  > "$OUT/plans/tiny_bf16_stage2.json"
compile tiny_bf16_stage2 --preset=tiny --world=1 \
  --config="$OUT/plans/tiny_bf16_stage2.json"
CHECK_PLANS+=("tiny_bf16_stage2 2e-2")
# Offloaded optimizer states: the updates run on the host with the CPU
# kernels (pinned host arena, copy stream, an NVMe file under /tmp).
compile tiny_f32_stage2_cpu_offload --preset=tiny --world=1 \
  --pipeline="stage=2 offload-optimizer=cpu"
CHECK_PLANS+=("tiny_f32_stage2_cpu_offload 1e-4")
# With overlap_comm the updates run on the host stream during the backward.
compile tiny_f32_stage2_cpu_offload_overlap --preset=tiny --world=1 \
  --pipeline="stage=2 offload-optimizer=cpu overlap-comm=true"
CHECK_PLANS+=("tiny_f32_stage2_cpu_offload_overlap 1e-4")
# Several in-process ranks: on one GPU they share it (SharedDeviceComm), and
# their f32 losses equal the CPU's bit for bit.
# The list is tests/gpu/cuda_training_check.py's MULTI_RANK_PLANS.
while IFS='|' read -r name world pipeline rtol; do
  eval_flag=()
  [[ $name == *_eval ]] && eval_flag=(--eval)
  compile "$name" --preset=tiny --world="$world" --pipeline="$pipeline" \
    ${eval_flag[@]+"${eval_flag[@]}"}
  CHECK_PLANS+=("$name $rtol")
done < <(python3 -c '
import sys
sys.path.insert(0, "tests/gpu")
from cuda_training_check import MULTI_RANK_PLANS
for name, world, pipeline, rtol in MULTI_RANK_PLANS:
    print("%s|%d|%s|%g" % (name, world, pipeline, rtol))')
compile tiny_bf16_stage3_nvme_offload --preset=tiny --world=1 \
  --pipeline="stage=3 precision=bf16 offload-optimizer=nvme offload-optimizer-nvme-path=/tmp"
CHECK_PLANS+=("tiny_bf16_stage3_nvme_offload 2e-2")
# bench/gpu/offload_gpu.py: GPT-2 small, bf16, batch 8, the optimizer states
# on the device, in host memory (overlapped, and with the delayed update),
# on NVMe, and at stage 3 with the parameter shards in host memory too.
SMALL=(--num-layers=12 --hidden-size=768 --num-attention-heads=12
       --seq-length=1024 --vocab-size=50257 --batch-size=8 --world=1)
OFFLOAD_BASE="stage=2 precision=bf16 optimizer=adam lr=$LR overlap-comm=true"
compile offload_none "${SMALL[@]}" --pipeline="$OFFLOAD_BASE"
compile offload_cpu "${SMALL[@]}" \
  --pipeline="$OFFLOAD_BASE offload-optimizer=cpu"
compile offload_cpu_dpu "${SMALL[@]}" \
  --pipeline="$OFFLOAD_BASE offload-optimizer=cpu offload-optimizer-delayed-update=true"
compile offload_nvme "${SMALL[@]}" \
  --pipeline="$OFFLOAD_BASE offload-optimizer=nvme offload-optimizer-nvme-path=/tmp"
compile offload_param_cpu "${SMALL[@]}" \
  --pipeline="stage=3 precision=bf16 optimizer=adam lr=$LR offload-optimizer=cpu offload-param=cpu"
# tests/gpu/cuda_multi_tensor_check.py reads tiny_f32_stage0, tiny_f32_stage2
# and tiny_bf16_stage2 above, and these: bf16 at stage 0, AdamW, SGD, fp16.
echo '{"bf16": {"enabled": true}, "zero_optimization": {"stage": 0}}' \
  > "$OUT/plans/tiny_bf16_stage0.json"
compile tiny_bf16_stage0 --preset=tiny --world=1 \
  --config="$OUT/plans/tiny_bf16_stage0.json"
compile tiny_adamw_stage0 --preset=tiny --world=1 \
  --pipeline="stage=0 optimizer=adamw weight-decay=0.1"
compile tiny_sgd_stage0 --preset=tiny --world=1 \
  --pipeline="stage=0 optimizer=sgd"
echo '{"fp16": {"enabled": true}, "zero_optimization": {"stage": 0}}' \
  > "$OUT/plans/tiny_fp16_stage0.json"
compile tiny_fp16_stage0 --preset=tiny --world=1 \
  --config="$OUT/plans/tiny_fp16_stage0.json"
# tests/gpu/cuda_graph_check.py reads tiny_f32_stage2, tiny_bf16_stage2 and
# tiny_f32_stage2_cpu_offload above, and this MLP with dropout.
compile dropout_mlp_stage2 "$ROOT/tests/gpu/dropout_mlp.mlir" --world=1 \
  --stage=2
# examples/mlp/mlp.mlir names its 4-rank CPU placement in the IR: the same
# graph on one GPU is that file with the placement rewritten.
MLP_NOTE=""
sed 's/#sbp.placement<cpu, \[0, 1, 2, 3\]>/#sbp.placement<cuda, [0]>/' \
  "$ROOT/examples/mlp/mlp.mlir" > "$STAGE/mlp_cuda1.mlir"
if "$ZERO_COMPILE" "$STAGE/mlp_cuda1.mlir" --stage=0 \
    --report=json -o "$OUT/plans/mlp_stage0.zplan" \
    > "$STAGE/mlp_stage0.report.json" 2> "$STAGE/mlp.err"; then
  CHECK_PLANS+=("mlp_stage0 1e-4")
else
  rm -f "$OUT/plans/mlp_stage0.zplan"
  MLP_NOTE=$(head -1 "$STAGE/mlp.err")
fi

# --- scripts ----------------------------------------------------------------
cp bench/gpu/gpu_bench.py bench/gpu/offload_gpu.py bench/gpu/on_gpu.sh \
  bench/pytorch/torch_gpt2.py \
  bench/pytorch/char_case.py "$OUT/scripts/"
for check in gpu_checks.py cuda_training_check.py cuda_graph_check.py \
    cuda_multi_tensor_check.py; do
  if [ -f tests/gpu/$check ]; then
    cp tests/gpu/$check "$OUT/scripts/"
  fi
done

# --- env.sh -----------------------------------------------------------------
cat > "$OUT/env.sh" <<'EOF'
# Sourced on the GPU machine (bash): unpacks lib.tar.xz once, outside the
# bundle so that it stays small enough to travel, and sets LD_LIBRARY_PATH
# to those libraries, then the CUDA 13 libraries of the python3 pip packages
# (nvidia-cublas, nvidia-cuda-runtime, nvidia-nccl-cu13), then
# /usr/local/cuda/lib64.
ZEROSBP_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ZEROSBP_BUNDLE
zerosbp_sum=$(cksum < "$ZEROSBP_BUNDLE/lib.tar.xz" | cut -d' ' -f1)
zerosbp_lib=${TMPDIR:-/tmp}/zerosbp-gpu-lib-$zerosbp_sum
if [ ! -e "$zerosbp_lib/lib/.unpacked" ]; then
  mkdir -p "$zerosbp_lib" &&
    tar -C "$zerosbp_lib" -xJf "$ZEROSBP_BUNDLE/lib.tar.xz" &&
    touch "$zerosbp_lib/lib/.unpacked"
fi
zerosbp_lib=$zerosbp_lib/lib
zerosbp_nvidia=$(python3 - <<'PY' 2>/dev/null || true
import glob, os
wanted = ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13",
          "libnccl.so.2")
dirs = []
try:
    import nvidia
    roots = list(nvidia.__path__)
except ImportError:
    roots = []
# nvidia/<package>/lib (cublas, cuda_runtime, nccl) or nvidia/cu13/lib.
for root in roots:
    for name in wanted:
        for path in sorted(glob.glob(os.path.join(root, "*", "lib", name))):
            if os.path.dirname(path) not in dirs:
                dirs.append(os.path.dirname(path))
print(":".join(dirs))
PY
)
zerosbp_path=$zerosbp_lib${zerosbp_nvidia:+:$zerosbp_nvidia}
zerosbp_path=$zerosbp_path:/usr/local/cuda/lib64
export LD_LIBRARY_PATH=$zerosbp_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset zerosbp_sum zerosbp_lib zerosbp_nvidia zerosbp_path
EOF

# --- manifest ---------------------------------------------------------------
printf '%s\n' "${BENCH_PLANS[@]}" > "$STAGE/bench.txt"
printf '%s\n' "${CHECK_PLANS[@]}" > "$STAGE/check.txt"
printf '%s\n' ${PIPELINES[@]+"${PIPELINES[@]}"} > "$STAGE/pipelines.txt"
COMMIT=$(git describe --always --dirty)
python3 - "$OUT" "$STAGE" "$LR" "$MLP_NOTE" "$COMMIT" <<'PY'
import json, os, sys
out, stage, lr, mlp_note, commit = sys.argv[1:]
def report(name):
    with open(os.path.join(stage, name + ".report.json")) as f:
        return json.load(f)
def entry(name):
    r = report(name)
    return {"file": "plans/%s.zplan" % name,
            "plan_bytes": os.path.getsize(os.path.join(out, "plans",
                                                       name + ".zplan")),
            "params": r["params"],
            "planned_peak_bytes":
                r["plan"]["memory_plan"]["peak_bytes_per_rank"]}
pipelines = {}
for line in open(os.path.join(stage, "pipelines.txt")).read().split("\n"):
    if line:
        name, pipeline = line.split(" ", 1)
        pipelines[name] = pipeline
bench = {}
for line in open(os.path.join(stage, "bench.txt")).read().split("\n"):
    if not line:
        continue
    name, preset, precision, *dims, fusion = line.split()
    batch, layers, hidden, heads, seq, vocab = map(int, dims)
    e = entry(name)
    # fusion "off": fuse-attention, fuse-epilogues and recompute-cheap false,
    # compiled from "pipeline" (the DeepSpeed config's settings and those).
    e.update(preset=preset, precision=precision, batch=batch, layers=layers,
             hidden=hidden, heads=heads, seq=seq, vocab=vocab,
             optimizer={"type": "Adam", "lr": float(lr),
                        "betas": [0.9, 0.999], "eps": 1e-8,
                        "weight_decay": 0.0},
             fusion=fusion)
    if fusion == "on":
        e["config"] = "plans/%s.json" % name
    else:
        e["pipeline"] = pipelines[name]
    bench[name] = e
check = {}
for line in open(os.path.join(stage, "check.txt")).read().split("\n"):
    if line:
        name, rtol = line.split()
        check[name] = dict(entry(name), loss_rtol=float(rtol))
manifest = {"commit": commit, "bench": bench, "check": check,
            "mlp_skipped": mlp_note or None}
with open(os.path.join(out, "plans", "plans.json"), "w") as f:
    json.dump(manifest, f, indent=2)
PY

echo "bundle: $OUT ($(du -sh "$OUT" | cut -f1))"
for f in "$OUT"/bin/* "$OUT/lib.tar.xz"; do
  printf '  %-40s %s\n' "${f#"$OUT"/}" "$(du -h "$f" | cut -f1)"
done
for f in "$OUT"/plans/*.zplan; do
  printf '  %-40s %s\n' "${f#"$OUT"/}" "$(du -h "$f" | cut -f1)"
done
echo "  libraries: $(tr '\n' ' ' < "$OUT/lib.txt")"
if [ -n "$MLP_NOTE" ]; then
  echo "  mlp.mlir skipped: $MLP_NOTE"
fi
