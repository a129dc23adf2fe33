"""ZeroSBP's main demo: a character-level GPT-2 trained with ZeRO stage 2.

    bazel run //examples/chargpt -- [--steps 500] [--ranks 4] [--stage 2]
                                    [--out chargpt-output]
    bazel run //examples/chargpt -- --resume chargpt-output/checkpoints \
                                    --steps 100

1. Reads the bundled corpus (Proverbs and Ecclesiastes, King James Version,
   108 KB) and trains a 4-layer GPT-2 on it with ZeRO on in-process CPU
   ranks, one progress line per step: loss, tokens/s, peak MiB per rank.
   It saves a checkpoint of the whole training state every
   --checkpoint-every steps and at the end (--checkpoint-dir, default
   <out>/checkpoints, the newest --keep kept). --resume DIR loads one (a
   step directory, or a directory with `latest`) and trains --steps more
   steps on the data an uninterrupted run would have read next; --ranks,
   --stage and --batch may differ from the run that saved it, the model
   flags and --seed may not. A resumed run skips the stage comparison.
2. Compiles and runs the same model at ZeRO stages 0-3 and prints them side
   by side: model-state memory per rank (measured, and the ZeRO paper's
   formula), peak memory, bytes sent per step (measured, and the formula),
   step time. Then the --stage run once more with attention unfused
   (fuse-attention=false): step time, activation peak and losses against the
   fused run.
3. Writes to --out: the IR after every compiler pass (ir/), a plot of memory
   per rank by role for stages 0-3 (memory_by_role.svg), the timeline of one
   step's compute and communication streams (timeline.svg and its Chrome
   trace timeline.json), losses.csv, stages.json and samples.txt.
4. Evaluates the held-out loss every --eval-every steps and samples text
   through inference graphs (a build() without backward) that run on the
   training graph's parameters on the ranks: no copy of the model, and they
   see every step's update. It prints what memory they add.
"""

import argparse
import csv
import json
import os
import sys
import time

import numpy as np

import zerosbp as zs
from zerosbp import nn
from zerosbp.plots import memory_by_role_svg, timeline_svg

from model import Gpt2

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "data", "proverbs_ecclesiastes.txt")
MIB = 1024.0 * 1024.0
ROLES = ("param", "grad", "master", "opt_state")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--stage", type=int, default=2, choices=[0, 1, 2, 3])
    parser.add_argument("--batch", type=int, default=32,
                        help="global batch (sequences per step)")
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--embed", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--lr", type=float, default=4e-3)
    parser.add_argument("--eval-every", type=int, default=100,
                        help="steps between held-out evaluations")
    parser.add_argument("--compare-steps", type=int, default=6,
                        help="steps per stage in the stage comparison")
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--out", default="chargpt-output")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint-dir",
                        help="where checkpoints go (default <out>/checkpoints)")
    parser.add_argument("--checkpoint-every", type=int, default=250,
                        help="steps between checkpoints; 0: only at the end")
    parser.add_argument("--keep", type=int, default=2,
                        help="checkpoints kept (0: all)")
    parser.add_argument("--resume", metavar="DIR",
                        help="continue from this checkpoint for --steps "
                        "more steps")
    args = parser.parse_args()
    if args.steps < 1 or args.ranks < 1 or args.batch < 1 or args.seq < 2:
        parser.error("--steps, --ranks, --batch must be positive and --seq "
                     "at least 2")
    if args.batch % args.ranks:
        parser.error(f"--batch {args.batch} must be a multiple of --ranks "
                     f"{args.ranks} (each rank takes an equal share)")
    if args.eval_every < 1:
        parser.error("--eval-every must be positive")
    if args.checkpoint_every < 0 or args.keep < 0:
        parser.error("--checkpoint-every and --keep must not be negative")
    if args.compare_steps < 2:
        parser.error("--compare-steps must be at least 2 (the first step "
                     "is left out of the timing)")
    return args


class Corpus:
    """The text as character ids, 90% for training and 10% held out."""

    def __init__(self, path):
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except OSError as error:
            sys.exit(f"chargpt: {path}: {error.strerror}")
        if len(text) < 1000:
            sys.exit(f"chargpt: {path}: {len(text)} characters is too "
                     "little text to train on")
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}
        ids = np.array([self.index[c] for c in text], dtype=np.int64)
        split = int(len(ids) * 0.9)
        self.train, self.held_out = ids[:split], ids[split:]
        self.size = len(text)

    def batch(self, rng, ids, batch, seq):
        """`batch` random windows: tokens and the next characters."""
        starts = rng.integers(0, len(ids) - seq - 1, batch)
        tokens = np.stack([ids[s:s + seq] for s in starts])
        labels = np.stack([ids[s + 1:s + seq + 1] for s in starts])
        return tokens, labels

    def encode(self, text):
        return [self.index[c] for c in text if c in self.index]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


def make_graph(args, vocab, stage, fuse_attention=True):
    """A fresh model (the same initial values for every call) and its
    training graph at ZeRO `stage` on args.ranks CPU ranks; with
    fuse_attention False, attention stays scores, softmax and values."""
    zs.manual_seed(args.seed)
    model = Gpt2(vocab, args.seq, args.embed, args.heads, args.layers,
                 seed=args.seed)
    optimizer = zs.optim.Adam(model.parameters(), lr=args.lr)

    class CharGpt(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.loss_fn = nn.CrossEntropyLoss()
            self.add_optimizer(optimizer)
            # Every tensor partitioned, so the paper's formulas hold
            # exactly; buckets of 128K elements (about 6 per step), so that
            # reductions overlap the backward pass and stage 2 frees each
            # bucket of full gradients after its reduce-scatter.
            self.config.enable_zero(stage > 0, stage=max(stage, 1),
                                    shard_min_size=1)
            self.config.set_pipeline_options(
                "overlap-comm=true stage3-param-persistence-threshold=0 "
                "reduce-bucket-size=131072 allgather-bucket-size=131072 "
                "stage3-prefetch-bucket-size=131072"
                + ("" if fuse_attention else " fuse-attention=false"))

        def build(self, tokens, labels):
            logits = self.model(tokens)
            loss = self.loss_fn(logits.reshape(-1, vocab), labels.reshape(-1))
            loss.backward()
            return loss

    graph = CharGpt().to(zs.placement("cpu", ranks=range(args.ranks)))
    return model, graph


def make_eval_graphs(model, vocab):
    """Inference graphs on `model`: the mean loss of a batch, and the
    logits for sampling. Compiled on their first call, after the training
    graph, they run on its parameters as it lays them out."""

    class HeldOutLoss(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.loss_fn = nn.CrossEntropyLoss()

        def build(self, tokens, labels):
            logits = self.model(tokens)
            return self.loss_fn(logits.reshape(-1, vocab), labels.reshape(-1))

    class Predict(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, tokens):
            return self.model(tokens)

    return HeldOutLoss(), Predict()


def sample(predict, prompts, seq, length, rng, rows, temperature=0.8):
    """Continues each of `prompts` (id lists) by `length` characters, all at
    once through the inference graph `predict` (batch `rows`, sequence
    `seq`): each row holds the last `seq` characters of its text, and the
    next one is drawn from the softmax of the logits at its last position
    (the attention is causal, so the padding after it does not matter)."""
    texts = [list(p) for p in prompts]
    for _ in range(length):
        tokens = np.zeros((rows, seq), dtype=np.int64)
        ends = []
        for row, ids in enumerate(texts):
            context = ids[-seq:]
            tokens[row, :len(context)] = context
            ends.append(len(context) - 1)
        logits = predict(tokens)
        for row, ids in enumerate(texts):
            scaled = logits[row, ends[row]].astype(np.float64) / temperature
            probs = np.exp(scaled - scaled.max())
            ids.append(int(rng.choice(len(probs), p=probs / probs.sum())))
    return texts


def eval_memory_line(held_out, graph):
    """What the inference graph adds per rank next to the training graph:
    measured, with the plan's figure (docs/runtime.md#shared-parameters)."""
    measured = held_out.memory_report()["measured"][0]
    by_role = measured["by_role"]
    parts = ", ".join(f"{name} {by_role[role] / MIB:.2f}" for role, name in
                      (("activation", "activations"),
                       ("comm_buffer", "gathered parameters"),
                       ("input", "inputs")))
    planned_total = held_out.memory_report()["planned"]["added_bytes"]
    train_peak = max(peak_mib(graph))
    return (f"chargpt: the held-out graph runs on the training graph's "
            f"parameters (not a copy) and adds {measured['total'] / MIB:.2f} "
            f"MiB/rank ({parts}; planned {planned_total / MIB:.2f}) to "
            f"training's {train_peak:.2f}; its own parameter bytes: "
            f"{by_role['param']}")


def peak_mib(graph):
    return [rank["total"] / MIB for rank in graph.memory_report()["measured"]]


def formulas(stage, psi, n):
    """docs/design.md#zero-stages-and-their-formulas for fp32 Adam (K = 8,
    the parameter is its own master): model-state bytes per rank and elements
    sent per rank."""
    k = 8
    states = {0: (4 + 4 + k) * psi, 1: 4 * psi + 4 * psi + k * psi / n,
              2: 4 * psi + (4 + k) * psi / n, 3: (4 + 4 + k) * psi / n}[stage]
    # Stage 3 re-uses the forward's gathered parameters in the backward at
    # the default stage3_max_reuse_distance, so it too sends 2 psi.
    sent = 2 * psi * 4 * (n - 1) / n
    return states, sent


def train(args, corpus, out):
    vocab = len(corpus.chars)
    model, graph = make_graph(args, vocab, args.stage)
    params = sum(p.numpy().size for p in model.parameters())
    tokens_per_step = args.batch * args.seq
    print(f"chargpt: {corpus.size} characters, vocabulary {vocab}; GPT-2 "
          f"{args.layers} layers, width {args.embed}, {args.heads} heads, "
          f"sequence {args.seq}: {params:,} parameters")
    print(f"chargpt: ZeRO stage {args.stage} on {args.ranks} in-process CPU "
          f"ranks, global batch {args.batch} x {args.seq} tokens, Adam "
          f"lr {args.lr:g}, {args.steps} steps")
    start = 0
    if args.resume:
        # Checked now; loaded right after the first call compiles the graph.
        info = graph.load_checkpoint(args.resume)
        if info["seed"] != args.seed:
            sys.exit(f"chargpt: --seed {args.seed} differs from the "
                     f"checkpoint's {info['seed']}: the resumed run would "
                     "not read the batches an uninterrupted run reads")
        start = info["step"]
        print(f"chargpt: resuming from {info['path']} at step {start} "
              f"(saved on {info['world']} ranks, stage {info['stage']})")
    total = start + args.steps
    checkpoints = args.checkpoint_dir or os.path.join(out, "checkpoints")
    rng = np.random.default_rng(args.seed)
    for _ in range(start):
        # The batches the checkpointed steps took, so that a resumed run
        # reads what an uninterrupted one would.
        corpus.batch(rng, corpus.train, args.batch, args.seq)
    held_out_rng = np.random.default_rng(args.seed + 1)
    # A multiple of the ranks, as every batch the ranks split.
    held_out_rows = max(args.ranks, 16 // args.ranks * args.ranks)
    held_out = corpus.batch(held_out_rng, corpus.held_out, held_out_rows,
                            args.seq)
    held_out_graph, predict = make_eval_graphs(model, vocab)
    begin = time.perf_counter()
    graph.compile(*corpus.batch(np.random.default_rng(0), corpus.train,
                                args.batch, args.seq))
    print(f"chargpt: compiled the training graph in "
          f"{time.perf_counter() - begin:.2f} s")
    before = float(held_out_graph(*held_out))
    evaluations = [(start, before)]
    print(f"chargpt: held-out loss {before:.4f} at step {start} (inference "
          f"graph; a uniform guess scores {np.log(vocab):.4f})")

    losses = []
    width = len(str(total))
    for step in range(start, total):
        tokens, labels = corpus.batch(rng, corpus.train, args.batch, args.seq)
        begin = time.perf_counter()
        loss = float(graph(tokens, labels))
        seconds = time.perf_counter() - begin
        losses.append(loss)
        done = step + 1
        peaks = " ".join(f"{m:.2f}" for m in peak_mib(graph))
        print(f"step {done:>{width}}/{total}  loss {loss:.4f}  "
              f"{tokens_per_step / seconds:7.0f} tokens/s  "
              f"{seconds * 1000:6.1f} ms  peak MiB/rank {peaks}",
              flush=True)
        if done % args.eval_every == 0 or done == total:
            begin = time.perf_counter()
            held = float(held_out_graph(*held_out))
            evaluations.append((done, held))
            print(f"chargpt: held-out loss {held:.4f} at step {done} "
                  f"({(time.perf_counter() - begin) * 1000:.0f} ms)",
                  flush=True)
            if len(evaluations) == 2:
                print(eval_memory_line(held_out_graph, graph))
        if done == total or (args.checkpoint_every and
                             done % args.checkpoint_every == 0):
            begin = time.perf_counter()
            path = graph.save_checkpoint(checkpoints, keep=args.keep,
                                         seed=args.seed)
            print(f"chargpt: checkpoint {path} saved in "
                  f"{(time.perf_counter() - begin) * 1000:.0f} ms",
                  flush=True)

    after = evaluations[-1][1]
    with open(os.path.join(out, "losses.csv"), "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["step", "loss"])
        writer.writerows((start + i + 1, f"{l:.6f}")
                         for i, l in enumerate(losses))
    graph.ir_dump(os.path.join(out, "ir"))
    graph.trace_step(*corpus.batch(rng, corpus.train, args.batch, args.seq),
                     path=os.path.join(out, "timeline.json"))
    with open(os.path.join(out, "timeline.json")) as file:
        trace = json.load(file)
    with open(os.path.join(out, "timeline.svg"), "w") as file:
        file.write(timeline_svg(trace, f"One step of ZeRO stage {args.stage} "
                                f"on {args.ranks} ranks: compute and "
                                "communication streams"))
    first = float(np.mean(losses[:10]))
    last = float(np.mean(losses[-10:]))
    print(f"chargpt: training loss {first:.3f} -> {last:.3f} (mean of the "
          f"first and last 10 steps); held-out loss {before:.3f} -> "
          f"{after:.3f}")
    print(f"chargpt: checkpoints in {checkpoints} (resume with --resume "
          f"{checkpoints} --steps N)")
    summary = {"first": first, "last": last, "held_out_before": before,
               "held_out_after": after, "held_out": evaluations,
               "first_step": start, "steps": total}
    return predict, params, summary


def compare_stages(args, corpus, params):
    """Each stage compiled and run for a few steps on the same batches."""
    vocab = len(corpus.chars)
    rows = []
    batches = [corpus.batch(np.random.default_rng(7), corpus.train,
                            args.batch, args.seq)
               for _ in range(args.compare_steps)]
    for stage in range(4):
        _, graph = make_graph(args, vocab, stage)
        rows.append(measure(graph, batches, args))
        rows[-1]["stage"] = stage
        states, sent_formula = formulas(stage, params, args.ranks)
        rows[-1]["model_state_formula_bytes"] = states
        rows[-1]["sent_formula_bytes"] = sent_formula
    return rows


def measure(graph, batches, args):
    """Losses, memory, traffic and mean step time (the first step left
    out) of `graph` trained on `batches`."""
    losses = [float(graph(*batch)) for batch in batches]
    records = graph.memory_report()["measured"]
    steps = graph.step_times()
    step_ms = float(np.mean([max(rank[s]["step_ms"] for rank in steps)
                             for s in range(1, len(batches))]))
    sent = graph.comm_report()["measured"]
    return {
        "model_state_bytes": max(r["model_states"] for r in records),
        "bucket_bytes": max(r["by_role"]["comm_buffer"] for r in records),
        "peak_bytes": max(r["total"] for r in records),
        "activation_bytes": max(r["by_role"]["activation"]
                                for r in records),
        "peak_bytes_by_role": records[0]["by_role"],
        "sent_bytes_per_step": max(sum(s.values()) for s in sent),
        "step_ms": step_ms,
        "tokens_per_s": args.batch * args.seq / step_ms * 1000,
        "losses": losses,
    }


def compare_fusion(args, corpus, fused):
    """The --stage run with attention unfused, against `fused` (its row of
    the stage comparison): step time, activation peak and losses."""
    batches = [corpus.batch(np.random.default_rng(7), corpus.train,
                            args.batch, args.seq)
               for _ in range(args.compare_steps)]
    _, graph = make_graph(args, len(corpus.chars), args.stage,
                          fuse_attention=False)
    unfused = measure(graph, batches, args)
    difference = max(abs(a - b) / abs(b) for a, b in
                     zip(fused["losses"], unfused["losses"]))
    print(f"\nAttention at stage {args.stage}, fused (nn.attention) and "
          "unfused (scores, softmax, values):")
    print("| attention | step ms | activations MiB/rank | peak MiB/rank |")
    print("|---|---|---|---|")
    for name, row in (("fused", fused), ("unfused", unfused)):
        print(f"| {name} | {row['step_ms']:.1f} | "
              f"{row['activation_bytes'] / MIB:.2f} | "
              f"{row['peak_bytes'] / MIB:.2f} |")
    print(f"Largest relative difference of their losses: {difference:.1e}")
    return {"fused": {k: fused[k] for k in unfused},
            "unfused": unfused, "max_rel_loss_diff": difference}


def print_stage_table(args, params, rows):
    print(f"\nZeRO stages side by side: {params:,} parameters (fp32 Adam), "
          f"{args.ranks} ranks, {args.compare_steps} steps each, the first "
          "left out of the times")
    head = ("| stage | model states MiB/rank | formula | buckets MiB/rank | "
            "peak MiB/rank | sent MiB/step/rank | formula | step ms | "
            "tokens/s | final loss |")
    print(head)
    print("|" + "---|" * 10)
    for row in rows:
        print(f"| {row['stage']} | {row['model_state_bytes'] / MIB:.3f} | "
              f"{row['model_state_formula_bytes'] / MIB:.3f} | "
              f"{row['bucket_bytes'] / MIB:.3f} | "
              f"{row['peak_bytes'] / MIB:.2f} | "
              f"{row['sent_bytes_per_step'] / MIB:.3f} | "
              f"{row['sent_formula_bytes'] / MIB:.3f} | "
              f"{row['step_ms']:.1f} | {row['tokens_per_s']:.0f} | "
              f"{row['losses'][-1]:.6f} |")
    same = all(row["losses"] == rows[0]["losses"] for row in rows)
    print("Model states: parameters, gradients and Adam's m and v held "
          "between uses; the formulas are 16Ψ, 8Ψ + 8Ψ/N, 4Ψ + 12Ψ/N and "
          "16Ψ/N bytes. Buckets: full gradients waiting for their "
          "reduction (at stage 1 the paper counts them as model states) and "
          "gathered parameters. Sent: 2Ψ(N-1)/N elements (the measured "
          "bytes add the loss's all-reduce). Losses of stages 0-3 are "
          + ("identical bit for bit." if same else "NOT identical."))


def main():
    args = parse_args()
    corpus = Corpus(args.corpus)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)

    try:
        predict, params, summary = train(args, corpus, out)
    except zs.Error as error:
        sys.exit(f"chargpt: {error}")
    rows, fusion = [], None
    if not args.resume:
        rows = compare_stages(args, corpus, params)
        print_stage_table(args, params, rows)
        fusion = compare_fusion(args, corpus, rows[args.stage])
        with open(os.path.join(out, "memory_by_role.svg"), "w") as file:
            file.write(memory_by_role_svg(
                [(f"stage {r['stage']}", r["peak_bytes_by_role"])
                 for r in rows],
                f"Peak memory of rank 0 by role, {params:,} parameters, "
                f"{args.ranks} ranks (measured)"))
    with open(os.path.join(out, "stages.json"), "w") as file:
        json.dump({"config": vars(args), "parameters": params,
                   "training": summary, "stages": rows,
                   "attention_fusion": fusion}, file, indent=1)

    rng = np.random.default_rng(args.seed)
    prompts = ("My son, ", "Wisdom ", "The fool ")
    rows = -(-len(prompts) // args.ranks) * args.ranks
    texts = sample(predict, [corpus.encode(p) for p in prompts], args.seq,
                   120, rng, rows)
    lines = [corpus.decode(ids).split("\n")[0] for ids in texts]
    with open(os.path.join(out, "samples.txt"), "w") as file:
        file.write("\n".join(lines) + "\n")
    print("\nSampled from the trained model (temperature 0.8):")
    for line in lines:
        print("  " + line)
    figures = "" if args.resume else "memory_by_role.svg, "
    print(f"\nchargpt: wrote {out}/: ir/ (the IR after each pass), "
          f"{figures}timeline.svg, timeline.json, losses.csv, stages.json, "
          "samples.txt")


if __name__ == "__main__":
    main()
