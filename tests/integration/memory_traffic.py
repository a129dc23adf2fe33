#!/usr/bin/python3
"""Measured memory and traffic against the compiler's report and the
ZeRO paper's formulas (docs/design.md#zero-stages-and-their-formulas), for
GPT-2 (2 layers, hidden 32, fp32 Adam, K = 8) with both thresholds 0, at
stages 0-3.

For every rank, the runtime's measured peak bytes by role must equal the
plan's; its model-state bytes (param + grad + master + opt_state peaks)
must equal the compiler's `planned_bytes`, and, at stages 2 and 3, the
formula: 4Ψ + (4 + 8)Ψ/N and (4 + 4 + 8)Ψ/N. Bytes sent per step, averaged
over ranks, must equal the compiler's planned traffic per collective kind,
and, leaving out the loss's all-reduce, 2Ψ·4·(N-1)/N at stages 0-2 and
(2Ψ + Ψb)·4·(N-1)/N at stage 3 when every parameter is gathered again for
the backward pass (stage3_max_reuse_distance 0). Ψb is the parameters the
backward pass reads: all but the biases (a bias's gradient is a sum of the
output gradient; layer norm's gradient reads gamma, not beta) and the
position embedding (its gradient is a copy of the output gradient), so the
paper's 3Ψ is an upper bound the compiler beats by Ψ - Ψb. With the default
reuse distance the forward's gathered copy serves the backward and stage 3
moves 2Ψ·4·(N-1)/N.

Partitioned tensors are padded so that their shards are equal (a tensor of
10 elements on 3 ranks is 12): sharded terms use the padded count Ψp, full
copies the model's Ψ; with N dividing every tensor the two are equal.

Usage: memory_traffic.py ZERO_COMPILE ZERO_RUN
"""

import json
import os
import subprocess
import sys

GPT2 = ["--num-layers=2", "--hidden-size=32", "--num-attention-heads=4",
        "--seq-length=16", "--vocab-size=64", "--batch-size=12"]
# The loss's 0-D all-reduce over N ranks: (count - own chunk) + (N-1) own
# chunk elements, 4 bytes each; rank 0 owns the single element.
def loss_bytes(rank, world):
    if world == 1:
        return 0
    return 4 * (world - 1) if rank == 0 else 4


def main():
    zero_compile, zero_run = sys.argv[1], sys.argv[2]
    work = os.environ.get("TEST_TMPDIR", "/tmp/memory_traffic")
    os.makedirs(work, exist_ok=True)
    failures = []

    def check(condition, message):
        if not condition:
            failures.append(message)
            print("FAIL: " + message)

    print("%-6s %-8s %7s %7s %14s %14s %14s %14s %14s" % (
        "ranks", "stage", "Ψ", "Ψp", "model states", "formula", "sent/step",
        "formula", "peak total"))
    cases = [(0, None), (1, None), (2, None), (3, 0), (3, None)]
    for world in [2, 3, 4]:
        for stage, reuse in cases:
            plan = os.path.join(work, "n%d_s%d_r%s.zplan" % (world, stage,
                                                            reuse))
            pipeline = "stage3-param-persistence-threshold=0"
            if reuse is not None:
                pipeline += " stage3-max-reuse-distance=%d" % reuse
            compiled = subprocess.run(
                [zero_compile] + GPT2 + [
                    "--world=%d" % world, "--stage=%d" % stage,
                    "--pipeline=" + pipeline, "--report=json", "-o", plan],
                capture_output=True, text=True, check=True)
            compiler = json.loads(compiled.stdout)
            with open(plan) as f:
                variables = json.load(f)["variables"]
            report_path = plan + ".run.json"
            subprocess.run([zero_run, plan, "--ranks", str(world), "--steps",
                            "2", "--quiet", "--report-file", report_path],
                           check=True)
            with open(report_path) as f:
                run = json.load(f)
            def numel(shape):
                count = 1
                for dim in shape:
                    count *= dim
                return count
            params = [v for v in variables if v["role"] == "param"]
            psi = sum(numel(v.get("logical_shape", v["global_shape"]))
                      for v in params)
            # Padded: the flat partitions of the Adam states, one per param.
            padded = sum(numel(v["global_shape"]) for v in variables
                         if v["name"].endswith(".exp_avg"))
            if stage == 0:
                padded = psi
            unread = sum(numel(v.get("logical_shape", v["global_shape"]))
                         for v in params if v["name"].endswith(".bias") or
                         v["name"] == "wpe.weight")
            unread_padded = sum(
                numel(v["global_shape"]) for v in variables
                if v["name"].endswith(".bias.exp_avg") or
                v["name"] == "wpe.weight.exp_avg")
            tag = "N=%d stage %d%s" % (world, stage, "" if reuse is None
                                       else " reuse %d" % reuse)
            planned = run["planned_bytes"]
            # Stage 0 also counts the loss (4 bytes), which its gradient
            # bucket reduces.
            model_state_formula = {0: 16 * psi + 4, 1: None,
                                   2: 4 * psi + 12 * padded // world,
                                   3: 16 * padded // world}[stage]
            planned_states = compiler["plan"]["model_states_vs_formula"][
                "planned_bytes"]
            for peak in run["peak_bytes"]:
                rank = peak["rank"]
                check(peak["by_role"] == planned["by_role"],
                      "%s rank %d: measured peaks by role %s, planned %s" % (
                          tag, rank, peak["by_role"], planned["by_role"]))
                states = sum(peak["by_role"][role] for role in
                             ["param", "grad", "master", "opt_state"])
                check(states == planned_states,
                      "%s rank %d: model states %d, compiler %d" % (
                          tag, rank, states, planned_states))
                if model_state_formula is not None:
                    check(states == model_state_formula,
                          "%s rank %d: model states %d, formula %d" % (
                              tag, rank, states, model_state_formula))
                check(peak["high_water"] <= planned["arena"],
                      "%s rank %d: %d bytes used, arena %d" % (
                          tag, rank, peak["high_water"], planned["arena"]))
            sent_by_rank = run["comm_bytes"]["per_rank"]
            for kind, bucket in compiler["plan"]["buckets"]["by_kind"].items():
                factor = 2 if kind == "all_reduce" else 1
                expected = factor * 4 * sum(bucket["elements"]) * (
                    world - 1) / world
                measured = sum(r[kind] for r in sent_by_rank) / world
                check(abs(measured - expected) < 1,
                      "%s: %s sends %.1f bytes per rank, compiler %s" % (
                          tag, kind, measured, expected))
            measured_total = sum(sum(r.values()) for r in sent_by_rank) / world
            check(abs(measured_total - compiler["plan"]["overlap"]
                      ["comm_bytes"]) < 1,
                  "%s: %.1f bytes sent per rank, compiler %s" % (
                      tag, measured_total,
                      compiler["plan"]["overlap"]["comm_bytes"]))
            moved = 2 * padded
            if stage == 3 and reuse == 0:
                moved += padded - unread_padded
            traffic_formula = moved * 4 * (world - 1) // world
            for rank, sent in enumerate(sent_by_rank):
                total = sum(sent.values()) - loss_bytes(rank, world)
                check(total == traffic_formula,
                      "%s rank %d: sends %d bytes without the loss, formula "
                      "%d" % (tag, rank, total, traffic_formula))
            print("%-6d %-8s %7d %7d %14d %14s %14d %14d %14d" % (
                world, str(stage) + ("" if reuse is None else " r0"), psi,
                padded,
                planned_states,
                model_state_formula if model_state_formula else "-",
                sum(sent_by_rank[0].values()), traffic_formula,
                run["peak_bytes"][0]["total"]))
    if failures:
        print("%d checks failed" % len(failures))
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
