#!/usr/bin/python3
"""Tensor parallelism with ZeRO on the data axis: an MLP laid out
[dp, tp] on 4 and 8 in-process CPU ranks, ZeRO stages 0-3.

The MLP alternates Megatron's column- and row-parallel layers
(docs/design.md#tensor-parallelism): with the default sizes 256 -> 1024 ->
256 -> 1024 -> 16, fc0 and fc2 are column-parallel (weight (out, in) and
bias split on the output dim, `[B, S(0)]`) and followed by GELU, fc1 and
fc3 row-parallel (weight split on the input dim, `[B, S(1)]`, bias
replicated, `[B, B]`); a cross entropy over 16 classes ends it. Inputs are
split on the batch over the data axis (`[S(0), B]`). At tp = 1 the
placement is 1-D and every variable is `[B]`, the inputs `[S(0)]`: plain
data parallelism. The .mlir is written by mlp(dp, tp, sizes, batch).

Layouts: (dp, tp) = (8, 1), (4, 2), (2, 4), (1, 8) on 8 ranks and (4, 1),
(2, 2), (1, 4) on 4; stages 0-3 each, Adam, both in bf16 mixed precision
(the main table: bf16 parameters and gradients, fp32 masters, m and v) and
in fp32, `stage3-param-persistence-threshold=0` so that stage 3 partitions
every parameter. The data are generated here (each label the argmax of
a fixed random projection of its input, which the MLP can learn); the
initial values are each variable's seeded init, the same at every
layout.

Per row:
* model states per rank as planned (`zero-compile --report=json`'s
  `bytes_per_rank`, parameters, gradients, masters and Adam's m and v) and
  the formula of docs/design.md#zero-on-the-data-axis computed here from
  the shapes (each tensor padded as ZeRO pads it);
* the planned peak of the rank's arena (`plan.memory_plan`), which the
  run's high water must equal;
* bytes sent per rank in a step on the data axis (axis 0) and on the model
  axis (axis 1), measured (`comm_bytes.per_axis`, the rank average), with
  the data axis against 2 (dp - 1)/dp x (p Ψ_rank + 4), Ψ_rank the
  parameter elements a rank holds, padded (the gradients' reduction, the
  updated parameters' gather and the loss's 4-byte all-reduce);
* the step time, the median of the steps after the first of the fastest
  quiet run of --repeats, and how many cores other work kept busy then;
* the final loss, and the largest relative difference of the losses from
  those of (W, 1) at the same stage and precision, which must stay within
  FP32_RTOL in fp32 and BF16_RTOL in bf16 (what reductions in another
  order can move).

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/tensor_parallel -- \\
      --csv=$PWD/bench/results/tensor_parallel.csv \\
      --json=$PWD/bench/results/tensor_parallel.json
  tensor_parallel_bench.py ZERO_COMPILE ZERO_RUN [--csv FILE] [--json FILE]
      [--worlds 8,4] [--precisions bf16,fp32] [--stages 0,1,2,3]
      [--sizes 256,1024,256,1024,16] [--batch 64] [--steps 8] [--repeats 3]
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
import bench_report  # noqa: E402

FP32_RTOL = 1e-6
# bf16 rounds to 8 bits (2^-8 relative): a reduction in another order may
# round a logit the other way.
BF16_RTOL = 4e-3
# Bytes of a parameter (and gradient) element, K bytes of Adam state.
PRECISIONS = {
    "bf16": {"p": 2, "k": 12, "rtol": BF16_RTOL},
    "fp32": {"p": 4, "k": 8, "rtol": FP32_RTOL},
}
LAYOUTS = {
    8: [(8, 1), (4, 2), (2, 4), (1, 8)],
    4: [(4, 1), (2, 2), (1, 4)],
}
LOSS_BYTES = 4

COLUMNS = [
    ("precision", "precision"),
    ("ranks", "ranks"),
    ("dp", "dp"),
    ("tp", "tp"),
    ("stage", "stage"),
    ("states_bytes", "model states B/rank (planned)"),
    ("states_formula_bytes", "formula B/rank"),
    ("states_check", "states vs formula"),
    ("peak_bytes", "peak arena B/rank"),
    ("data_axis_bytes", "data axis B/step/rank"),
    ("data_axis_check", "data axis vs formula"),
    ("model_axis_bytes", "model axis B/step/rank"),
    ("step_ms", "step ms"),
    ("other_cores", "other cores"),
    ("final_loss", "final loss"),
    ("loss_check", "losses vs (W, 1)"),
]
EXTRA_CSV = [
    ("psi", ""), ("psi_rank", ""), ("states_by_role", ""),
    ("states_measured", ""), ("peak_measured", ""), ("data_axis_formula", ""),
    ("comm_bytes_by_axis_planned", ""), ("loss_max_rel_diff", ""),
    ("step_ms_all", ""), ("losses", ""), ("pipeline", ""),
]


def layers(sizes):
    """(name, in, out, column) per linear layer: even layers are
    column-parallel, odd ones row-parallel."""
    return [("fc%d" % i, sizes[i], sizes[i + 1], i % 2 == 0)
            for i in range(len(sizes) - 1)]


def mlp(dp, tp, sizes, batch):
    """The MLP's .mlir on [dp, tp] (a 1-D placement of dp ranks at
    tp = 1)."""
    ranks = ", ".join(str(r) for r in range(dp * tp))
    if tp == 1:
        grid = "#g = #sbp.placement<cpu, [%s]>" % ranks
        x, col, row, rep = "[S(0)]", "[B]", "[B]", "[B]"
    else:
        grid = "#g = #sbp.placement<cpu, [%s], hierarchy = [%d, %d]>" % (
            ranks, dp, tp)
        x, col, row, rep = "[S(0), B]", "[B, S(0)]", "[B, S(1)]", "[B, B]"

    def t(shape, sbp, role):
        return "tensor<%s, #sbp.global<%s, #g, %s>>" % (shape, sbp, role)

    x_type = t("%dx%dxf32" % (batch, sizes[0]), x, "input")
    y_type = t("%dxi64" % batch, x, "input")
    lines = [grid, "func.func @mlp() -> tensor<f32> {",
             '  %%x = nn.input "x" : %s' % x_type,
             '  %%y = nn.input "y" : %s' % y_type]
    value, value_type = "%x", x_type
    stack = layers(sizes)
    for i, (name, fan_in, fan_out, column) in enumerate(stack):
        weight = t("%dx%dxf32" % (fan_out, fan_in), col if column else row,
                   "param")
        bias = t("%dxf32" % fan_out, col if column else rep, "param")
        out = "tensor<%dx%dxf32>" % (batch, fan_out)
        # PyTorch's nn.Linear init bound, 1/sqrt(fan_in).
        bound = fan_in ** -0.5
        lines += [
            '  %%w%d = nn.variable "%s.weight" param init = uniform(%g) : %s'
            % (i, name, bound, weight),
            '  %%b%d = nn.variable "%s.bias" param init = uniform(%g) : %s'
            % (i, name, bound, bias),
            "  %%h%d = nn.matmul %s, %%w%d {transpose_rhs} : (%s, %s) -> %s"
            % (i, value, i, value_type, weight, out),
            "  %%hb%d = nn.bias_add %%h%d, %%b%d : (%s, %s) -> %s"
            % (i, i, i, out, bias, out)]
        value, value_type = "%%hb%d" % i, out
        if column and i != len(stack) - 1:
            lines.append("  %%a%d = nn.gelu %s : (%s) -> %s" % (
                i, value, out, out))
            value = "%%a%d" % i
    lines += ["  %%l = nn.cross_entropy %s, %%y : (%s, %s) -> tensor<f32>"
              % (value, value_type, y_type),
              "  return %l : tensor<f32>", "}", ""]
    return "\n".join(lines)


def parameters(sizes):
    """(elements, split on the model axis) per parameter."""
    params = []
    for _, fan_in, fan_out, column in layers(sizes):
        params.append((fan_in * fan_out, True))
        # A row-parallel layer's bias is replicated.
        params.append((fan_out, column))
    return params


def padded(count, ranks):
    return -(-count // ranks) * ranks


def rank_elements(sizes, dp, tp):
    """Ψ_rank: the parameter elements one rank holds (a split one's model
    part), each padded to a multiple of the ranks ZeRO splits it over."""
    return sum(padded(n // tp, dp) if split else padded(n, dp * tp)
               for n, split in parameters(sizes))


def shard_elements(sizes, dp, tp):
    """Ψ/(tp dp) with padding: elements of every ZeRO shard on one rank."""
    return sum(padded(n // tp, dp) // dp if split
               else padded(n, dp * tp) // (dp * tp)
               for n, split in parameters(sizes))


def unpadded_rank_elements(sizes, tp):
    return sum(n // tp if split else n for n, split in parameters(sizes))


def states_formula(precision, stage, sizes, dp, tp):
    """Model-state bytes per rank by role (docs/design.md#zero-on-the-data-
    axis), each tensor with its padding: (2p + K)Ψ_rank, 2pΨ_rank +
    KΨ/(tp dp), pΨ_rank + (p + K)Ψ/(tp dp) and (2p + K)Ψ/(tp dp) at stages
    0-3. In fp32 the parameter is its own master (K = 8, m and v)."""
    p, k = precision["p"], precision["k"]
    whole = unpadded_rank_elements(sizes, tp)
    shard = shard_elements(sizes, dp, tp)
    master = 4 if p != 4 else 0
    return {
        "param": p * (shard if stage >= 3 else whole),
        "grad": p * (shard if stage >= 2 else whole),
        "master": master * (shard if stage >= 1 else whole),
        "opt_state": (k - master) * (shard if stage >= 1 else whole),
    }


def data_axis_formula(precision, sizes, dp, tp):
    """Bytes a rank sends on the data axis per step: each gradient part
    all-reduced (or reduce-scattered, and the new parameters gathered) over
    dp ranks, and the loss's all-reduce."""
    return 2.0 * (dp - 1) / dp * (
        precision["p"] * rank_elements(sizes, dp, tp) + LOSS_BYTES)


def write_data(path, sizes, batch, steps):
    """x uniform in [-1, 1), y the argmax of a fixed random projection of
    x: a task the MLP can learn, so the loss falls."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (steps, batch, sizes[0])).astype(np.float32)
    projection = rng.standard_normal((sizes[0], sizes[-1]))
    y = np.argmax(x @ projection, axis=-1).astype(np.int64)
    os.makedirs(path, exist_ok=True)
    np.save(os.path.join(path, "x.npy"), x)
    np.save(os.path.join(path, "y.npy"), y)


def compile_plan(args, work, name, precision_name, world, dp, tp, stage):
    """Compiles one plan: (plan path, compile report, pipeline), or None
    and the error line when zero-compile fails."""
    source = os.path.join(work, "mlp_%d_%d.mlir" % (dp, tp))
    with open(source, "w") as f:
        f.write(mlp(dp, tp, args.sizes, args.batch))
    plan = os.path.join(work, name + ".zplan")
    pipeline = ("optimizer=adam precision=%s "
                "stage3-param-persistence-threshold=0" % precision_name)
    command = [args.zero_compile, source, "--world=%d" % world,
               "--stage=%d" % stage, "--pipeline=" + pipeline, "-o", plan,
               "--report=json"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return None, shlex.join(command), last_line(done)
    return (plan, json.loads(done.stdout), pipeline), None, None


def last_line(done):
    lines = (done.stderr or done.stdout).strip().splitlines()
    return "exit %d: %s" % (done.returncode, lines[-1] if lines else
                            "no output")


def train(args, plan, world, report_path, data):
    """One zero-run, timed as bench_report.run_report times it: its report
    with `other_cores`, or None, the command and its error line (a failure
    is reported, and the other configurations still run)."""
    command = [args.zero_run, plan, "--ranks", str(world), "--steps",
               str(args.steps), "--data", data, "--quiet", "--report-file",
               report_path]
    done, other = bench_report.timed(
        lambda: subprocess.run(command, capture_output=True, text=True))
    if done.returncode != 0:
        return None, shlex.join(command), last_line(done)
    report = bench_report.load_json(report_path)
    report["other_cores"] = other
    return report, None, None


def whole(value):
    """A rank average as an int where it is one (it is a fraction when
    ranks send different bytes)."""
    return int(value) if value == int(value) else round(value, 1)


def describe_difference(value, formula):
    difference = value - formula
    if abs(difference) < 1e-6:
        return "exact"
    return "%+d B" % round(difference)


def describe_roles(planned, formula):
    """"exact", or the roles that differ from the formula and by how much
    (below stage 2 the greedy propagation may hold a split weight's whole
    gradient, docs/design.md#tensor-parallelism)."""
    differences = ["%s %+d B" % (role, planned.get(role, 0) - value)
                   for role, value in sorted(formula.items())
                   if planned.get(role, 0) != value]
    differences += ["%s %+d B" % (role, value)
                    for role, value in sorted(planned.items())
                    if role not in formula and value]
    return "; ".join(differences) or "exact"


def max_rel(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def row_of(config, compiled, report, precision, sizes):
    precision_name, world, dp, tp, stage = config
    states_by_role = compiled["bytes_per_rank"]
    states = compiled["model_state_bytes_per_rank"]
    formula_by_role = states_formula(precision, stage, sizes, dp, tp)
    formula = sum(formula_by_role.values())
    per_axis = report["comm_bytes"]["per_axis"]
    axes = len(per_axis[0])
    # per_axis is each rank's last step; the plan counts the rank average.
    mean = [sum(rank[a] for rank in per_axis) / len(per_axis)
            for a in range(axes)]
    # A 1-D placement (tp = 1) has the data axis alone.
    data_axis, model_axis = mean[0], (mean[1] if axes > 1 else 0.0)
    data_formula = data_axis_formula(precision, sizes, dp, tp)
    timed = report["step_ms"][1:] or report["step_ms"]
    return {
        "precision": precision_name,
        "ranks": world,
        "dp": dp,
        "tp": tp,
        "stage": stage,
        "psi": sum(n for n, _ in parameters(sizes)),
        "psi_rank": rank_elements(sizes, dp, tp),
        "states_bytes": states,
        "states_by_role": states_by_role,
        "states_measured": max(r["model_states"]
                               for r in report["peak_bytes"]),
        "states_formula_bytes": formula,
        "states_check": describe_roles(states_by_role, formula_by_role),
        "peak_bytes": compiled["plan"]["memory_plan"]["peak_bytes_per_rank"],
        "peak_measured": max(r["high_water"] for r in report["peak_bytes"]),
        "data_axis_bytes": whole(data_axis),
        "data_axis_formula": whole(data_formula),
        "data_axis_check": describe_difference(data_axis, data_formula),
        "model_axis_bytes": whole(model_axis),
        "comm_bytes_by_axis_planned":
            compiled["plan"]["overlap"]["comm_bytes_by_axis"],
        "comm_bytes_by_axis_measured": mean,
        "step_ms": round(statistics.median(timed), 2),
        "step_ms_all": [round(ms, 3) for ms in report["step_ms"]],
        "other_cores": round(report["other_cores"], 2),
        "final_loss": round(report["losses"][-1], 6),
        "losses": report["losses"],
    }


def source_state():
    """The checkout's commit, and whether the tools were built with
    uncommitted changes outside bench/ (a shared checkout may have them)."""
    workspace = os.environ.get("BUILD_WORKSPACE_DIRECTORY", ".")
    try:
        head = subprocess.run(["git", "-C", workspace, "rev-parse", "--short",
                               "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        changes = subprocess.run(
            ["git", "-C", workspace, "status", "--porcelain",
             "--untracked-files=no", "--", ".", ":!bench"],
            capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "uncommitted_changes": None}
    return {"commit": head, "uncommitted_changes": bool(changes)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--csv", help="write the table as CSV here")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--worlds", default="8,4",
                        help="rank counts, of 8 and 4")
    parser.add_argument("--precisions", default="bf16,fp32",
                        help="of bf16 and fp32")
    parser.add_argument("--stages", default="0,1,2,3")
    parser.add_argument("--sizes", default="256,1024,256,1024,16",
                        help="layer widths, input to classes")
    parser.add_argument("--batch", type=int, default=64,
                        help="global batch")
    parser.add_argument("--steps", type=int, default=8,
                        help="steps per run; the first is left out of the "
                        "step time")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per configuration, taken in turns")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    worlds = [int(w) for w in args.worlds.split(",")]
    precisions = args.precisions.split(",")
    stages = [int(s) for s in args.stages.split(",")]
    if args.steps < 2:
        bench_report.fail("--steps must be at least 2, got %d" % args.steps)
    if any(w not in LAYOUTS for w in worlds):
        bench_report.fail("--worlds takes 8 and 4, got %s" % args.worlds)
    if any(p not in PRECISIONS for p in precisions):
        bench_report.fail("--precisions takes bf16 and fp32, got %s" %
                          args.precisions)
    if len(args.sizes) < 3 or len(args.sizes) % 2 == 0:
        # Column and row layers pair up: an even number of layers.
        bench_report.fail("--sizes needs an odd count of widths (pairs of "
                          "layers), at least 3")
    for tool in [args.zero_compile, args.zero_run]:
        if not os.access(tool, os.X_OK):
            bench_report.fail("not an executable: %s" % tool)

    info, date, source = (bench_report.machine(), bench_report.now(),
                          source_state())
    work = tempfile.mkdtemp(prefix="tensor_parallel_bench_")
    data = os.path.join(work, "data")
    write_data(data, args.sizes, args.batch, args.steps)

    # The first failure of each configuration, by configuration.
    configs, compiled, failures = [], {}, {}
    for precision_name in precisions:
        for world in worlds:
            for dp, tp in LAYOUTS[world]:
                for stage in stages:
                    config = (precision_name, world, dp, tp, stage)
                    name = "%s_w%d_dp%d_tp%d_s%d" % config
                    result, command, error = compile_plan(
                        args, work, name, precision_name, world, dp, tp,
                        stage)
                    if result is None:
                        failures[config] = {
                            "tool": "zero-compile", "command": command,
                            "error": error}
                        print("FAILED %s: %s\n  %s" % (name, error, command),
                              flush=True)
                        continue
                    configs.append(config)
                    compiled[config] = result

    def run_one(config, attempt):
        plan = compiled[config][0]
        report_path = "%s.run%d.json" % (plan[:-len(".zplan")], attempt)
        report, command, error = train(args, plan, config[1], report_path,
                                       data)
        if report is None:
            failures.setdefault(config, {"tool": "zero-run",
                                         "command": command, "error": error})
            print("FAILED %s: %s\n  %s" % ("_".join(map(str, config)),
                                            error, command), flush=True)
            # Ranks last among the runs so that best_runs keeps a good one.
            return {"mean_step_ms": float("inf"), "other_cores": 1e9,
                    "failed": True}
        return report

    best = bench_report.best_runs(configs, run_one, args.repeats, retries=1)

    rows = []
    for config in configs:
        report = best[config]
        if report.get("failed"):
            continue
        row = row_of(config, compiled[config][1], report,
                     PRECISIONS[config[0]], args.sizes)
        row["pipeline"] = compiled[config][2]
        rows.append(row)
        if row["peak_measured"] != row["peak_bytes"]:
            print("note: %s: the run's high water %d, the plan's peak %d" % (
                config, row["peak_measured"], row["peak_bytes"]))

    # Losses against the data-parallel (W, 1) run at the same stage.
    base = {(r["precision"], r["ranks"], r["stage"]): r["losses"]
            for r in rows if r["tp"] == 1}
    for row in rows:
        reference = base.get((row["precision"], row["ranks"], row["stage"]))
        tolerance = PRECISIONS[row["precision"]]["rtol"]
        if reference is None:
            row["loss_max_rel_diff"], row["loss_check"] = None, "no (W, 1) run"
            continue
        diff = max_rel(row["losses"], reference)
        row["loss_max_rel_diff"] = diff
        row["loss_check"] = "%s (%.1e)" % (
            "ok" if diff <= tolerance else "DIFFERS", diff)

    print()
    bench_report.print_table(COLUMNS, rows)
    psi = sum(n for n, _ in parameters(args.sizes))
    print("\nMLP %s, batch %d, %d classes, Ψ = %s parameters; Adam, "
          "stage3-param-persistence-threshold=0; %d steps a run (step time: "
          "median of the steps after the first), best of %d runs; losses "
          "within %g relative of (W, 1) in bf16, %g in fp32. %s; %s." % (
              " -> ".join(str(s) for s in args.sizes), args.batch,
              args.sizes[-1], "{:,}".format(psi), args.steps, args.repeats,
              BF16_RTOL, FP32_RTOL, bench_report.describe(info), date))
    print("Commit %s%s." % (source["commit"], " with uncommitted changes "
                            "outside bench/" if source["uncommitted_changes"]
                            else ""))
    for config, failure in failures.items():
        print("FAILED %s (%s): %s\n  %s" % (
            "_".join(map(str, config)), failure["tool"], failure["error"],
            failure["command"]))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS + EXTRA_CSV, rows)
    if args.json:
        bench_report.write_json(args.json, "tensor_parallel", {
            "sizes": args.sizes, "batch": args.batch, "steps": args.steps,
            "repeats": args.repeats, "worlds": worlds,
            "precisions": precisions, "stages": stages,
            "fp32_rtol": FP32_RTOL, "bf16_rtol": BF16_RTOL,
            "backend": "inprocess", "source": source,
            "failures": [dict(f, config=list(config))
                         for config, f in failures.items()]},
            info, date, rows)
    if failures or any(r["loss_check"].startswith("DIFFERS") for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
