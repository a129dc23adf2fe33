"""Shared output of the Python benchmarks: the machine, one Markdown table,
CSV and JSON files, and running the tools with one-line errors.

Imported by bench/*/..._bench.py; not run on its own.
"""

import csv
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time


def machine():
    """The CPU model, core count and memory of this machine."""
    model = platform.processor() or platform.machine()
    try:
        listing = subprocess.run(["lscpu"], capture_output=True, text=True,
                                 check=True).stdout
        for line in listing.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    memory_gib = None
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 1024.0 / 1024.0, 1)
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": memory_gib,
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def describe(info):
    """One line naming the machine, for the end of a table."""
    return "%s, %d cores, %s GiB; load average %s at the start" % (
        info["cpu"], info["cores"], info["memory_gib"],
        " ".join("%.2f" % x for x in info["load_average"]))


def now():
    """The UTC date and time, to the second."""
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M:%S UTC")


def fail(message):
    """Bad input or a failed tool: one line on stderr, exit status 1."""
    sys.stderr.write("%s: %s\n" % (os.path.basename(sys.argv[0]), message))
    sys.exit(1)


def run(command):
    """Runs a tool; its failure ends the benchmark with its last line."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        fail("%s failed (exit %d): %s" % (
            os.path.basename(command[0]), done.returncode,
            lines[-1] if lines else "no output"))
    return done.stdout


def busy_cpu_seconds():
    """CPU seconds the whole machine has spent busy since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    busy = sum(fields[:3]) + sum(fields[5:8])
    return busy / float(os.sysconf("SC_CLK_TCK"))


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(work):
    """Calls `work()`, which runs child processes; returns its result and
    how many cores other work on the machine kept busy meanwhile, on
    average: the machine's busy CPU time less the children's own (their
    processes and theirs), over the wall time."""
    busy, own, start = (busy_cpu_seconds(), children_cpu_seconds(),
                        time.monotonic())
    result = work()
    wall = time.monotonic() - start
    other = (busy_cpu_seconds() - busy) - (children_cpu_seconds() - own)
    return result, max(0.0, other / wall)


def run_timed(command):
    """Runs a tool like run(), timed()."""
    return timed(lambda: run(command))


def run_report(command, report_path):
    """Runs `zero-run ... --report-file report_path` timed: its report, with
    `other_cores`, the cores other work on the machine kept busy meanwhile
    (it slows the run)."""
    _, other = run_timed(command + ["--report-file", report_path])
    report = load_json(report_path)
    report["other_cores"] = other
    return report


# Other work keeping more than this many cores busy during a run makes it
# contended: a quiet run of the same configuration is preferred to it.
CONTENDED_CORES = 0.25


def best_runs(configs, run_one, repeats, retries):
    """The kept report per configuration: of `repeats` runs each, taken in
    turns over all configurations so that a burst of other work slows one
    run of a configuration rather than all of them, the fastest quiet one.
    Configurations whose runs were all contended get up to `retries` more
    passes; if none is quiet, the fastest is kept and its `other_cores`
    says so. run_one(config, attempt) returns a report with `mean_step_ms`
    and `other_cores`."""
    def rank(report):
        return (report["other_cores"] > CONTENDED_CORES,
                report["mean_step_ms"])

    best = {}
    for attempt in range(repeats + retries):
        todo = configs if attempt < repeats else [
            config for config in configs
            if best[config]["other_cores"] > CONTENDED_CORES]
        for config in todo:
            report = run_one(config, attempt)
            if config not in best or rank(report) < rank(best[config]):
                best[config] = report
    return best


def load_json(path):
    with open(path) as f:
        return json.load(f)


def print_table(columns, rows):
    """Prints rows as a Markdown table; columns are (key, heading) pairs."""
    print("| " + " | ".join(heading for _, heading in columns) + " |")
    print("| " + " | ".join("---" for _ in columns) + " |")
    for row in rows:
        print("| " + " | ".join(format_cell(row[key]) for key, _ in columns) +
              " |")


def format_cell(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return "{:,}".format(value)
    return str(value)


def _write_whole(path, write):
    """Calls write(f) on a temporary file beside `path`, then renames it to
    `path`: a results file is complete or absent, never half written."""
    partial = path + ".partial"
    with open(partial, "w", newline="") as f:
        write(f)
    os.replace(partial, path)


def write_csv(path, columns, rows):
    def write(f):
        writer = csv.DictWriter(f, fieldnames=[key for key, _ in columns],
                                extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    _write_whole(path, write)


def write_json(path, benchmark, settings, info, date, rows):
    def write(f):
        json.dump({"benchmark": benchmark, "date": date, "machine": info,
                   "settings": settings, "rows": rows}, f, indent=2)
        f.write("\n")
    _write_whole(path, write)
