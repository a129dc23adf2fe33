#!/usr/bin/python3
"""ZeRO-Offload and ZeRO-Infinity through zero-compile and zero-run
(docs/design.md#offload, docs/runtime.md#offload), on GPT-2 (2 layers,
hidden 32) with Adam:

* losses are identical bit for bit with and without offload (cpu, nvme) at
  stages 1-3, fp32 and bf16 (fp32 masters), for N = 1, 2, 3;
* every arena's measured peaks by role equal the plan's, on every rank;
* the device arena holds no optimizer state (nor masters) once offloaded,
  and the NVMe arena holds exactly what the device held: 8 bytes per shard
  element for Adam's two moments, 12 with masters;
* the bytes moved per step equal the formula of docs/design.md#offload;
* nothing is left under the NVMe directory after the run, whether it ends
  or is killed (SIGKILL);
* the process's resident memory changes by the planned arena bytes
  (GPT-2 with hidden 256, one rank): up by the host arena with cpu, down
  by the device's optimizer state less the host staging with nvme;
* a save and a resume with the states in NVMe continue the run exactly;
* the report's host_update counts the updates' bytes (28 per shard
  element for fp32 Adam) and parameters;
* with overlap_comm the updates run on the host during the backward
  (at N = 1, where no reduction holds a gradient back, the first update
  comes before the last backward matmul), with the same losses;
* the copies of the new parameters back to the device are waited for by
  the next step's forward, with the same losses and saved parameters as a
  run that waits for them within the step;
* offload_param at stage 3 (host memory, NVMe, with the optimizer states on
  the same NVMe) keeps the losses and takes the parameter shards off the
  device arena.

Usage: offload.py ZERO_COMPILE ZERO_RUN
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

from checks import GPT2, check, finish

MIB = 1024.0 * 1024.0
MODES = {
    "none": "",
    "cpu": " offload-optimizer=cpu",
    # zero-schedule runs each update on the host as soon as its gradient
    # shard is there, during the backward.
    "cpu overlapped": " offload-optimizer=cpu overlap-comm=true",
    "nvme": " offload-optimizer=nvme offload-optimizer-nvme-path={nvme}",
}


def compile_plan(zero_compile, path, model, world, pipeline):
    subprocess.run([zero_compile, *model, "--world=%d" % world,
                    "--pipeline=" + pipeline, "--report=none", "-o", path],
                   check=True)
    with open(path) as f:
        return json.load(f)


def run(zero_run, plan, world, steps, report, *extra):
    done = subprocess.run([zero_run, plan, "--ranks", str(world), "--steps",
                           str(steps), "--quiet", "--report-file", report,
                           *extra], capture_output=True, text=True)
    check(done.returncode == 0, "%s: zero-run failed: %s" % (
        plan, done.stderr.strip()[-300:]))
    with open(report) as f:
        return json.load(f)


def shard_elements(plan):
    return sum(eval("*".join(str(d) for d in v["local_shape"]) or "1")
               for v in plan["variables"] if v["name"].endswith(".exp_avg"))


def moved_formula(mode, masters, shard):
    """docs/design.md#offload: without masters the fp32 gradient and
    parameter shards go to the host and the new parameter back; with bf16
    masters the bf16 gradient goes and the bf16 parameter comes back; the
    step (8 bytes) goes once."""
    if mode == "none":
        return {}
    if masters:
        to_host, to_device = 2 * shard, 2 * shard
    else:
        to_host, to_device = 8 * shard, 4 * shard
    formula = {"device_to_host": to_host + 8, "host_to_device": to_device,
               "nvme_read": 0, "nvme_write": 0}
    if mode == "nvme":
        per = (12 if masters else 8) * shard
        formula["nvme_read"] = formula["nvme_write"] = per
    return formula


def equivalence(zero_compile, zero_run, work, nvme):
    for precision in ["fp32", "bf16"]:
        masters = precision == "bf16"
        for world in [1, 2, 3]:
            for stage in [1, 2, 3]:
                losses = {}
                states = {}
                for mode, options in MODES.items():
                    tag = "%s N=%d stage %d %s" % (precision, world, stage,
                                                   mode)
                    pipeline = ("stage=%d shard-min-size=0 "
                                "stage3-param-persistence-threshold=0 "
                                "precision=%s" % (stage, precision) +
                                options.format(nvme=nvme))
                    path = os.path.join(work, "p.zplan")
                    plan = compile_plan(zero_compile, path, GPT2, world,
                                        pipeline)
                    report = run(zero_run, path, world, 3,
                                 os.path.join(work, "r.json"))
                    losses[mode] = report["losses"]
                    planned = report["planned_bytes"]
                    for rank, peaks in enumerate(report["peak_bytes"]):
                        check(peaks["by_role"] == planned["by_role"],
                              "%s: rank %d device peaks %s != planned %s" % (
                                  tag, rank, peaks["by_role"],
                                  planned["by_role"]))
                        for arena in ("host", "nvme"):
                            if arena in planned:
                                check(peaks.get(arena) == {
                                    "total": planned[arena]["total"],
                                    "by_role": planned[arena]["by_role"]},
                                    "%s: rank %d %s peaks %s != planned %s" % (
                                        tag, rank, arena, peaks.get(arena),
                                        planned[arena]))
                    device = report["peak_bytes"][0]["by_role"]
                    states[mode] = device["opt_state"] + device["master"]
                    if mode != "none":
                        check(states[mode] == 0, "%s: %d bytes of optimizer "
                              "state left on the device" % (tag, states[mode]))
                        shard = shard_elements(plan)
                        check(report.get("transfer_bytes_per_step") ==
                              moved_formula(mode, masters, shard),
                              "%s: moved %s, formula %s" % (
                                  tag, report.get("transfer_bytes_per_step"),
                                  moved_formula(mode, masters, shard)))
                    if mode != "none" and not masters:
                        # fp32 Adam reads parameter, gradient, both moments
                        # and the step, and writes three of them back: 28
                        # bytes per shard element and 8 per update.
                        update = report.get("host_update", {})
                        shard = shard_elements(plan)
                        check(update.get("params") == shard and
                              update.get("bytes") ==
                              28 * shard + 8 * update.get("kernels", 0),
                              "%s: host_update %s, shard %d" % (
                                  tag, update, shard))
                        # On the CPU the rank's thread runs the updates:
                        # the step waits for all of them.
                        check(update.get("overlap") == 0 and
                              update.get("exposed_ms") == update.get("ms"),
                              "%s: host_update overlap %s on the CPU" % (
                                  tag, update.get("overlap")))
                    if mode == "cpu overlapped" and world == 1:
                        ops = [(i.get("op"), i.get("memory"))
                               for i in plan["instructions"]]
                        first_update = ops.index(
                            next(op for op in ops if op[1] == "host"))
                        last_matmul = max(i for i, op in enumerate(ops)
                                          if op[0] and "matmul" in op[0])
                        check(first_update < last_matmul,
                              "%s: the first update on the host (%d) is not "
                              "before the last matmul (%d)" % (
                                  tag, first_update, last_matmul))
                    if mode == "nvme":
                        nvme_states = report["planned_bytes"]["nvme"][
                            "by_role"]
                        check(nvme_states["opt_state"] +
                              nvme_states["master"] == states["none"],
                              "%s: the NVMe arena holds %s, the device held "
                              "%d" % (tag, nvme_states, states["none"]))
                        check(os.listdir(nvme) == [],
                              "%s: left %s in the NVMe directory" % (
                                  tag, os.listdir(nvme)))
                for mode in ("cpu", "cpu overlapped", "nvme"):
                    check(losses[mode] == losses["none"],
                          "%s N=%d stage %d: %s losses %s != %s" % (
                              precision, world, stage, mode, losses[mode],
                              losses["none"]))
                print("%s N=%d stage %d: losses %s" % (
                    precision, world, stage, losses["none"]), flush=True)


def compute_ops(trace_path):
    """The compute stream's events of rank 0's traced step, in order."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    compute = [e["tid"] for e in events if e.get("ph") == "M" and
               e["name"] == "thread_name" and e["args"]["name"] == "compute"]
    timed = [e for e in events if e.get("ph") == "X" and e.get("pid") == 0
             and e.get("tid") in compute]
    return [e["name"] for e in sorted(timed, key=lambda e: e["ts"])]


def deferred_waits(zero_compile, zero_run, work):
    """The copies of the new parameters back to the device are waited for
    by the next step's forward (runtime.md#deferred-transfer-waits): the
    losses and saved parameters equal those of a run that waits within the
    step, and the traced step waits as often, but more in its forward and
    never at its end."""
    for precision in ["fp32", "bf16"]:
        tag = "%s deferred waits" % precision
        path = os.path.join(work, "deferred.zplan")
        compile_plan(zero_compile, path, GPT2, 1,
                     "stage=2 precision=%s offload-optimizer=cpu "
                     "overlap-comm=true" % precision)
        losses, saved, ops = {}, {}, {}
        for defer in ["on", "off"]:
            out = os.path.join(work, "saved-" + defer)
            shutil.rmtree(out, ignore_errors=True)
            trace = os.path.join(work, "trace-%s.json" % defer)
            report = run(zero_run, path, 1, 3, os.path.join(work, "r.json"),
                         "--defer-transfer-waits", defer, "--trace", trace,
                         "--save", out)
            losses[defer] = report["losses"]
            saved[defer] = {}
            for name in sorted(os.listdir(out)):
                with open(os.path.join(out, name), "rb") as f:
                    saved[defer][name] = f.read()
            ops[defer] = compute_ops(trace)
        check(losses["on"] == losses["off"], "%s: losses %s != %s" % (
            tag, losses["on"], losses["off"]))
        check(saved["on"] == saved["off"] and saved["on"],
              "%s: the saved parameters differ" % tag)
        waits = {d: ops[d].count("transfer_wait") for d in ops}
        check(waits["on"] == waits["off"] and waits["on"] > 0,
              "%s: %s transfer waits deferred, %s not" % (
                  tag, waits["on"], waits["off"]))
        # The forward: up to the first gradient op.
        forward = {d: ops[d][:next(i for i, op in enumerate(ops[d])
                                   if "grad" in op)] for d in ops}
        moved = {d: forward[d].count("transfer_wait") for d in ops}
        check(moved["on"] > moved["off"] and ops["on"][-1] != "transfer_wait",
              "%s: the forward waits %d times (%d without deferral), and "
              "the step ends with %s" % (tag, moved["on"], moved["off"],
                                         ops["on"][-3:]))
        check(ops["off"][-1] == "transfer_wait",
              "%s: without deferral the step ends with %s" % (
                  tag, ops["off"][-3:]))
        print("%s: %d waits, losses %s" % (tag, waits["on"], losses["on"]),
              flush=True)


def parameter_offload(zero_compile, zero_run, work, nvme):
    """offload_param at stage 3 (alone, and with offload_optimizer on the
    same NVMe directory): identical losses, the parameter shards off the
    device arena, every arena's peaks as planned."""
    base = "stage=3 shard-min-size=0 stage3-param-persistence-threshold=0"
    for precision in ["fp32", "bf16"]:
        for world in [2, 3]:
            losses, device_params = {}, {}
            for mode, options in [
                    ("none", ""),
                    ("param cpu", " offload-param=cpu"),
                    ("param nvme", " offload-param=nvme "
                     "offload-param-nvme-path=" + nvme),
                    ("both nvme", " offload-param=nvme offload-optimizer=nvme"
                     " offload-param-nvme-path=%s offload-optimizer-nvme-path"
                     "=%s" % (nvme, nvme))]:
                tag = "%s N=%d %s" % (precision, world, mode)
                path = os.path.join(work, "param.zplan")
                compile_plan(zero_compile, path, GPT2, world,
                             base + " precision=" + precision + options)
                report = run(zero_run, path, world, 3,
                             os.path.join(work, "r.json"))
                losses[mode] = report["losses"]
                planned = report["planned_bytes"]
                device_params[mode] = planned["by_role"]["param"]
                for rank, peaks in enumerate(report["peak_bytes"]):
                    check(peaks["by_role"] == planned["by_role"],
                          "%s: rank %d device peaks as planned" % (tag, rank))
                    for arena in ("host", "nvme"):
                        if arena in planned:
                            check(peaks.get(arena) == {
                                "total": planned[arena]["total"],
                                "by_role": planned[arena]["by_role"]},
                                "%s: rank %d %s peaks as planned" % (
                                    tag, rank, arena))
                check(os.listdir(nvme) == [], "%s: nothing left in the NVMe "
                      "directory" % tag)
                check(losses[mode] == losses["none"],
                      "%s: losses %s == %s" % (tag, losses[mode],
                                               losses["none"]))
            for mode in ("param cpu", "param nvme", "both nvme"):
                check(device_params[mode] < device_params["none"],
                      "%s N=%d %s: device parameter peak %d < %d" % (
                          precision, world, mode, device_params[mode],
                          device_params["none"]))


def resident_memory(zero_compile, zero_run, work, nvme):
    model = ["--num-layers=2", "--hidden-size=256",
             "--num-attention-heads=4", "--seq-length=64", "--vocab-size=512",
             "--batch-size=2"]
    rss, arenas = {}, {}
    for mode, options in MODES.items():
        path = os.path.join(work, "rss_%s.zplan" % mode)
        plan = compile_plan(zero_compile, path, model, 1,
                            "stage=2 shard-min-size=0" +
                            options.format(nvme=nvme))
        report = run(zero_run, path, 1, 2, os.path.join(work, "r.json"))
        rss[mode] = report["process"]["rss_bytes"]
        arenas[mode] = sum(a["bytes"] for a in plan["arenas"]
                           if a["memory"] != "nvme")
    for mode in ("cpu", "nvme"):
        planned = arenas["none"] - arenas[mode]
        measured = rss["none"] - rss[mode]
        print("RSS %s: %+.2f MiB measured, %+.2f MiB planned" % (
            mode, -measured / MIB, -planned / MIB))
        check(abs(measured - planned) < 2 * MIB,
              "RSS %s: fell by %d bytes, the arenas by %d" % (
                  mode, measured, planned))


def killed_run_leaves_nothing(zero_compile, zero_run, work, nvme):
    path = os.path.join(work, "kill.zplan")
    compile_plan(zero_compile, path, GPT2, 2,
                 "stage=2 offload-optimizer=nvme offload-optimizer-nvme-path="
                 + nvme)
    job = subprocess.Popen([zero_run, path, "--ranks", "2", "--steps",
                            "100000", "--quiet"],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    job.send_signal(signal.SIGKILL)
    job.wait()
    check(os.listdir(nvme) == [], "SIGKILL left %s in the NVMe directory" %
          os.listdir(nvme))


def resume(zero_compile, zero_run, work, nvme):
    path = os.path.join(work, "resume.zplan")
    compile_plan(zero_compile, path, GPT2, 2,
                 "stage=3 offload-optimizer=nvme offload-optimizer-nvme-path="
                 + nvme)
    whole = run(zero_run, path, 2, 4, os.path.join(work, "r.json"))
    saved = os.path.join(work, "ckpt")
    shutil.rmtree(saved, ignore_errors=True)
    run(zero_run, path, 2, 2, os.path.join(work, "r.json"),
        "--checkpoint-dir", saved)
    steps = sorted(os.listdir(saved))
    check(len(steps) >= 1, "no checkpoint in %s" % saved)
    if steps:
        resumed = run(zero_run, path, 2, 2, os.path.join(work, "r.json"),
                      "--resume", os.path.join(saved, steps[-1]))
        check(resumed["losses"] == whole["losses"][2:],
              "resumed losses %s != %s" % (resumed["losses"],
                                           whole["losses"][2:]))


def missing_nvme_directory(zero_compile, zero_run, work):
    """A plan whose NVMe directory does not exist stops with one line."""
    path = os.path.join(work, "missing.zplan")
    missing = os.path.join(work, "no-such-directory")
    compile_plan(zero_compile, path, GPT2, 2,
                 "stage=2 offload-optimizer=nvme offload-optimizer-nvme-path="
                 + missing)
    done = subprocess.run([zero_run, path, "--ranks", "2", "--steps", "1",
                           "--quiet"], capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    check(done.returncode == 1 and lines == [
        "zero-run: rank 0: cannot create the nvme arena in '%s': No such "
        "file or directory" % missing] or (done.returncode == 1 and lines == [
            "zero-run: rank 1: cannot create the nvme arena in '%s': No such "
            "file or directory" % missing]),
          "a missing NVMe directory: exit %d, %s" % (done.returncode, lines))


def main():
    zero_compile, zero_run = sys.argv[1], sys.argv[2]
    work = os.environ.get("TEST_TMPDIR", "/tmp/offload_test")
    os.makedirs(work, exist_ok=True)
    nvme = os.path.join(work, "nvme")
    os.makedirs(nvme, exist_ok=True)
    equivalence(zero_compile, zero_run, work, nvme)
    deferred_waits(zero_compile, zero_run, work)
    parameter_offload(zero_compile, zero_run, work, nvme)
    resident_memory(zero_compile, zero_run, work, nvme)
    killed_run_leaves_nothing(zero_compile, zero_run, work, nvme)
    resume(zero_compile, zero_run, work, nvme)
    missing_nvme_directory(zero_compile, zero_run, work)
    finish()


if __name__ == "__main__":
    main()
