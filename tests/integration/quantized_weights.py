#!/usr/bin/python3
"""ZeRO++'s qwZ through zero-compile and zero-run
(docs/design.md#quantized-weight-gathers), on GPT-2 (2 layers, hidden 32)
at stage 3 on 4 ranks:

* zero_optimization.zero_quantized_weights in a DeepSpeed config and the
  zero-quantized-weights pair give the same plan;
* where every rank's part of every parameter is a whole number of blocks,
  the gathers move 1 byte per element plus 4 per block: (1 + 4 / block) / 4
  of the fp32 gathers' bytes, and (1 + 4 / block) / 2 of the bf16 ones',
  planned and measured;
* with blocks that leave parts short, each part is padded to a block;
* the gathers of codes and of scales bucket as the unquantized gathers do:
  two buckets (one per element type) for each unquantized one;
* the losses move off the unquantized ones (the weights are rounded) but
  stay within 1e-3 of them, relative, over 5 steps (a measured bound, not a
  derived one);
* with every parameter below the persistence threshold (kept whole, so
  never gathered for compute), qwZ quantizes nothing: the losses equal the
  unquantized ones bit for bit, the parameters updated on their shards
  stay exact;
* qwZ below stage 3, and with hpZ, is refused in one line.

Usage: quantized_weights.py ZERO_COMPILE ZERO_RUN
"""

import json
import os
import sys

from checks import GPT2, check, finish, max_rel, run, train_report, \
    write_gpt2_data

STEPS = 5
BASE = "stage3-param-persistence-threshold=0"


def main():
    zero_compile, zero_run = sys.argv[1:3]
    work = os.environ.get("TEST_TMPDIR", "/tmp/quantized_weights")
    os.makedirs(work, exist_ok=True)
    data = write_gpt2_data(work, STEPS)

    def compile_plan(name, *flags):
        plan = os.path.join(work, name + ".zplan")
        result = run([zero_compile, *GPT2, "--world=4", *flags, "-o", plan,
                      "--report=json"])
        report = json.loads(result.stdout) if result.returncode == 0 else None
        return plan, report, result

    def gathered(report):
        return report["comm_bytes_per_step"]["all_gather"]

    def gather_buckets(*flags):
        ir = os.path.join(work, "buckets.mlir")
        result = run([zero_compile, *GPT2, "--world=4", *flags,
                      "--emit-ir=" + ir, "--report=none", "-o",
                      os.path.join(work, "buckets.zplan")])
        if result.returncode != 0:
            return -1
        with open(ir) as f:
            return f.read().count("sbp.collective_start all_gather")

    plain_buckets = gather_buckets("--stage=3", "--pipeline=" + BASE)
    quantized_buckets = gather_buckets(
        "--stage=3", "--pipeline=%s zero-quantized-weights=true" % BASE)
    check(plain_buckets > 0 and quantized_buckets == 2 * plain_buckets,
          "qwZ's gathers bucket as the unquantized ones: %d buckets, 2 x %d"
          % (quantized_buckets, plain_buckets))

    for precision, width in (("fp32", 4), ("bf16", 2)):
        pairs = "%s precision=%s" % (BASE, precision)
        plain, plain_report, result = compile_plan(
            "plain_" + precision, "--stage=3", "--pipeline=" + pairs)
        check(plain_report is not None,
              "%s: compiles without qwZ (%s)" % (precision, result.stderr))
        if plain_report is None:
            continue
        plain_run, error = train_report(zero_run, plain, work, data, STEPS)
        check(plain_run is not None, "%s: trains without qwZ (%s)" % (
            precision, error))
        # The parts of the model's parameters on 4 ranks are multiples of
        # 8 elements.
        for block in (8, 32):
            quantized, report, result = compile_plan(
                "qwz_%s_%d" % (precision, block), "--stage=3",
                "--pipeline=%s zero-quantized-weights=true "
                "zero-quantized-weights-block-size=%d" % (pairs, block))
            check(report is not None, "%s, block %d: compiles with qwZ (%s)"
                  % (precision, block, result.stderr))
            if report is None:
                continue
            expected = gathered(plain_report) * (1 + 4 / block) / width
            whole = block == 8
            if whole:
                check(gathered(report) == expected,
                      "%s, block %d: planned gather bytes %d = %d, (1 + 4 / "
                      "%d) / %d of %d" % (precision, block, gathered(report),
                                          expected, block, width,
                                          gathered(plain_report)))
            else:
                check(gathered(report) > expected,
                      "%s, block %d: short parts padded to a block: %d > %d"
                      % (precision, block, gathered(report), expected))
            trained, error = train_report(zero_run, quantized, work, data,
                                          STEPS)
            check(trained is not None, "%s, block %d: trains with qwZ (%s)"
                  % (precision, block, error))
            if trained is None or plain_run is None:
                continue
            measured = [step["all_gather"]
                        for step in trained["comm_bytes"]["per_rank"]]
            check(measured == [gathered(report)] * 4,
                  "%s, block %d: measured gather bytes per rank %s = planned"
                  " %d" % (precision, block, measured, gathered(report)))
            losses, reference = trained["losses"], plain_run["losses"]
            worst = max_rel(losses, reference)
            check(losses != reference and worst <= 1e-3,
                  "%s, block %d: losses differ from the unquantized ones by "
                  "%.2e relative at most (<= 1e-3, and not 0)" % (
                      precision, block, worst))

    # DeepSpeed's persistence threshold (1e5) keeps every parameter of the
    # model whole: their updated shards are gathered, and stay exact.
    kept, kept_report, _ = compile_plan("kept", "--stage=3")
    kept_qwz, kept_qwz_report, result = compile_plan(
        "kept_qwz", "--stage=3", "--pipeline=zero-quantized-weights=true")
    kept_run, _ = train_report(zero_run, kept, work, data, STEPS)
    kept_qwz_run, error = train_report(zero_run, kept_qwz, work, data, STEPS)
    check(kept_run is not None and kept_qwz_run is not None and
          kept_qwz_run["losses"] == kept_run["losses"] and
          gathered(kept_qwz_report) == gathered(kept_report),
          "parameters kept whole: qwZ quantizes nothing, the losses are "
          "equal bit for bit (%s)" % (error or result.stderr.strip()))

    # The DeepSpeed key compiles to the same plan as the pair.
    config = os.path.join(work, "qwz.json")
    with open(config, "w") as f:
        json.dump({"zero_optimization": {
            "stage": 3, "stage3_param_persistence_threshold": 0,
            "zero_quantized_weights": True}}, f)
    from_json, _, result = compile_plan("qwz_json", "--config=" + config)
    from_pairs, _, _ = compile_plan(
        "qwz_pairs", "--stage=3",
        "--pipeline=%s zero-quantized-weights=true" % BASE)
    same = result.returncode == 0 and open(from_json, "rb").read() == \
        open(from_pairs, "rb").read()
    check(same, "zero_optimization.zero_quantized_weights gives the plan "
                "the pair gives (%s)" % result.stderr.strip())

    for what, flags, message in [
            ("below stage 3", ["--stage=2", "--pipeline=zero-quantized-"
                               "weights=true"],
             "zero-quantized-weights: needs ZeRO stage 3"),
            ("with hpZ", ["--stage=3", "--pipeline=zero-quantized-weights="
                          "true hpz-partition-size=2"],
             "zero-quantized-weights: with mics_shard_size or "
             "zero_hpz_partition_size is not built"),
            ("a block size without qwZ", ["--stage=3", "--pipeline=zero-"
                                          "quantized-weights-block-size=64"],
             "zero-quantized-weights-block-size: only used with "
             "zero-quantized-weights=true")]:
        _, _, result = compile_plan("refused", *flags)
        lines = result.stderr.strip().splitlines()
        check(result.returncode == 1 and len(lines) == 1 and
              message in lines[0],
              "refuses qwZ %s in one line (%s)" % (what, result.stderr.strip()))
    finish()


if __name__ == "__main__":
    main()
