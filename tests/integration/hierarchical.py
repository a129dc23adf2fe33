#!/usr/bin/python3
"""MiCS (mics_shard_size m) and ZeRO++'s hpZ (zero_hpz_partition_size h)
against flat ZeRO on the same GPT-2, and their bytes per hierarchy axis
against the formulas of docs/design.md#hierarchical-zero.

For N ranks laid out as [n, m] (n = N/m groups of m ranks; a group is a
node), at stages 1-3 (fp32 Adam, both thresholds 0):

* the losses equal flat ZeRO's over N ranks to reduction-order noise;
* averaged over the ranks and leaving out the loss's all-reduce, each step
  sends within a group (axis 1)  8 Ψm (m-1)/m  bytes: the gradients'
  reduce-scatter and the parameters' all-gather, both over the group; and
  across groups (axis 0)  8 (Ψm/m) (n-1)/n  bytes: the all-reduce of each
  rank's gradient shard. Ψm counts every tensor padded to a multiple of m.
  Flat ZeRO sends 8 Ψp (N-1)/N over its one axis;
* model states per rank at stage 3 are 16 Ψm/m bytes, against flat's
  16 Ψp/N: MiCS keeps m-way shards, replicated n times.

hpZ at stage 3 with every backward gather kept (reuse distance 0) on
[n, h]: the losses equal flat ZeRO's, and each step sends across groups
(axis 0) 8 Ψp (n-1)/n bytes (the forward's gathers and the gradients'
reduce-scatters over all ranks) and within a group (axis 1)
8 Ψp (h-1)/N + 4 Ψp_bwd (h-1)/h, the backward gathering from its
secondary copy within the group. Ψp is padded to a multiple of N and
Ψp_bwd counts the parameters the backward reads (all but the biases and
wpe); flat ZeRO sends (2 Ψp + Ψp_bwd) 4 (N-1)/N.

Under MPI with a hostfile (`zero-run --backend mpi --hostfile`), a MiCS
plan on 2 x 2 gives the in-process losses bit for bit on a host of 4
slots, and a hostfile whose hosts would split a group is refused before
mpirun starts.

It also checks that DeepSpeed's `mics_shard_size` and
`zero_hpz_partition_size` compile the plans the pipeline keys do, that -1
(DeepSpeed's default) is flat ZeRO, and the refusals. Prints a table of the
bytes.

Usage: hierarchical.py ZERO_COMPILE ZERO_RUN
"""

import json
import os
import subprocess
import sys

import checks
from checks import check

GPT2 = ["--num-layers=2", "--hidden-size=32", "--num-attention-heads=4",
        "--seq-length=16", "--vocab-size=64", "--batch-size=16"]
BASE = "stage3-param-persistence-threshold=0 shard-min-size=0"
STEPS = 3


def numel(shape):
    count = 1
    for dim in shape:
        count *= dim
    return count


def loss_bytes(group):
    """The loss's 0-D all-reduce over a group, averaged over its ranks:
    rank 0 of the group sends 4 (g-1) bytes, the others 4."""
    return 8 * (group - 1) / group if group > 1 else 0


def main():
    zero_compile, zero_run = sys.argv[1], sys.argv[2]
    work = os.environ.get("TEST_TMPDIR", "/tmp/hierarchical")
    os.makedirs(work, exist_ok=True)
    def compile_plan(name, world, pipeline, extra=()):
        plan = os.path.join(work, name + ".zplan")
        flags = ["--pipeline=" + pipeline] if pipeline else []
        done = subprocess.run(
            [zero_compile] + GPT2 + ["--world=%d" % world, "--report=json",
                                     "-o", plan] + flags + list(extra),
            capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit("zero-compile %s failed: %s" % (name, done.stderr))
        with open(plan + ".report.json", "w") as f:
            f.write(done.stdout)
        return plan

    def planned_axes(plan):
        """The compile report's bytes per axis, averaged over the ranks."""
        with open(plan + ".report.json") as f:
            return json.load(f)["plan"]["overlap"]["comm_bytes_by_axis"]

    def check_planned(tag, plan, run):
        measured = run["comm_bytes"]["per_axis"]
        planned = planned_axes(plan)
        for axis, bytes_ in enumerate(planned):
            average = sum(rank[axis] for rank in measured) / len(measured)
            check(abs(average - bytes_) < 1e-6,
                  "%s: axis %d sends %.1f bytes per rank, compile report "
                  "%.1f" % (tag, axis, average, bytes_))

    def train(plan):
        report = plan + ".run.json"
        subprocess.run([zero_run, plan, "--steps", str(STEPS), "--quiet",
                        "--report-file", report], check=True)
        with open(report) as f:
            return json.load(f)

    def axis_bytes(run, world, groups):
        """Bytes sent per rank on each axis of a placement whose axes have
        `groups` ranks, averaged over the ranks, without the loss's
        all-reduce."""
        axes = run["comm_bytes"]["per_axis"]
        return [sum(a[axis] for a in axes) / world - loss_bytes(size)
                for axis, size in enumerate(groups)]

    def check_bytes(tag, what, measured, formula):
        check(abs(measured - formula) < 1e-6,
              "%s: %.1f bytes %s, formula %.1f" % (tag, measured, what,
                                                    formula))

    def padded_states(plan):
        with open(plan) as f:
            variables = json.load(f)["variables"]
        return sum(numel(v["global_shape"]) for v in variables
                   if v["name"].endswith(".exp_avg"))

    print("%-10s %-5s %10s %12s %12s %12s %12s %12s" % (
        "N = n x m", "stage", "Ψm", "intra", "formula", "inter", "formula",
        "flat"))
    for world, group in [(4, 2), (8, 4), (8, 2)]:
        nodes = world // group
        for stage in [1, 2, 3]:
            tag = "N=%d m=%d stage %d" % (world, group, stage)
            pipeline = "stage=%d %s" % (stage, BASE)
            flat_plan = compile_plan("flat_n%d_s%d" % (world, stage), world,
                                     pipeline)
            mics_plan = compile_plan(
                "mics_n%d_m%d_s%d" % (world, group, stage), world,
                pipeline + " mics-shard-size=%d" % group)
            flat, mics = train(flat_plan), train(mics_plan)
            check_planned(tag, mics_plan, mics)
            with open(mics_plan) as f:
                placement = json.load(f)["placement"]
            check(placement.get("hierarchy") == [nodes, group],
                  "%s: placement %s, expected hierarchy [%d, %d]" % (
                      tag, placement, nodes, group))

            for a, b in zip(flat["losses"], mics["losses"]):
                check(abs(a - b) <= 1e-5 * abs(a),
                      "%s: losses %s, flat %s" % (tag, mics["losses"],
                                                  flat["losses"]))

            psi_m = padded_states(mics_plan)
            psi_p = padded_states(flat_plan)
            axes = mics["comm_bytes"]["per_axis"]
            check(all(len(a) == 2 for a in axes),
                  "%s: bytes per axis %s, expected two axes" % (tag, axes))
            inter, intra = axis_bytes(mics, world, [nodes, group])
            intra_formula = 8 * psi_m * (group - 1) / group
            inter_formula = 8 * (psi_m / group) * (nodes - 1) / nodes
            check_bytes(tag, "within a group", intra, intra_formula)
            check_bytes(tag, "across groups", inter, inter_formula)
            flat_sent, = axis_bytes(flat, world, [world])
            check_bytes(tag, "sent by flat ZeRO", flat_sent,
                        8 * psi_p * (world - 1) / world)
            # Per kind the per-axis bytes add up to what was counted.
            for rank_axes, rank_kinds in zip(axes,
                                             mics["comm_bytes"]["per_rank"]):
                check(sum(rank_axes) == sum(rank_kinds.values()),
                      "%s: per axis %s, per kind %s" % (tag, rank_axes,
                                                        rank_kinds))
            if stage == 3:
                for peak in mics["peak_bytes"]:
                    states = sum(peak["by_role"][role] for role in
                                 ["param", "grad", "master", "opt_state"])
                    check(states == 16 * psi_m // group,
                          "%s rank %d: model states %d, formula 16Ψm/m = %d"
                          % (tag, peak["rank"], states, 16 * psi_m // group))
            print("%-10s %-5d %10d %12.1f %12.1f %12.1f %12.1f %12.1f" % (
                "%d = %dx%d" % (world, nodes, group), stage, psi_m, intra,
                intra_formula, inter, inter_formula, flat_sent))

    print("\nhpZ, stage 3, reuse distance 0")
    print("%-10s %10s %12s %12s %12s %12s %12s" % (
        "N = n x h", "Ψp", "intra", "formula", "inter", "formula", "flat"))
    for world, group in [(4, 2), (8, 4), (8, 2)]:
        nodes = world // group
        tag = "hpZ N=%d h=%d" % (world, group)
        pipeline = "stage=3 %s stage3-max-reuse-distance=0" % BASE
        flat_plan = compile_plan("flat_n%d_reuse0" % world, world, pipeline)
        hpz_plan = compile_plan("hpz_n%d_h%d" % (world, group), world,
                                pipeline + " hpz-partition-size=%d" % group)
        flat, hpz = train(flat_plan), train(hpz_plan)
        check_planned(tag, hpz_plan, hpz)
        for a, b in zip(flat["losses"], hpz["losses"]):
            check(abs(a - b) <= 1e-5 * abs(a),
                  "%s: losses %s, flat %s" % (tag, hpz["losses"],
                                              flat["losses"]))
        with open(hpz_plan) as f:
            variables = json.load(f)["variables"]
        psi_p = padded_states(hpz_plan)
        unread = sum(numel(v["global_shape"]) for v in variables
                     if v["name"].endswith(".bias.exp_avg") or
                     v["name"] == "wpe.weight.exp_avg")
        psi_bwd = psi_p - unread
        inter, intra = axis_bytes(hpz, world, [nodes, group])
        inter_formula = 8 * psi_p * (nodes - 1) / nodes
        intra_formula = (8 * psi_p * (group - 1) / world +
                         4 * psi_bwd * (group - 1) / group)
        flat_sent, = axis_bytes(flat, world, [world])
        flat_formula = (2 * psi_p + psi_bwd) * 4 * (world - 1) / world
        check_bytes(tag, "within a group", intra, intra_formula)
        check_bytes(tag, "across groups", inter, inter_formula)
        check_bytes(tag, "sent by flat ZeRO", flat_sent, flat_formula)
        print("%-10s %10d %12.1f %12.1f %12.1f %12.1f %12.1f" % (
            "%d = %dx%d" % (world, nodes, group), psi_p, intra,
            intra_formula, inter, inter_formula, flat_sent))

    # Many machines: ranks fill the hostfile's slots in order.
    mics_plan = os.path.join(work, "mics_n4_m2_s2.zplan")
    hostfile = os.path.join(work, "hosts")
    with open(hostfile, "w") as f:
        f.write("# one machine, 4 slots\nlocalhost slots=4\n")
    report = os.path.join(work, "mpi.json")
    done = subprocess.run(
        [zero_run, mics_plan, "--ranks", "4", "--backend", "mpi",
         "--hostfile", hostfile, "--steps", str(STEPS), "--quiet",
         "--report-file", report], capture_output=True, text=True,
        timeout=300)
    check(done.returncode == 0, "MPI with a hostfile: " + done.stderr)
    if done.returncode == 0:
        with open(report) as f:
            mpi = json.load(f)
        with open(mics_plan + ".run.json") as f:
            threads = json.load(f)
        check(mpi["losses"] == threads["losses"],
              "MPI with a hostfile: losses %s, in process %s" % (
                  mpi["losses"], threads["losses"]))
    with open(hostfile, "w") as f:
        f.write("localhost slots=1\nnode1 slots=3\n")
    done = subprocess.run(
        [zero_run, mics_plan, "--ranks", "4", "--backend", "mpi",
         "--hostfile", hostfile, "--steps", "1"],
        capture_output=True, text=True, timeout=60)
    expected = ("zero-run: %s: ranks 0-1, one group of the plan's inner axis "
                "(2 ranks), span hosts localhost and node1; give every host "
                "a multiple of 2 slots" % hostfile)
    check(done.returncode == 1 and
          done.stderr.strip().splitlines()[0] == expected,
          "a hostfile that splits a group: %r" % done.stderr)

    # DeepSpeed's keys reach the same plans; -1, mics_shard_size's default,
    # is flat.
    config = os.path.join(work, "ds.json")
    for size, same_as in [(2, "mics_n4_m2_s3"), (-1, "flat_n4_s3")]:
        with open(config, "w") as f:
            json.dump({"train_batch_size": 16, "zero_optimization": {
                "stage": 3, "mics_shard_size": size,
                "stage3_param_persistence_threshold": 0}}, f)
        # A DeepSpeed config has no shard_min_size: everything is split.
        plan = compile_plan("ds_%d" % size, 4, None, ["--config=" + config])
        with open(plan) as a, open(os.path.join(work, same_as + ".zplan")) \
                as b:
            mine, theirs = json.load(a), json.load(b)
        for key in ("placement", "variables", "instructions"):
            check(mine[key] == theirs[key],
                  "mics_shard_size=%d: the plan's %s differ from %s's" % (
                      size, key, same_as))

    with open(config, "w") as f:
        json.dump({"train_batch_size": 16, "zero_optimization": {
            "stage": 3, "zero_hpz_partition_size": 2,
            "stage3_param_persistence_threshold": 0,
            "stage3_max_reuse_distance": 0}}, f)
    plan = compile_plan("ds_hpz", 4, None, ["--config=" + config])
    with open(plan) as a, open(os.path.join(work, "hpz_n4_h2.zplan")) as b:
        mine, theirs = json.load(a), json.load(b)
    for key in ("placement", "variables", "instructions"):
        check(mine[key] == theirs[key],
              "zero_hpz_partition_size=2: the plan's %s differ" % key)

    for pipeline, message in [
            ("stage=2 hpz-partition-size=2",
             "hpz-partition-size: needs ZeRO stage 3"),
            ("stage=3 hpz-partition-size=3",
             "hpz-partition-size: expected a divisor of the world size 4, "
             "got 3"),
            ("stage=3 hpz-partition-size=2 mics-shard-size=2",
             "hpz-partition-size: and mics_shard_size exclude each other"),
            ("stage=3 mics-shard-size=3",
             "mics-shard-size: expected a divisor of the world size 4, got 3"),
            ("stage=0 mics-shard-size=2",
             "mics-shard-size: needs ZeRO stage 1, 2 or 3")]:
        done = subprocess.run(
            [zero_compile] + GPT2 + ["--world=4", "--pipeline=" + pipeline,
                                     "-o", os.path.join(work, "bad.zplan")],
            capture_output=True, text=True)
        check(done.returncode == 1 and message in done.stderr and
              len(done.stderr.strip().splitlines()) == 1,
              "%s: expected one line with %r, got %r" % (
                  pipeline, message, done.stderr))

    if not checks.failures:
        print("MiCS and hpZ equal flat ZeRO and the formulas at N = 4 and 8")
    checks.finish()


if __name__ == "__main__":
    main()
