#!/usr/bin/python3
"""The tutorial's 10B GPT-2 with tensor parallelism: ZeRO-2 on 32 ranks at
--model-parallel-size 1, 2 and 4, memory per rank.

The tutorial's 10B command line (ds_zero_stage_2.config, 50 layers, hidden
4096, 32 heads, --checkpoint-activations) on 32 ranks, with GPT-2's
vocabulary padded to 50304 so that the model ranks split it. At
--model-parallel-size N zero-compile lays the model out as Megatron does
on [32 / N, N] ranks (heads, MLP and vocabulary split over a model group of
N consecutive ranks) and ZeRO-2 partitions each model part over the data
axis (docs/design.md#zero-on-the-data-axis). Compiling needs shapes only.

Per model-parallel size: the data-parallel ranks, the sequences per
data-parallel rank, the model states per rank as planned (parameters,
gradients, Adam's m and v: the configs enable no fp16, so fp32 Adam, p = 4
bytes per parameter and gradient, K = 8 of optimizer state), the formula
p Ψ_rank + (p + K) Ψ / (tp dp) computed here from the parameter shapes
(each tensor padded as ZeRO pads it), the planned peak, the bytes each
rank sends per step on the data and the model axis, and the compile time.

Every row takes the tutorial's --batch-size 1: one sequence per
data-parallel rank.

Usage (through Bazel, which passes zero-compile):
    bazel run //examples/gpt2:tensor_parallel [-- --json $PWD/tp.json]
        [--ranks 32] [--model-parallel 1 2 4]
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LAYERS, HIDDEN, HEADS, SEQ = 50, 4096, 32, 1024
# GPT-2's 50257 padded to a multiple of 128 x 8, as Megatron pads it.
VOCAB = 50304
CONFIG = "ds_zero_stage_2.config"
# fp32 Adam: parameter and gradient bytes, optimizer-state bytes.
P, K = 4, 8
GB = 1e9


def parameters(layers=LAYERS, e=HIDDEN, vocab=VOCAB, seq=SEQ):
    """(name, elements, split on the model axis) in Gpt2Builder's order: the
    vocabulary-split embedding (tied LM head), c_attn (3, E, E) and its
    bias, c_fc and its bias column-parallel, both c_proj weights
    row-parallel; the position embedding, layer norms and c_proj biases
    replicated."""
    params = [("wte.weight", vocab * e, True), ("wpe.weight", seq * e, False)]
    for i in range(layers):
        p = "h.%d." % i
        params += [(p + "ln_1.weight", e, False), (p + "ln_1.bias", e, False),
                   (p + "attn.c_attn.weight", 3 * e * e, True),
                   (p + "attn.c_attn.bias", 3 * e, True),
                   (p + "attn.c_proj.weight", e * e, True),
                   (p + "attn.c_proj.bias", e, False),
                   (p + "ln_2.weight", e, False), (p + "ln_2.bias", e, False),
                   (p + "mlp.c_fc.weight", 4 * e * e, True),
                   (p + "mlp.c_fc.bias", 4 * e, True),
                   (p + "mlp.c_proj.weight", 4 * e * e, True),
                   (p + "mlp.c_proj.bias", e, False)]
    return params + [("ln_f.weight", e, False), ("ln_f.bias", e, False)]


def zero2_formula(ranks, tp):
    """docs/design.md#zero-on-the-data-axis at stage 2, by role: parameters
    p Ψ_rank (a split tensor's 1/tp part, a replicated one whole);
    gradients p and optimizer states K per element of the rank's shard,
    a split tensor's part padded to a multiple of dp, a replicated one to
    tp dp."""
    dp = ranks // tp
    psi_rank = sum(n // tp if split else n for _, n, split in parameters())
    shard = sum(-(-(n // tp) // dp) if split else -(-n // (tp * dp))
                for _, n, split in parameters())
    return {"param": P * psi_rank, "grad": P * shard, "opt_state": K * shard,
            "master": 0}


def command(zero_compile, ranks, tp, batch_per_dp_rank):
    return [zero_compile, "--deepspeed", "--model-parallel-size", str(tp),
            "--num-layers", str(LAYERS), "--hidden-size", str(HIDDEN),
            "--num-attention-heads", str(HEADS), "--batch-size",
            str(batch_per_dp_rank), "--deepspeed_config",
            os.path.join(HERE, CONFIG), "--checkpoint-activations",
            "--vocab-size", str(VOCAB), "--world", str(ranks)]


def shown(words):
    return " ".join(os.path.basename(w) if os.path.isabs(w) else w
                    for w in words)


def compile_row(zero_compile, ranks, tp):
    batch = 1
    words = command(zero_compile, ranks, tp, batch)
    done = subprocess.run(words + ["--report=json"], capture_output=True,
                          text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        sys.exit("tensor_parallel: zero-compile refused "
                 "--model-parallel-size %d: %s" % (
                     tp, lines[-1] if lines else "no output"))
    report = json.loads(done.stdout)
    memory = report["plan"]["memory_plan"]
    by_role = zero2_formula(ranks, tp)
    axes = report["plan"]["overlap"]["comm_bytes_by_axis"]
    row = {
        "model_parallel_size": tp,
        "data_parallel_size": ranks // tp,
        "ranks": ranks,
        "sequences_per_dp_rank": batch,
        "params": report["params"],
        "model_states_planned": memory["model_state_bytes"],
        "model_states_ir": report["model_state_bytes_per_rank"],
        "bytes_per_rank": report["bytes_per_rank"],
        "formula_by_role": by_role,
        "model_states_formula": sum(by_role.values()),
        "peak_bytes": memory["peak_bytes_per_rank"],
        "data_axis_bytes": axes[0],
        "model_axis_bytes": axes[1] if len(axes) > 1 else 0,
        "compile_ms": round(report["compile_ms"], 1),
        "command": shown(words),
    }
    print("compiled --model-parallel-size %d on %d ranks in %.0f ms" % (
        tp, ranks, report["compile_ms"]), flush=True)
    return row


def print_table(rows):
    print("\n| tp | dp | seqs per DP rank | params (GB) | grads (GB) "
          "| Adam m, v (GB) | model states planned (GB) | formula (GB) "
          "| = formula | planned peak (GB) | data axis GB/step "
          "| model axis GB/step | compile ms |")
    print("|" + " --- |" * 13)
    for r in rows:
        b = r["bytes_per_rank"]
        equal = (r["model_states_ir"] == r["model_states_formula"] ==
                 r["model_states_planned"] and b == r["formula_by_role"])
        print("| %d | %d | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %.3f "
              "| %.2f | %.2f | %.0f |" % (
                  r["model_parallel_size"], r["data_parallel_size"],
                  r["sequences_per_dp_rank"], b["param"] / GB,
                  b["grad"] / GB, b["opt_state"] / GB,
                  r["model_states_planned"] / GB,
                  r["model_states_formula"] / GB, "yes" if equal else "NO",
                  r["peak_bytes"] / GB, r["data_axis_bytes"] / GB,
                  r["model_axis_bytes"] / GB, r["compile_ms"]))
    print("\nGB = 1e9 bytes per rank. fp32 Adam (the config enables no "
          "fp16). Formula: p Ψ_rank + (p + K) Ψ / (tp dp) with p = 4, "
          "K = 8, each tensor padded as ZeRO pads it. Bytes per step as "
          "the plan schedules them (the rank average).")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--ranks", type=int, default=32)
    parser.add_argument("--model-parallel", type=int, nargs="+",
                        default=[1, 2, 4])
    args = parser.parse_args()
    for tp in args.model_parallel:
        if tp < 1 or args.ranks % tp:
            parser.error("--model-parallel sizes must divide --ranks (%d), "
                         "got %d" % (args.ranks, tp))
    rows = [compile_row(args.zero_compile, args.ranks, tp)
            for tp in args.model_parallel]
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
        print("\nwrote " + args.json)
    wrong = [r for r in rows
             if not (r["model_states_ir"] == r["model_states_formula"] ==
                     r["model_states_planned"])
             or r["bytes_per_rank"] != r["formula_by_role"]
             or r["params"] != sum(n for _, n, _ in parameters())]
    if wrong:
        sys.exit("tensor_parallel: the compiled model states differ from "
                 "the formula at --model-parallel-size " + ", ".join(
                     str(r["model_parallel_size"]) for r in wrong))


if __name__ == "__main__":
    main()
