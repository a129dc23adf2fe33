"""The host optimizer update of an offloaded plan (the CPU runtime's nn.adam,
fp32, in place, as the offload plans run it) against STREAM-like probes of
this machine's memory bandwidth, on one thread and on every core (the CPU
kernels' host threads). Bytes are counted as STREAM counts them: each
element read or written once (Adam: 28 bytes per parameter). The goal is
Adam at 80% or more of the best probe's bandwidth on every core.
A second table gives ZeRO++'s block quantization (nn.quantize and
nn.dequantize, 8 and 4 bits) against the same probes.

Other work on the machine slows a probe as much as Adam; the load average
at the start is in the footnote, and the fastest of --repeats passes counts.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
import bench_report  # noqa: E402

PROBES = ("copy", "triad", "in_place_update")
GOAL = 0.80

COLUMNS = [
    ("threads", "threads"),
    ("copy_gb_s", "copy GB/s"),
    ("triad_gb_s", "triad GB/s"),
    ("in_place_gb_s", "in-place update GB/s"),
    ("adam_gb_s", "Adam GB/s"),
    ("adam_gparams_s", "Adam Gparams/s"),
    ("adam_vs_probe", "Adam / best probe"),
]

# ZeRO++'s block quantization (blocks of 2048), the same probes' bandwidth.
QUANT_COLUMNS = [
    ("threads", "threads"),
    ("kernel", "kernel"),
    ("bits", "bits"),
    ("gb_s", "GB/s"),
    ("gelements_s", "G elements/s"),
    ("vs_probe", "/ best probe"),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("probe")
    parser.add_argument("--csv")
    parser.add_argument("--json")
    parser.add_argument("--elements", type=int, default=1 << 25,
                        help="elements per array (Adam streams four)")
    parser.add_argument("--repeats", type=int, default=10,
                        help="timed passes of each kernel; the fastest counts")
    args = parser.parse_args()
    if args.elements < 1 or args.repeats < 1:
        bench_report.fail("--elements and --repeats must be at least 1")
    info, date = bench_report.machine(), bench_report.now()
    output = bench_report.run([args.probe, "--elements", str(args.elements),
                               "--repeats", str(args.repeats)])
    by_threads = {}
    for line in output.splitlines():
        record = json.loads(line)
        by_threads.setdefault(record["threads"], {})[record["kernel"]] = record
    rows = []
    for threads, records in sorted(by_threads.items()):
        best_probe = max(records[name]["gb_s"] for name in PROBES)
        adam = records["adam"]
        rows.append({
            "threads": threads,
            "copy_gb_s": round(records["copy"]["gb_s"], 2),
            "triad_gb_s": round(records["triad"]["gb_s"], 2),
            "in_place_gb_s": round(records["in_place_update"]["gb_s"], 2),
            "adam_gb_s": round(adam["gb_s"], 2),
            "adam_gparams_s": round(adam["elements_per_s"] / 1e9, 3),
            "adam_vs_probe": round(adam["gb_s"] / best_probe, 3),
            "records": records,
        })
    quant_rows = []
    for threads, records in sorted(by_threads.items()):
        best_probe = max(records[name]["gb_s"] for name in PROBES)
        for kernel in ("quantize", "dequantize"):
            for bits in (8, 4):
                record = records["%s_%d" % (kernel, bits)]
                quant_rows.append({
                    "threads": threads, "kernel": kernel, "bits": bits,
                    "gb_s": round(record["gb_s"], 2),
                    "gelements_s": round(record["elements_per_s"] / 1e9, 3),
                    "vs_probe": round(record["gb_s"] / best_probe, 3),
                })
    bench_report.print_table(COLUMNS, rows)
    print()
    bench_report.print_table(QUANT_COLUMNS, quant_rows)
    widest = rows[-1]
    met = widest["adam_vs_probe"] >= GOAL
    print("\n%d elements per array (%.0f MiB), fastest of %d passes; bytes "
          "as STREAM counts them (copy 8, triad and in-place update 12, Adam "
          "28 per element; quantization the f32 elements, the codes and "
          "the scales, once each). Goal: Adam at %d%% of the best probe on %d "
          "threads: %s (%.0f%%). %s; %s." % (
              args.elements, args.elements * 4 / 1048576.0, args.repeats,
              GOAL * 100, widest["threads"], "met" if met else "NOT met",
              widest["adam_vs_probe"] * 100, bench_report.describe(info),
              date))
    if args.csv:
        bench_report.write_csv(args.csv, COLUMNS, rows)
    if args.json:
        bench_report.write_json(args.json, "host_update", {
            "elements": args.elements, "repeats": args.repeats, "goal": GOAL,
            "quantization": quant_rows},
            info, date, rows)


if __name__ == "__main__":
    main()
