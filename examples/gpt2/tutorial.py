#!/usr/bin/python3
"""DeepSpeed's ZeRO tutorial (deepspeed.ai/tutorials/zero) compiled by ZeroSBP.

The tutorial trains Megatron-LM's GPT-2 with two launch-script changes:

  1.5B, ZeRO stage 1 on 8 GPUs:
      --model-parallel-size 1 --num-layers 48 --hidden-size 1600
      --num-attention-heads 16 --batch-size 1
      --deepspeed_config ds_zero_stage_1.config
  10B, ZeRO stage 2 on 32 GPUs:
      --model-parallel-size 1 --num-layers 50 --hidden-size 4096
      --num-attention-heads 32 --batch-size 1
      --deepspeed_config ds_zero_stage_2.config --checkpoint-activations

`zero-compile` takes these flags as written (--checkpoint-activations
recomputes each block's activations in the backward, zero-remat), with the
two configs shipped verbatim next to this script. Each model is compiled for 8
and 32 ranks; the table compares the planned per-rank model states with the
formula of docs/design.md#model-state-memory, computed here from the GPT-2
parameter count V E + T E + L (12 E^2 + 13 E) + 2 E and the padding rule
(every partitioned tensor padded to a multiple of the rank count), and lists
the bytes each rank sends per step, the planned peak and the compile time.
Compiling needs shapes only: nothing of the model's size is allocated.

Then the same flags scaled down (2 layers, hidden 64) with
ds_zero_stage_2.config are compiled and trained by `zero-run` on 4
in-process ranks, on sequences whose next token is the current one plus
one, so the loss has something to learn.

Usage (through Bazel, which passes the two tools):
    bazel run //examples/gpt2:tutorial [-- --json $PWD/tutorial.json]
        [--ranks 8 32] [--steps 40] [--no-train]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# name, Megatron model flags, the config the tutorial pairs them with.
TUTORIAL = [
    ("1.5B", {"num-layers": 48, "hidden-size": 1600,
              "num-attention-heads": 16}, "ds_zero_stage_1.config"),
    ("10B", {"num-layers": 50, "hidden-size": 4096,
             "num-attention-heads": 32, "checkpoint-activations": None},
     "ds_zero_stage_2.config"),
]
# Megatron's GPT-2 defaults the tutorial keeps.
VOCAB, SEQ = 50257, 1024
# The scaled-down model that trains on this machine.
SMALL = {"num-layers": 2, "hidden-size": 64, "num-attention-heads": 4,
         "seq-length": 32, "vocab-size": 128}
SMALL_RANKS, SMALL_BATCH_PER_RANK = 4, 2
GB = 1e9


def megatron_command(zero_compile, model, config, ranks, batch_per_gpu=1):
    """The tutorial's launch flags, as zero-compile takes them."""
    command = [zero_compile, "--deepspeed", "--model-parallel-size", "1"]
    for flag, value in model.items():
        # A switch (None) has no value.
        command += ["--" + flag] + ([] if value is None else [str(value)])
    command += ["--batch-size", str(batch_per_gpu), "--deepspeed_config",
                os.path.join(HERE, config), "--world", str(ranks)]
    return command


def shown(command):
    """The command as the tutorial writes it: tool and config by name."""
    return " ".join(os.path.basename(word) if os.path.isabs(word) else word
                    for word in command)


def tensor_sizes(layers, embed, vocab=VOCAB, seq=SEQ):
    """Element counts of GPT-2's parameters (tied LM head), as Gpt2.cpp
    names them."""
    block = [embed, embed,                 # ln_1
             3 * embed * embed, 3 * embed,  # attn.c_attn
             embed * embed, embed,          # attn.c_proj
             embed, embed,                  # ln_2
             4 * embed * embed, 4 * embed,  # mlp.c_fc
             4 * embed * embed, embed]      # mlp.c_proj
    return [vocab * embed, seq * embed] + block * layers + [embed, embed]


def model_state_formula(sizes, ranks, stage, half):
    """docs/design.md#model-state-memory: per-rank bytes of param + grad +
    optimizer state (Adam: K = 12 with an fp32 master under AMP, K = 8 in
    fp32). A partitioned tensor of n elements puts ceil(n / ranks) on every
    rank."""
    psi = sum(sizes)
    shard = sum(math.ceil(n / ranks) for n in sizes)
    param = grad = 2 if half else 4
    k = 12 if half else 8
    if stage == 0:
        return (param + grad + k) * psi
    if stage == 1:
        return (param + grad) * psi + k * shard
    if stage == 2:
        return param * psi + (grad + k) * shard
    return (param + grad + k) * shard


def comm_formula(sizes, ranks, half):
    """Stages 1 and 2 send 2 Psi (N - 1) / N per rank: the padded gradients
    reduce-scattered and the padded parameters all-gathered, T (N - 1) / N
    bytes each (docs/design.md#bytes-sent)."""
    padded = sum(math.ceil(n / ranks) * ranks for n in sizes)
    return 2 * padded * (2 if half else 4) * (ranks - 1) / ranks


def compile_tutorial(zero_compile, ranks_list):
    rows = []
    for name, model, config in TUTORIAL:
        sizes = tensor_sizes(model["num-layers"], model["hidden-size"])
        for ranks in ranks_list:
            command = megatron_command(zero_compile, model, config, ranks)
            report = json.loads(subprocess.run(
                command + ["--report=json"], check=True, capture_output=True,
                text=True).stdout)
            cfg = report["config"]
            half = cfg["fp16"]["enabled"] or cfg["bf16"]["enabled"]
            stage = report["stage"]
            memory = report["plan"]["memory_plan"]
            comm = report["comm_bytes_per_step"]
            formula = model_state_formula(sizes, ranks, stage, half)
            rows.append({
                "model": name,
                "params": report["params"],
                "params_formula": sum(sizes),
                "stage": stage,
                "ranks": ranks,
                "model_states_planned": memory["model_state_bytes"],
                "bucket_buffer_bytes": memory["peak_bytes_by_role"].get(
                    "comm_buffer", 0),
                "model_states_ir": report["model_state_bytes_per_rank"],
                "model_states_formula": formula,
                "reduce_scatter_bytes": comm["reduce_scatter"],
                "all_gather_bytes": comm["all_gather"],
                "all_reduce_bytes": comm["all_reduce"],
                "comm_formula_bytes": comm_formula(sizes, ranks, half),
                "peak_bytes": memory["peak_bytes_per_rank"],
                "compile_ms": round(report["compile_ms"], 1),
                "command": shown(command),
            })
            print("compiled %s for %d ranks in %.0f ms" %
                  (name, ranks, report["compile_ms"]), flush=True)
    return rows


def print_compile_table(rows):
    print("\n| model | params | stage | ranks | model states planned (GB) "
          "| bucket buffers (GB) | formula (GB) | IR = formula "
          "| reduce-scatter (GB) | all-gather (GB) | all-reduce (bytes) "
          "| sent = formula | planned peak (GB) | compile ms |")
    print("|" + " --- |" * 14)
    for r in rows:
        sent = r["reduce_scatter_bytes"] + r["all_gather_bytes"]
        print("| %s | %d | %d | %d | %.3f | %.3f | %.3f | %s | %.3f | %.3f "
              "| %g | %s | %.3f | %.0f |" % (
                  r["model"], r["params"], r["stage"], r["ranks"],
                  r["model_states_planned"] / GB,
                  r["bucket_buffer_bytes"] / GB,
                  r["model_states_formula"] / GB,
                  "yes" if r["model_states_ir"] == r["model_states_formula"]
                  else "NO",
                  r["reduce_scatter_bytes"] / GB, r["all_gather_bytes"] / GB,
                  r["all_reduce_bytes"],
                  "yes" if sent == r["comm_formula_bytes"] else "NO",
                  r["peak_bytes"] / GB, r["compile_ms"]))
    print("\nGB = 1e9 bytes, per rank; bytes sent per rank per step. Model "
          "states planned: param, grad, master and optimizer-state buffers "
          "of the memory plan; bucket buffers: its communication buffers "
          "(at stage 1 the full gradients live there until their "
          "reduce-scatter). IR: the same roles read off the compiled graph. "
          "Both configs leave fp16 and the optimizer out, so the models "
          "train in fp32 with Adam (K = 8); the all-reduce is the loss.")


def next_token_data(steps, batch, seq, vocab, seed=0):
    """Sequences counting up from a random start (mod vocab): every label
    is its token plus one."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, vocab, (steps, batch, 1))
    tokens = (start + np.arange(seq)) % vocab
    return tokens.astype(np.int64), ((tokens + 1) % vocab).astype(np.int64)


def train_small(zero_compile, zero_run, steps, work):
    """The tutorial's flags scaled down, stage 2 config, trained on 4 ranks."""
    plan = os.path.join(work, "small.zplan")
    command = megatron_command(zero_compile, SMALL, "ds_zero_stage_2.config",
                               SMALL_RANKS, SMALL_BATCH_PER_RANK)
    subprocess.run(command + ["--report=none", "-o", plan], check=True)
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    tokens, labels = next_token_data(
        steps, SMALL_BATCH_PER_RANK * SMALL_RANKS, SMALL["seq-length"],
        SMALL["vocab-size"])
    np.save(os.path.join(data, "tokens.npy"), tokens)
    np.save(os.path.join(data, "labels.npy"), labels)
    report_file = os.path.join(work, "small_run.json")
    subprocess.run([zero_run, plan, "--ranks", str(SMALL_RANKS), "--steps",
                    str(steps), "--data", data, "--quiet", "--report-file",
                    report_file], check=True)
    with open(report_file) as f:
        run = json.load(f)
    losses = run["losses"]
    print("\nScaled down, trained by zero-run on %d in-process ranks for %d "
          "steps:\n  %s" % (SMALL_RANKS, steps, shown(command)))
    print("| step | loss |\n| --- | --- |")
    for step in sorted({0, steps // 4, steps // 2, 3 * steps // 4,
                        steps - 1}):
        print("| %d | %.4f |" % (step + 1, losses[step]))
    return {"command": shown(command), "ranks": SMALL_RANKS,
            "steps": steps, "losses": losses,
            "mean_step_ms": run["mean_step_ms"],
            "peak_bytes": [p["total"] for p in run["peak_bytes"]]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--ranks", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--steps", type=int, default=40,
                        help="training steps of the scaled-down model")
    parser.add_argument("--no-train", action="store_true",
                        help="compile the tutorial models only")
    args = parser.parse_args()
    if any(r < 1 for r in args.ranks) or args.steps < 1:
        parser.error("--ranks and --steps must be positive")

    rows = compile_tutorial(args.zero_compile, args.ranks)
    print_compile_table(rows)
    result = {"compiles": rows}
    if not args.no_train:
        with tempfile.TemporaryDirectory(prefix="gpt2_tutorial_") as work:
            result["small"] = train_small(args.zero_compile, args.zero_run,
                                          args.steps, work)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
        print("\nwrote " + args.json)
    mismatch = [r for r in rows
                if r["model_states_ir"] != r["model_states_formula"]
                or r["params"] != r["params_formula"]]
    if mismatch:
        sys.exit("tutorial: the compiled model states differ from the "
                 "formula for " + ", ".join(
                     "%s at %d ranks" % (r["model"], r["ranks"])
                     for r in mismatch))


if __name__ == "__main__":
    main()
