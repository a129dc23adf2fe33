#!/usr/bin/python3
"""zero-sim against this machine: predicted and measured step times.

machine_probe measures one core (matmul FLOP/s by size and thread count,
element-wise FLOP/s, memory and cache bandwidth: a zero-sim device file)
and, for each backend and N, the latency and per-rank bandwidth of the
runtime's collectives (a zero-sim topology: one node of N ranks). The
GPT-2 of bench/common/bench_model.py is compiled at stages 0-3 for N = 1,
2 and 4 as bench/scaling compiles it, trained by zero-run (both backends,
max(1, cores / N) BLAS threads per rank; `--steps` steps, the first left
out, the fastest of `--repeats` runs) and simulated by zero-sim from the
plan alone. Columns: measured and predicted step time, their difference
(predicted / measured - 1), and the compute and exposed communication of
each (measured: the report's phases; predicted: zero-sim's).

A second table predicts the GPU runs of bench/results/gpu.json (GPT-2
small on one H200, measured by bench/gpu) with zero-sim's h200 preset.

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/sim:validate -- \
      --csv=$PWD/bench/results/sim_validation.csv \
      --json=$PWD/bench/results/sim_validation.json
  sim_validate.py ZERO_COMPILE ZERO_RUN ZERO_SIM MACHINE_PROBE MPIRUN_FLAGS
      [--csv FILE] [--json FILE] [--steps 5] [--repeats 2] [--ranks 1,2,4]
      [--backends inprocess,mpi] [--gpu-results bench/results/gpu.json]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
import bench_model  # noqa: E402
import bench_report  # noqa: E402

PIPELINE = ("shard-min-size=0 stage3-param-persistence-threshold=0 "
            "overlap-comm=true")
STAGES = [0, 1, 2, 3]
GOAL = 0.15

GPU_COLUMNS = [
    ("precision", "precision"),
    ("batch", "batch"),
    ("measured_ms", "measured step ms (H200)"),
    ("predicted_ms", "predicted step ms (h200 preset)"),
    ("error", "difference"),
    ("predicted_matmul_ms", "predicted matmul ms"),
    ("measured_matmul_ms", "measured matmul ms"),
]

COLUMNS = [
    ("backend", "backend"),
    ("ranks", "N"),
    ("stage", "stage"),
    ("measured_ms", "measured step ms"),
    ("predicted_ms", "predicted step ms"),
    ("error", "difference"),
    ("measured_compute_ms", "measured compute ms"),
    ("predicted_compute_ms", "predicted compute ms"),
    ("measured_exposed_ms", "measured comm exposed ms"),
    ("predicted_exposed_ms", "predicted comm exposed ms"),
    ("other_cores", "other work, cores"),
]


def probe(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        bench_report.fail("machine_probe failed: %s" % (
            lines[-1] if lines else "exit %d" % done.returncode))
    return json.loads(done.stdout)


def comm_probe(args, backend, world):
    if backend == "inprocess":
        return probe([args.machine_probe, "comm", "--backend", backend,
                      "--ranks", str(world)])
    return probe(["bash", "-c", 'source "$0" && zerosbp_mpirun -n "$1" "$2" '
                  'comm --backend mpi --ranks "$1"', args.mpirun_flags,
                  str(world), args.machine_probe])


def topology(world, link):
    if world == 1:
        return "nodes=1,ranks_per_node=1"
    return "nodes=1,ranks_per_node=%d,intra=%dB/s,latency=%.3fus" % (
        world, int(link["bandwidth"]), link["latency_s"] * 1e6)


def gpu_rows(args, work):
    """zero-sim's h200 prediction of each ZeroSBP run in the GPU results."""
    path = args.gpu_results
    if not os.path.isabs(path):
        path = os.path.join(os.environ.get("BUILD_WORKSPACE_DIRECTORY", "."),
                            path)
    if not os.path.exists(path):
        print("no GPU results at %s: GPU table left out" % path)
        return []
    results = bench_report.load_json(path)
    m = results["model"]
    ops = {}
    ops_path = os.path.join(os.path.dirname(path), "gpu_ops.csv")
    if os.path.exists(ops_path):
        with open(ops_path) as f:
            header = f.readline().strip().split(",")
            for line in f:
                cells = dict(zip(header, line.strip().split(",")))
                ops[cells["op"]] = cells
    rows = []
    for result in results["rows"]:
        if result["system"] != "ZeroSBP" or result.get("error"):
            continue
        precision = result["precision"]
        plan = os.path.join(work, "gpu_%s.zplan" % precision)
        bench_report.run([
            args.zero_compile, "--num-layers=%d" % m["layers"],
            "--hidden-size=%d" % m["hidden"],
            "--num-attention-heads=%d" % m["heads"],
            "--seq-length=%d" % m["seq"], "--vocab-size=%d" % m["vocab"],
            "--batch-size=%d" % results["batch"], "--world=1", "--stage=0",
            "--pipeline=precision=%s" % precision, "--report=none", "-o",
            plan])
        predicted = json.loads(bench_report.run(
            [args.zero_sim, plan, "--topology", "nodes=1,ranks_per_node=1",
             "--device", "h200", "--report", "json"]))
        measured = result["ms_per_step"]
        error = predicted["step_ms"] / measured - 1
        matmul = ops.get("nn.matmul", {}).get("%s_ms" % precision)
        rows.append({
            "precision": precision,
            "batch": results["batch"],
            "measured_ms": round(measured, 1),
            "predicted_ms": round(predicted["step_ms"], 1),
            "error": "%+.1f%%" % (100 * error),
            "error_fraction": round(error, 4),
            "predicted_matmul_ms": round(
                predicted["ops"]["nn.matmul"]["ms"], 1),
            "measured_matmul_ms": float(matmul) if matmul else "-",
        })
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for tool in ["zero_compile", "zero_run", "zero_sim", "machine_probe",
                 "mpirun_flags"]:
        parser.add_argument(tool)
    parser.add_argument("--csv", help="write the table as CSV here")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ranks", default="1,2,4")
    parser.add_argument("--backends", default="inprocess,mpi")
    parser.add_argument("--gpu-results", default="bench/results/gpu.json",
                        help="bench/gpu's results to predict (relative to "
                        "the workspace)")
    args = parser.parse_args()
    if args.steps < 2 or args.repeats < 1:
        bench_report.fail("--steps must be at least 2 and --repeats at least "
                          "1, got %d and %d" % (args.steps, args.repeats))
    try:
        worlds = [int(x) for x in args.ranks.split(",")]
    except ValueError:
        bench_report.fail("--ranks takes whole numbers separated by commas, "
                          "got '%s'" % args.ranks)
    if min(worlds) < 1:
        bench_report.fail("--ranks must all be at least 1")
    backends = [b for b in args.backends.split(",") if b]
    for backend in backends:
        if backend not in ("inprocess", "mpi"):
            bench_report.fail("backend '%s' is not inprocess or mpi" % backend)

    info, date = bench_report.machine(), bench_report.now()
    work = tempfile.mkdtemp(prefix="sim_validate_")
    print("probing one core ...", flush=True)
    device = probe([args.machine_probe, "compute"])
    device_file = os.path.join(work, "cpu.json")
    with open(device_file, "w") as f:
        json.dump(device, f, indent=2)
    links = {}
    for backend in backends:
        for world in worlds:
            if world > 1:
                print("probing %s collectives on %d ranks ..." % (
                    backend, world), flush=True)
                links[(backend, world)] = comm_probe(args, backend, world)

    plans = bench_model.compile_plans(args.zero_compile, worlds, STAGES,
                                      PIPELINE, work)

    configs = [(backend, world, stage) for backend in backends
               for world in worlds for stage in STAGES]

    def run_one(config, attempt):
        backend, world, stage = config
        threads = max(1, info["cores"] // world)
        report = bench_report.run_report(
            [args.zero_run, plans[(world, stage)], "--ranks", str(world),
             "--backend", backend, "--steps", str(args.steps), "--threads",
             str(threads), "--quiet"],
            os.path.join(work, "%s.%d.%d.%d.json" % (backend, world, stage,
                                                     attempt)))
        print("run %d %-9s N=%d stage %d  %8.1f ms" % (
            attempt + 1, backend, world, stage, report["mean_step_ms"]),
            flush=True)
        return report

    best = bench_report.best_runs(configs, run_one, args.repeats, 1)

    rows = []
    for backend, world, stage in configs:
        threads = max(1, info["cores"] // world)
        link = links.get((backend, world), {})
        predicted = json.loads(bench_report.run(
            [args.zero_sim, plans[(world, stage)], "--topology",
             topology(world, link), "--device-file", device_file,
             "--threads", str(threads), "--report", "json"]))
        report = best[(backend, world, stage)]
        phases = report["phase_ms"]
        measured = report["mean_step_ms"]
        error = predicted["step_ms"] / measured - 1
        rows.append({
            "backend": backend,
            "ranks": world,
            "stage": stage,
            "threads_per_rank": threads,
            "measured_ms": round(measured, 1),
            "predicted_ms": round(predicted["step_ms"], 1),
            "error": "%+.1f%%" % (100 * error),
            "error_fraction": round(error, 4),
            "within_goal": abs(error) <= GOAL,
            "measured_compute_ms": round(phases["forward"] +
                                         phases["backward"] +
                                         phases["optimizer"], 1),
            "predicted_compute_ms": round(predicted["compute_ms"], 1),
            "measured_exposed_ms": round(phases["comm_wait"], 1),
            "predicted_exposed_ms": round(predicted["comm_exposed_ms"], 1),
            "measured_busy_ms": round(phases["comm_busy"], 1),
            "predicted_busy_ms": round(predicted["comm_busy_ms"], 1),
            "link_latency_us": round(link.get("latency_s", 0) * 1e6, 2),
            "link_gb_per_s": round(link.get("bandwidth", 0) / 1e9, 3),
            "other_cores": round(report["other_cores"], 2),
        })

    print()
    bench_report.print_table(COLUMNS, rows)
    within = sum(row["within_goal"] for row in rows)
    worst = max(rows, key=lambda row: abs(row["error_fraction"]))
    print("\n%d of %d predictions within %d%% of the measured step (worst: "
          "%s N=%d stage %d, %s). %s; %d steps a run, the first left out, "
          "fastest of %d; %s." % (
              within, len(rows), int(GOAL * 100), worst["backend"],
              worst["ranks"], worst["stage"], worst["error"],
              bench_model.GPT2_DESCRIPTION, args.steps, args.repeats,
              bench_report.describe(info)))
    gpu = gpu_rows(args, work)
    if gpu:
        print()
        bench_report.print_table(GPU_COLUMNS, gpu)
        print("\nGPT-2 small (12 layers, hidden 768, sequence 1024), batch "
              "8, one H200, stage 0: measured by bench/gpu (%s), predicted "
              "from the plan with the h200 preset." % args.gpu_results)
    print("device file: " + json.dumps(device))
    for (backend, world), link in sorted(links.items()):
        print("link %s N=%d: latency %.2f us, %.3f GB/s per rank" % (
            backend, world, link["latency_s"] * 1e6, link["bandwidth"] / 1e9))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "sim_validation", {
            "model": bench_model.GPT2_FLAGS, "pipeline": PIPELINE,
            "steps": args.steps, "repeats": args.repeats, "ranks": worlds,
            "backends": backends, "device": device,
            "links": [dict(link, samples=None) for link in links.values()],
            "date": date}, info, date, {"cpu": rows, "gpu": gpu})


if __name__ == "__main__":
    main()
