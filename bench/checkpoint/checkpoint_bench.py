#!/usr/bin/python3
"""Checkpoint save and load: time, bytes on disk, bytes read and the load's
extra memory, at N = 1, 2 and 4 ranks, and loads into another layout.

The GPT-2 of bench/common/bench_model.py, fp32 Adam, both ZeRO thresholds 0,
`overlap_comm` on, is compiled by `zero-compile` at stages 0, 2 and 3 for
each N. A checkpoint holds the whole training state: every parameter and
Adam's `m` and `v` (12 bytes a parameter, 12Ψ in all); gradients are not
state between steps. Every run is one `zero-run` process with in-process
ranks (one thread per rank) and max(1, cores / N) BLAS threads per rank,
like bench/scaling; the checkpoint directories lie under `--work` (a
temporary directory by default), on its disk.

For each (N, stage):

- **save**: `zero-run plan --steps 1 --checkpoint-dir DIR` into an empty
  DIR; *save ms* is the report's `checkpoints[0].save_ms`: rank 0 making
  the partial directory, every rank writing its safetensors file (through a
  1 MiB chunk) and fsyncing it, the manifest, the rename and `latest`.
  *file bytes/rank* are the sizes of `rank-0000r-of-0000N.safetensors`
  (one size with "xN" when every rank's file has it), *total* their sum
  plus manifest.json. A tensor all ranks hold whole (replicated) is written
  once, by rank 0.
- **load** at the same N and stage (and, in the rows marked "reshard", at
  another N and stage from the same checkpoint): `zero-run plan --steps 1
  --resume DIR`. *load ms* is the report's `resumed.load_ms`: reading and
  checking the manifest, checking every file a rank reads (size and CRC-32:
  it reads the whole file once), then copying each rank's shards out of
  the files. *warm*: the files are in the page cache (they were just
  written); *cold*: each rank file's cached pages were dropped with
  posix_fadvise(POSIX_FADV_DONTNEED) right before the run (this machine is
  a virtual machine, so the host may still cache them).
- **bytes read**: the report's `resumed.bytes_read`, the bytes the load
  copies into the ranks' variables, summed over the process's ranks; the
  same run under `--backend mpi` gives rank 0's own figure (its state after
  the load). *read() bytes* is what the process read from files in the
  load, measured from outside (the rise of /proc/PID/io `rchar`, see
  below): the CRC pass plus the copy plus the manifest.
- **extra memory**: *buffer B/rank (report)* is `resumed.buffer_bytes` of
  the `--backend mpi` run, rank 0's largest load buffer; in process the
  report sums it over the ranks (*buffer B, all ranks*). *Peak RSS growth*
  is measured independently, from outside the process: the resume's plan
  and data are arranged so that `zero-run` stops twice, right before the
  load (its manifest.json is a FIFO that it blocks opening) and right after
  it (the run is given `--data DIR` whose .npy files are FIFOs, opened only
  after the load). At the first stop the process's peak RSS is reset to its
  current RSS (writing 5 to /proc/PID/clear_refs) and its RSS recorded; at
  the second stop the peak (VmHWM) is read and the process killed. The
  growth is that peak less the RSS before: every page the load touched
  that was not resident before, in all N ranks of the process together
  (the arenas are zeroed, so resident, before the first stop). It is taken
  with glibc's default malloc and with MALLOC_MMAP_THRESHOLD_=65536
  MALLOC_TRIM_THRESHOLD_=0 (every buffer of 64 KiB or more is a fresh
  mapping, returned to the system when freed, so no buffer reuses memory
  that was resident before); the largest of `--repeats` probes is kept.
- **compared with**: the larger of the two growths against the largest
  tensor of the checkpoint (wte or one of its Adam moments, 8 MiB) and
  against the state the process loaded (bytes read, all ranks). Both
  growths are the whole process's, all N ranks loading at once; a rank's
  own share is about 1/N of it. The goal: extra memory below the largest
  tensor, never a whole model.

Timed columns are the best of `--repeats` runs, taken in turns over all
configurations, quiet runs (other work under a quarter core) before
contended ones, with up to `--retries` more where all were contended; the
last column is the other work during the kept warm load.

Usage (through Bazel, which passes the tool paths):
  bazel run -c opt //bench/checkpoint -- \\
      --csv=$PWD/bench/results/checkpoint.csv \\
      --json=$PWD/bench/results/checkpoint.json
  checkpoint_bench.py ZERO_COMPILE ZERO_RUN [--csv FILE] [--json FILE]
      [--ranks 1,2,4] [--stages 0,2,3] [--repeats 3] [--retries 2]
      [--work DIR]
"""

import argparse
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
import bench_model  # noqa: E402
import bench_report  # noqa: E402

MIB = 1024.0 * 1024.0
PIPELINE = ("shard-min-size=0 stage3-param-persistence-threshold=0 "
            "overlap-comm=true")
STAGES = [0, 2, 3]
# Loads into another layout: (saved at N, stage) -> (loaded at N, stage).
RESHARDS = [((4, 3), (2, 2)), ((4, 3), (1, 0)), ((2, 0), (4, 3))]
DTYPE_BYTES = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2, "i64": 8, "i32": 4}
PROBE_TIMEOUT_S = 120
MALLOC_FRESH = {"MALLOC_MMAP_THRESHOLD_": "65536",
                "MALLOC_TRIM_THRESHOLD_": "0"}

COLUMNS = [
    ("saved", "checkpoint (N, stage)"),
    ("loaded", "loaded at (N, stage)"),
    ("file_bytes_text", "file bytes/rank"),
    ("total_bytes", "total bytes"),
    ("save_ms", "save ms"),
    ("load_ms_warm", "load ms, warm"),
    ("load_ms_cold", "load ms, cold"),
    ("bytes_read_rank0", "bytes read, rank 0 (MPI)"),
    ("bytes_read_all", "bytes read, all ranks"),
    ("rchar_bytes", "read() bytes in the load"),
    ("buffer_bytes_rank0", "buffer B/rank (report, MPI rank 0)"),
    ("buffer_bytes_all", "buffer B, all ranks (report)"),
    ("rss_growth_mib", "peak RSS growth MiB, default malloc"),
    ("rss_growth_fresh_mib", "peak RSS growth MiB, mmap >= 64 KiB"),
    ("growth_vs_largest", "growth / largest tensor"),
    ("growth_vs_state", "growth / state loaded"),
    ("other_cores", "other work, cores"),
]


def parse_ints(text, what, allowed=None):
    try:
        items = [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        bench_report.fail("--%s takes whole numbers separated by commas, "
                          "got '%s'" % (what, text))
    if not items or min(items) < (0 if allowed else 1):
        bench_report.fail("--%s: bad list '%s'" % (what, text))
    for item in items:
        if allowed is not None and item not in allowed:
            bench_report.fail("--%s: %d is not one of %s" % (
                what, item, ", ".join(str(a) for a in allowed)))
    return items


def numel(shape):
    count = 1
    for dim in shape:
        count *= dim
    return count


def label(world, stage):
    return "N=%d, stage %d" % (world, stage)


# -- zero-run ----------------------------------------------------------------

def zero_run_command(args, plan, world, threads):
    return [args.zero_run, plan, "--ranks", str(world), "--steps", "1",
            "--threads", str(threads), "--quiet"]


def step_dir(checkpoint):
    with open(os.path.join(checkpoint, "latest")) as f:
        return os.path.join(checkpoint, f.read().strip())


def drop_cache(path):
    """Drops the page cache of every rank file of a checkpoint."""
    directory = step_dir(path)
    for name in os.listdir(directory):
        if name.endswith(".safetensors"):
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


# -- The memory probe --------------------------------------------------------

def proc_fields(pid, name, keys):
    values = {}
    with open("/proc/%d/%s" % (pid, name)) as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in keys:
                number = int(rest.split()[0])
                values[key] = number * 1024 if name == "status" else number
    missing = [key for key in keys if key not in values]
    if missing:
        bench_report.fail("/proc/%d/%s has no %s" % (pid, name,
                                                     ", ".join(missing)))
    return values


def open_fifo_writer(path, proc):
    """Opens a FIFO for writing once the process has opened it to read (it
    then waits there): the moment the process reached that point."""
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.set_blocking(fd, True)
            return fd
        except OSError as error:
            if error.errno != errno.ENXIO:
                raise
        if proc.poll() is not None:
            message = proc.stderr.read().strip().splitlines()
            bench_report.fail("zero-run exited (%d) before %s was read: %s" % (
                proc.returncode, os.path.basename(path),
                message[-1] if message else "no output"))
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            bench_report.fail("zero-run did not reach %s in %d s" % (
                path, PROBE_TIMEOUT_S))
        time.sleep(0.0005)


def probe_load_memory(args, plan, world, threads, checkpoint, work,
                      extra_env):
    """The peak RSS growth and read() bytes of one load, measured from
    outside the process between two stops (see the module docstring)."""
    shutil.rmtree(work, ignore_errors=True)
    gate, data = os.path.join(work, "gate"), os.path.join(work, "data")
    os.makedirs(gate)
    os.makedirs(data)
    source = step_dir(checkpoint)
    for name in os.listdir(source):
        if name != "manifest.json":
            os.symlink(os.path.abspath(os.path.join(source, name)),
                       os.path.join(gate, name))
    with open(os.path.join(source, "manifest.json"), "rb") as f:
        manifest = f.read()
    os.mkfifo(os.path.join(gate, "manifest.json"))
    with open(plan) as f:
        inputs = [item["name"] for item in json.load(f)["inputs"]]
    for name in inputs:
        os.mkfifo(os.path.join(data, name + ".npy"))
    env = dict(os.environ)
    env.update(extra_env)
    proc = subprocess.Popen(
        zero_run_command(args, plan, world, threads) +
        ["--resume", gate, "--data", data],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    writer = None
    try:
        # Stop 1: zero-run opens the manifest, before the load.
        writer = open_fifo_writer(os.path.join(gate, "manifest.json"), proc)
        before = proc_fields(proc.pid, "status", ["VmRSS"])
        io_before = proc_fields(proc.pid, "io", ["rchar"])
        with open("/proc/%d/clear_refs" % proc.pid, "w") as f:
            f.write("5")  # Peak RSS := current RSS.
        os.write(writer, manifest)
        os.close(writer)
        # Stop 2: zero-run opens its first input, after the load.
        writer = open_fifo_writer(os.path.join(data, inputs[0] + ".npy"),
                                  proc)
        after = proc_fields(proc.pid, "status", ["VmHWM", "VmRSS"])
        io_after = proc_fields(proc.pid, "io", ["rchar"])
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if writer is not None:
            try:
                os.close(writer)
            except OSError:
                pass
    shutil.rmtree(work, ignore_errors=True)
    return {"rss_before": before["VmRSS"], "peak_after": after["VmHWM"],
            "rss_after": after["VmRSS"],
            "growth": after["VmHWM"] - before["VmRSS"],
            "rchar": io_after["rchar"] - io_before["rchar"]}


# -- Main --------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("zero_compile")
    parser.add_argument("zero_run")
    parser.add_argument("--csv", help="write the table as CSV here")
    parser.add_argument("--json", help="write the rows as JSON here")
    parser.add_argument("--ranks", default="1,2,4",
                        help="rank counts, comma-separated")
    parser.add_argument("--stages", default="0,2,3",
                        help="ZeRO stages, comma-separated")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs per measurement; the fastest is kept")
    parser.add_argument("--retries", type=int, default=2,
                        help="extra runs of a configuration whose runs all "
                        "shared the machine with other work")
    parser.add_argument("--work", help="directory for the plans and "
                        "checkpoints (default: a new temporary directory, "
                        "removed at the end)")
    args = parser.parse_args()
    worlds = parse_ints(args.ranks, "ranks")
    stages = parse_ints(args.stages, "stages", allowed=[0, 1, 2, 3])
    if args.repeats < 1 or args.retries < 0:
        bench_report.fail("--repeats must be at least 1 and --retries at "
                          "least 0, got %d and %d" % (args.repeats,
                                                      args.retries))
    for tool in [args.zero_compile, args.zero_run]:
        if not os.access(tool, os.X_OK):
            bench_report.fail("not an executable: %s" % tool)

    info, date = bench_report.machine(), bench_report.now()
    work = (os.path.abspath(args.work) if args.work
            else tempfile.mkdtemp(prefix="checkpoint_bench_"))
    os.makedirs(work, exist_ok=True)

    def threads(world):
        return max(1, info["cores"] // world)

    saves = [(world, stage) for world in worlds for stage in stages]
    loads = [(save, save) for save in saves] + [
        (source, target) for source, target in RESHARDS
        if source in saves and target[0] in worlds]
    plans = {}
    for world, stage in set(saves) | set(t for _, t in loads):
        plan = os.path.join(work, "n%d_s%d.zplan" % (world, stage))
        bench_report.run([args.zero_compile] + bench_model.GPT2_FLAGS + [
            "--world=%d" % world, "--stage=%d" % stage,
            "--pipeline=" + PIPELINE, "--report=none", "-o", plan])
        plans[(world, stage)] = plan
    checkpoints = {save: os.path.join(work, "ckpt_n%d_s%d" % save)
                   for save in saves}

    # Saves: each run into an empty directory; the last one stays for the
    # loads.
    def save_one(save, attempt):
        directory = checkpoints[save]
        shutil.rmtree(directory, ignore_errors=True)
        report = bench_report.run_report(
            zero_run_command(args, plans[save], save[0], threads(save[0])) +
            ["--checkpoint-dir", directory],
            os.path.join(work, "save_n%d_s%d.%d.json" % (save + (attempt,))))
        report["mean_step_ms"] = report["checkpoints"][0]["save_ms"]
        print("save %d  %-16s %8.1f ms  other work %.2f cores" % (
            attempt + 1, label(*save), report["mean_step_ms"],
            report["other_cores"]), flush=True)
        return report

    saved = bench_report.best_runs(saves, save_one, args.repeats,
                                   args.retries)
    # The kept checkpoint is the last one written; every save of a plan
    # writes the same bytes (the same seed and step).
    files = {}
    for save in saves:
        directory = step_dir(checkpoints[save])
        world = save[0]
        files[save] = {
            "rank_bytes": [os.path.getsize(os.path.join(
                directory, "rank-%05d-of-%05d.safetensors" % (r, world)))
                for r in range(world)],
            "manifest_bytes": os.path.getsize(
                os.path.join(directory, "manifest.json"))}
        with open(os.path.join(directory, "manifest.json")) as f:
            manifest = json.load(f)
        tensor_bytes = [numel(t["shape"]) * DTYPE_BYTES[t["dtype"]]
                        for t in manifest["tensors"]]
        largest = max(manifest["tensors"], key=lambda t: numel(t["shape"]))
        files[save].update({
            "largest_tensor": largest["name"],
            "largest_tensor_bytes": max(tensor_bytes),
            "model_state_bytes": sum(tensor_bytes),
            "param_bytes": sum(
                b for t, b in zip(manifest["tensors"], tensor_bytes)
                if t["role"] == "param")})

    # Loads, warm and cold, in turns.
    def load_one(config, attempt, cold):
        source, target = config
        if cold:
            drop_cache(checkpoints[source])
        report = bench_report.run_report(
            zero_run_command(args, plans[target], target[0],
                             threads(target[0])) +
            ["--resume", checkpoints[source]],
            os.path.join(work, "load_%s_n%d_s%d_n%d_s%d.%d.json" % (
                ("cold" if cold else "warm",) + source + target +
                (attempt,))))
        report["mean_step_ms"] = report["resumed"]["load_ms"]
        print("load %d  %-5s %-16s -> %-16s %8.1f ms  other work %.2f "
              "cores" % (attempt + 1, "cold" if cold else "warm",
                         label(*source), label(*target),
                         report["mean_step_ms"], report["other_cores"]),
              flush=True)
        return report

    warm = bench_report.best_runs(
        loads, lambda c, a: load_one(c, a, False), args.repeats,
        args.retries)
    cold = bench_report.best_runs(
        loads, lambda c, a: load_one(c, a, True), args.repeats, args.retries)

    # Rank 0's own figures: the same load, one process per rank.
    mpi = {}
    for source, target in loads:
        report_path = os.path.join(work, "load_mpi_n%d_s%d_n%d_s%d.json" % (
            source + target))
        bench_report.run(
            zero_run_command(args, plans[target], target[0],
                             threads(target[0])) +
            ["--backend", "mpi", "--resume", checkpoints[source],
             "--report-file", report_path])
        mpi[(source, target)] = bench_report.load_json(report_path)

    # The memory probe, repeated; the largest growth is kept.
    probes = {}
    for attempt in range(args.repeats):
        for source, target in loads:
            for setting, env in [("default", {}), ("fresh", MALLOC_FRESH)]:
                probe = probe_load_memory(
                    args, plans[target], target[0], threads(target[0]),
                    checkpoints[source], os.path.join(work, "probe"), env)
                key = (source, target, setting)
                print("probe %d %-16s -> %-16s %-7s growth %6.2f MiB  "
                      "read() %d B" % (attempt + 1, label(*source),
                                       label(*target), setting,
                                       probe["growth"] / MIB,
                                       probe["rchar"]), flush=True)
                if key not in probes or (probe["growth"] >
                                         probes[key]["growth"]):
                    probes[key] = probe

    rows = []
    for source, target in loads:
        sizes = files[source]
        rank_bytes = sizes["rank_bytes"]
        if len(set(rank_bytes)) == 1:
            file_text = "{:,}".format(rank_bytes[0]) + (
                " x%d" % len(rank_bytes) if len(rank_bytes) > 1 else "")
        else:
            file_text = " / ".join("{:,}".format(b) for b in rank_bytes)
        warm_report, cold_report = warm[(source, target)], cold[(source,
                                                                 target)]
        mpi_resumed = mpi[(source, target)]["resumed"]
        growth = probes[(source, target, "default")]["growth"]
        growth_fresh = probes[(source, target, "fresh")]["growth"]
        worst = max(growth, growth_fresh)
        rows.append({
            "saved": label(*source),
            "loaded": label(*target) + (
                " (reshard)" if source != target else ""),
            "saved_ranks": source[0], "saved_stage": source[1],
            "loaded_ranks": target[0], "loaded_stage": target[1],
            "file_bytes_text": file_text,
            "rank_file_bytes": rank_bytes,
            "manifest_bytes": sizes["manifest_bytes"],
            "total_bytes": sum(rank_bytes) + sizes["manifest_bytes"],
            "save_ms": round(saved[source]["mean_step_ms"], 1),
            "load_ms_warm": round(warm_report["resumed"]["load_ms"], 1),
            "load_ms_cold": round(cold_report["resumed"]["load_ms"], 1),
            "load_ms_mpi_rank0": round(mpi_resumed["load_ms"], 1),
            "bytes_read_rank0": mpi_resumed["bytes_read"],
            "bytes_read_all": warm_report["resumed"]["bytes_read"],
            "rchar_bytes": probes[(source, target, "default")]["rchar"],
            "buffer_bytes_rank0": mpi_resumed["buffer_bytes"],
            "buffer_bytes_all": warm_report["resumed"]["buffer_bytes"],
            "rss_growth_mib": round(growth / MIB, 2),
            "rss_growth_fresh_mib": round(growth_fresh / MIB, 2),
            "rss_growth_bytes": growth,
            "rss_growth_fresh_bytes": growth_fresh,
            "rss_probe": {setting: probes[(source, target, setting)]
                          for setting in ["default", "fresh"]},
            "largest_tensor": sizes["largest_tensor"],
            "largest_tensor_bytes": sizes["largest_tensor_bytes"],
            "model_state_bytes": sizes["model_state_bytes"],
            "param_bytes": sizes["param_bytes"],
            "growth_vs_largest": "%.2f" % (
                worst / float(sizes["largest_tensor_bytes"])),
            "growth_vs_state": "%.3f" % (
                worst / float(warm_report["resumed"]["bytes_read"])),
            "other_cores": round(warm_report["other_cores"], 2),
            "other_cores_save": round(saved[source]["other_cores"], 2),
            "other_cores_cold": round(cold_report["other_cores"], 2),
        })

    print()
    bench_report.print_table(COLUMNS, rows)
    first = files[saves[0]]
    print("\n%s; fp32 Adam, thresholds 0, overlap_comm on; in-process ranks "
          "(MPI for rank 0's figures). A checkpoint holds %s bytes of model "
          "state (parameters %s, Adam m and v); the largest tensor is %s, "
          "%s bytes. Best of %d runs. Checkpoints in %s. %s; %s." % (
              bench_model.GPT2_DESCRIPTION,
              "{:,}".format(first["model_state_bytes"]),
              "{:,}".format(first["param_bytes"]), first["largest_tensor"],
              "{:,}".format(first["largest_tensor_bytes"]), args.repeats,
              work, bench_report.describe(info), date))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "checkpoint", {
            "model": bench_model.GPT2_FLAGS, "pipeline": PIPELINE,
            "ranks": worlds, "stages": stages,
            "reshards": [list(s) + list(t) for s, t in loads if s != t],
            "repeats": args.repeats, "retries": args.retries,
            "work": work, "steps_before_save": 1,
            "probe_malloc_fresh": MALLOC_FRESH}, info, date, rows)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
