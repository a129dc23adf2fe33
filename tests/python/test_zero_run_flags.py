"""zero-run's command line: --help lists every flag the usage names, with
its help and default, and a bad flag is one line `zero-run: <message>`
followed by the usage, exit status 1. Outputs that overlap each other or
an input are one line, exit status 1."""

import json
import os
import re
import subprocess

import pytest


def run(*args):
    done = subprocess.run([os.environ["ZEROSBP_RUN"], *map(str, args)],
                          capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, done.stderr


def usage_and_flags(text):
    """(usage lines, {flag: help}) of --help's output."""
    usage, _, listing = text.partition("\n\n")
    flags = {}
    name = None
    for line in listing.splitlines()[1:]:
        entry = re.fullmatch(r"  (--[a-z0-9-]+) +(\S.*)", line)
        if entry:
            name = entry.group(1)
            flags[name] = entry.group(2)
        else:
            assert name and re.fullmatch(r" {4,}\S.*", line), line
            flags[name] += " " + line.strip()
    return usage.splitlines(), flags


@pytest.mark.parametrize("option", ["--help", "-h"])
def test_help_lists_every_flag(option):
    code, out, err = run(option)
    assert code == 0 and err == ""
    usage, flags = usage_and_flags(out)
    assert usage[0].startswith("usage: zero-run model.zplan ")
    assert usage[1].startswith("       zero-run eval.zplan --eval ")
    named = set(re.findall(r"--[a-z][a-z0-9-]*", " ".join(usage)))
    assert len(flags) == len(named) == 27
    assert set(flags) == named
    for name, text in flags.items():
        assert len(text) > 10, name
    assert flags["--backend"].endswith("(default: inprocess)")
    assert flags["--timeout"].endswith("(default: 300)")
    assert flags["--quiet"] == "prints no progress lines (default: false)"
    assert "-n N is the same" in flags["--ranks"]
    assert "required" in flags["--steps"]
    assert flags["--device"].startswith("cpu or cuda")
    assert flags["--cuda-graph"].startswith("on, off or auto")
    assert flags["--cuda-graph"].endswith("(default: auto)")
    assert flags["--allow-tf32"].endswith("(default: false)")
    assert flags["--multi-tensor"].startswith("on or off")
    assert flags["--multi-tensor"].endswith("(default: on)")
    assert flags["--defer-transfer-waits"].startswith("on or off")
    assert flags["--defer-transfer-waits"].endswith("(default: on)")


@pytest.mark.parametrize("args, message", [
    (["m.zplan", "--steps=1", "--device=tpu"],
     "--device: expected cpu or cuda, got 'tpu'"),
    (["m.zplan", "--steps", "0"],
     "--steps: expected an integer in [1, 1000000000], got '0'"),
    (["m.zplan", "--steps=1", "-n", "0x2"],
     "-n: expected an integer in [1, 16384], got '0x2'"),
    (["m.zplan", "--steps=1", "--timeout=1.5"],
     "--timeout: expected an integer in [1, 86400], got '1.5'"),
    (["m.zplan", "--steps=1", "--backend", "threads"],
     "--backend: expected inprocess or mpi, got 'threads'"),
    (["m.zplan", "--steps=1", "--hostfile", "hosts"],
     "--hostfile needs --backend mpi"),
    (["m.zplan", "--steps=1", "--report=xml"],
     "--report: expected json or none, got 'xml'"),
    (["m.zplan", "--steps=1", "--quiet=maybe"],
     "--quiet: expected true or false, got 'maybe'"),
    (["m.zplan", "--steps=1", "--cuda-graph=yes"],
     "--cuda-graph: expected on, off or auto, got 'yes'"),
    (["m.zplan", "--steps=1", "--cuda-graph"], "--cuda-graph needs a value"),
    (["m.zplan", "--steps=1", "--allow-tf32=maybe"],
     "--allow-tf32: expected true or false, got 'maybe'"),
    (["m.zplan", "--steps=1", "--multi-tensor=auto"],
     "--multi-tensor: expected on or off, got 'auto'"),
    (["m.zplan", "--steps=1", "--multi-tensor", "true"],
     "--multi-tensor: expected on or off, got 'true'"),
    (["m.zplan", "--steps=1", "--multi-tensor"],
     "--multi-tensor needs a value"),
    (["m.zplan", "--steps=1", "--defer-transfer-waits=no"],
     "--defer-transfer-waits: expected on or off, got 'no'"),
    (["m.zplan", "--steps=1", "--x"], "unknown option '--x'"),
    (["m.zplan", "--steps=1", "--x=1"], "unknown option '--x'"),
    (["m.zplan", "--steps=1", "--checkpoint_dir=ck"],
     "unknown option '--checkpoint_dir'"),
    (["m.zplan", "--steps=1", "--noquiet"], "unknown option '--noquiet'"),
    (["m.zplan", "--steps=1", "--data"], "--data needs a value"),
    (["m.zplan", "--steps=1", "--save="], "--save needs a value"),
    (["m.zplan", "other.zplan", "--steps=1"],
     "unexpected argument 'other.zplan'"),
    (["--steps=1"], "no plan file given"),
    (["m.zplan", "--ranks=2"], "--steps is required"),
    (["m.zplan", "--steps=1", "--keep=2"],
     "--checkpoint-every and --keep need --checkpoint-dir"),
], ids=lambda value: value if isinstance(value, str) else None)
def test_a_bad_flag_is_one_line_and_the_usage(args, message):
    code, out, err = run(*args)
    _, help_out, _ = run("--help")
    usage, _ = usage_and_flags(help_out)
    assert code == 1 and out == ""
    assert err.splitlines() == [f"zero-run: {message}", *usage]


def test_flags_reach_the_run(tmp_path):
    """-n is --ranks, `--quiet=false` prints progress, and the seed and
    the report flags are read."""
    plan = tmp_path / "m.zplan"
    subprocess.run([os.environ["ZEROSBP_COMPILE"], "--preset=tiny",
                    "--world=2", "--report=none", "-o", str(plan)],
                   check=True)
    reports = []
    for ranks in [["-n", "2"], ["--ranks=2"]]:
        report = tmp_path / "report.json"
        code, out, err = run(plan, *ranks, "--steps", "2", "--seed=7",
                             "--quiet=false", "--report-file", report)
        assert code == 0, err
        assert len([l for l in out.splitlines() if l.startswith("step")]) == 2
        reports.append(json.loads(report.read_text())["losses"])
    assert reports[0] == reports[1]
    code, out, err = run(plan, "--steps=2", "--seed=8", "--quiet",
                         "--report=json")
    assert code == 0 and err == "", err
    assert json.loads(out)["losses"] != reports[0]


def test_device_options_reach_the_report(tmp_path):
    """--cuda-graph, --allow-tf32 and --multi-tensor are recorded in the
    report; the CPU executor has no CUDA graph nor launches to merge, and
    says so (tests/gpu/cuda_graph_check.py and cuda_multi_tensor_check.py
    check them on a GPU)."""
    plan = tmp_path / "m.zplan"
    subprocess.run([os.environ["ZEROSBP_COMPILE"], "--preset=tiny",
                    "--world=1", "--report=none", "-o", str(plan)],
                   check=True)
    code, out, err = run(plan, "--steps=2", "--quiet", "--report=json")
    assert code == 0 and err == "", err
    report = json.loads(out)
    assert report["cuda_graph"] == {
        "mode": "auto", "used": False, "captured_step": 0, "graph_steps": 0,
        "reason": "the cpu executor has no CUDA graphs"}
    assert report["allow_tf32"] is False
    assert report["multi_tensor"] == {
        "mode": "on", "applies": False, "instructions": 0, "launches": 0,
        "runs": [],
        "reason": "the cpu executor calls each kernel on the host: there are "
                  "no launches to merge"}
    code, out, err = run(plan, "--steps=2", "--quiet", "--report=json",
                         "--cuda-graph", "off", "--allow-tf32",
                         "--multi-tensor", "off")
    assert code == 0 and err == "", err
    changed = json.loads(out)
    assert changed["cuda_graph"]["mode"] == "off"
    assert changed["allow_tf32"] is True
    assert changed["multi_tensor"]["mode"] == "off"
    assert changed["multi_tensor"]["applies"] is False
    assert changed["losses"] == report["losses"]


# Outputs apart from each other and from the inputs, checked before
# anything is read or written (docs/runtime.md#files-are-whole-or-absent):
# the plan m.zplan need not exist.
@pytest.mark.parametrize("args, message", [
    (["--checkpoint-dir", "D", "--save", "D"],
     "--save D and --checkpoint-dir D are the same path"),
    (["--save", "out", "--checkpoint-dir", "out/ck"],
     "--checkpoint-dir out/ck is inside --save out"),
    (["--checkpoint-dir", "out/ck/", "--save", "out/"],
     "--checkpoint-dir out/ck/ is inside --save out/"),
    (["--save", "out", "--trace", "out/trace.json"],
     "--trace out/trace.json is inside --save out"),
    (["--save", "out", "--report-file", "out/sub/../report.json"],
     "--report-file out/sub/../report.json is inside --save out"),
    (["--checkpoint-dir", "ck", "--trace", "ck/trace.json"],
     "--trace ck/trace.json is inside --checkpoint-dir ck"),
    (["--report-file", "r.json", "--trace", "./r.json"],
     "--report-file r.json and --trace ./r.json are the same path"),
    (["--eval", "--outputs", "o", "--trace", "o/t.json"],
     "--trace o/t.json is inside --outputs o"),
    (["--report-file", "m.zplan"],
     "--report-file m.zplan and the plan m.zplan are the same path"),
    (["--save", "."], "the plan m.zplan is inside --save ."),
    (["--save", "p", "--init", "p"],
     "--save p and --init p are the same path"),
    (["--save", "data/x", "--data", "data"],
     "--save data/x is inside --data data"),
    (["--save", "ck/params", "--resume", "ck"],
     "--save ck/params is inside --resume ck"),
    (["--checkpoint-dir", "p", "--init", "p"],
     "--checkpoint-dir p and --init p are the same path"),
    (["--checkpoint-dir", "data/ck", "--data", "data"],
     "--checkpoint-dir data/ck is inside --data data"),
    (["--backend", "mpi", "-n", "2", "--hostfile", "hosts", "--report-file",
      "hosts"], "--report-file hosts and --hostfile hosts are the same path"),
    # Under MPI rank r > 0 writes its timeline to <--trace>.rank<r>.
    (["--backend", "mpi", "-n", "3", "--trace", "t.json", "--report-file",
      "t.json.rank2"],
     "--report-file t.json.rank2 and --trace (rank 2) t.json.rank2 are the "
     "same path"),
], ids=lambda value: value if isinstance(value, str) else None)
def test_overlapping_outputs_are_one_line(args, message):
    assert run("m.zplan", "--steps=1", *args) == (
        1, "", f"zero-run: {message}\n")


def test_outputs_apart_after_symbolic_links(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert run("m.zplan", "--steps=1", "--save", tmp_path / "link",
               "--checkpoint-dir", real / "ck") == (
        1, "", f"zero-run: --checkpoint-dir {real}/ck is inside --save "
        f"{tmp_path}/link\n")


@pytest.mark.parametrize("args", [
    ["--save", "out", "--checkpoint-dir", "out2"],
    ["--resume", "ck", "--checkpoint-dir", "ck"],
    ["--resume", "ck/step-00000001", "--checkpoint-dir", "ck"],
    ["--checkpoint-dir", ".", "--init", "init"],
], ids=["siblings", "resume-ck", "resume-step", "inputs-in-checkpoints"])
def test_outputs_apart_are_taken(args):
    """Only the missing plan stops these: a name that begins another is not
    inside it, a resumed run saves into its own checkpoints, and a
    checkpoint directory, which is written into and never replaced, may
    hold the inputs."""
    assert run("m.zplan", "--steps=1", *args) == (
        1, "", "zero-run: m.zplan: cannot open the plan (No such file or "
        "directory)\n")
