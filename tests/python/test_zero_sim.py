"""zero-sim from the plan alone: the bytes it predicts each rank sends per
hierarchy axis equal what zero-run measures on the same plan (flat ZeRO,
MiCS, hpZ, GPT-2 in Megatron's layout with ZeRO on the data axis); its
groups sit on the nodes as the placement says; it refuses bad input with
one line and exit status 1; --help lists its flags."""

import json
import os
import subprocess

import pytest

GPT2 = ["--num-layers=2", "--hidden-size=32", "--num-attention-heads=2",
        "--seq-length=16", "--vocab-size=64", "--batch-size=4"]
PIPELINE = "shard-min-size=0 stage3-param-persistence-threshold=0"
FOUR = "nodes=2,ranks_per_node=2,intra=100GB/s,inter=10GB/s,latency=5us"


def compile_plan(tmp_path, stage, world, extra="", model_parallel=1):
    plan = str(tmp_path / ("s%d_tp%d_%s.zplan" % (
        stage, model_parallel,
        extra.replace("=", "").replace(" ", "_") or "flat")))
    subprocess.run([os.environ["ZEROSBP_COMPILE"], *GPT2,
                    f"--world={world}", f"--stage={stage}",
                    f"--model-parallel-size={model_parallel}",
                    f"--pipeline={PIPELINE} {extra}", "--report=none",
                    "-o", plan], check=True)
    return plan


def sim(*args):
    done = subprocess.run([os.environ["ZEROSBP_SIM"], *map(str, args)],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def sim_json(plan, topology=FOUR, device="h100"):
    code, out, err = sim(plan, "--topology", topology, "--device", device,
                         "--report", "json")
    assert code == 0, err
    return json.loads(out)


def measured(tmp_path, plan, world):
    report = tmp_path / "report.json"
    subprocess.run([os.environ["ZEROSBP_RUN"], plan, f"--ranks={world}",
                    "--steps=1", "--quiet", "--report-file", str(report)],
                   check=True)
    return json.loads(report.read_text())


@pytest.mark.parametrize("stage,extra,model_parallel", [
    (1, "", 1), (2, "", 1), (3, "", 1), (3, "mics-shard-size=2", 1),
    (3, "hpz-partition-size=2", 1), (1, "", 2), (2, "", 2), (3, "", 2)])
def test_bytes_per_axis_match_the_runtime(tmp_path, stage, extra,
                                          model_parallel):
    plan = compile_plan(tmp_path, stage, 4, extra, model_parallel)
    predicted = sim_json(plan)
    report = measured(tmp_path, plan, 4)
    # Rank 0's last step, per axis and per kind.
    assert predicted["comm_bytes"]["per_axis"] == \
        report["comm_bytes"]["per_axis"][0]
    for kind in ["all_reduce", "reduce_scatter", "all_gather"]:
        assert predicted["comm_bytes"][kind] == \
            report["comm_bytes"]["per_rank"][0][kind], kind
    assert sum(predicted["comm_bytes"]["per_axis"]) > 0


def test_groups_sit_on_the_nodes(tmp_path):
    # MiCS over 2 groups of 2: the groups of axis 1 are ranks {0, 1} and
    # {2, 3}, one node each; axis 0 pairs {0, 2}, across the two nodes.
    axes = sim_json(compile_plan(tmp_path, 3, 4,
                                 "mics-shard-size=2"))["axes"]
    assert axes == [{"group_size": 2, "nodes": 2, "ranks_per_node": 1},
                    {"group_size": 2, "nodes": 1, "ranks_per_node": 2}]
    flat = sim_json(compile_plan(tmp_path, 3, 4))
    assert flat["axes"] == [{"group_size": 4, "nodes": 2,
                             "ranks_per_node": 2}]
    # What leaves a node: a ring over 4 ranks on 2 nodes crosses the
    # network on 2 of its 4 hops; MiCS's axis 0 (one rank per node) on all
    # of them, its axis 1 on none.
    sent = flat["comm_bytes"]["per_axis"]
    assert flat["comm_bytes"]["network"] == round(sent[0] / 2)
    mics = sim_json(compile_plan(tmp_path, 3, 4, "mics-shard-size=2"))
    assert mics["comm_bytes"]["network"] == \
        mics["comm_bytes"]["per_axis"][0]


def test_model_axis_sits_in_a_node(tmp_path):
    # GPT-2 at (dp, tp) = (2, 2) on 2 nodes of 2: the model axis pairs
    # consecutive ranks {0, 1}, inside a node, and sends only over NVLink;
    # the data axis pairs {0, 2}, one rank per node, all of whose bytes
    # leave the node. Each axis's communication time is reported apart.
    report = sim_json(compile_plan(tmp_path, 1, 4, model_parallel=2))
    assert report["hierarchy"] == [2, 2]
    assert report["axes"] == [
        {"group_size": 2, "nodes": 2, "ranks_per_node": 1},
        {"group_size": 2, "nodes": 1, "ranks_per_node": 2}]
    data, model = report["comm_bytes"]["per_axis"]
    assert data > 0 and model > 0
    assert report["comm_bytes"]["network"] == data
    by_axis = report["comm_ms_by_axis"]
    assert len(by_axis) == 2 and min(by_axis) > 0
    assert sum(by_axis) == pytest.approx(report["comm_busy_ms"], rel=1e-9)
    assert report["ops"]["sbp.to_partial"]["count"] > 0


def test_faster_links_shorten_communication(tmp_path):
    plan = compile_plan(tmp_path, 3, 4)
    slow = sim_json(plan, FOUR)
    fast = sim_json(plan, FOUR.replace("inter=10GB/s", "inter=100GB/s"))
    assert fast["comm_busy_ms"] < slow["comm_busy_ms"]
    assert fast["compute_ms"] == slow["compute_ms"]
    assert slow["step_ms"] >= slow["compute_ms"]
    # The memory per rank is the plan's.
    plan_json = json.loads(open(plan).read())
    assert slow["memory"]["device_bytes"] == plan_json["arena_bytes"]
    assert slow["memory"]["fits"] is True


def test_efficiency_flags_scale_the_kernels(tmp_path):
    # Wide enough that the matmuls are compute-bound on an H100.
    plan = str(tmp_path / "wide.zplan")
    subprocess.run([os.environ["ZEROSBP_COMPILE"], "--num-layers=1",
                    "--hidden-size=256", "--num-attention-heads=4",
                    "--seq-length=64", "--vocab-size=64", "--batch-size=64",
                    "--world=4", "--stage=3", "--report=none", "-o", plan],
                   check=True)
    base = sim_json(plan)
    code, out, err = sim(plan, "--topology", FOUR, "--device", "h100",
                         "--matmul-efficiency", "0.35", "--report", "json")
    assert code == 0, err
    half = json.loads(out)
    # Half the preset's 0.7: the matmul rate halves, compute-bound matmuls
    # take longer, and the collectives do not change.
    assert half["device"]["matmul_tflops_f32"] == pytest.approx(
        base["device"]["matmul_tflops_f32"] / 2)
    assert half["ops"]["nn.matmul"]["ms"] > base["ops"]["nn.matmul"]["ms"]
    assert half["comm_busy_ms"] == base["comm_busy_ms"]


def test_text_report(tmp_path):
    plan = compile_plan(tmp_path, 3, 4, "mics-shard-size=2")
    code, out, err = sim(plan, "--topology", FOUR, "--device", "a100")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "zero-sim: %s (4 ranks, stage 3) on 2 x 2, a100" % plan
    assert lines[1].startswith("  step ")
    assert any(line.startswith("  network ") for line in lines)
    kernels = [line for line in lines if line.startswith("  top kernels ")]
    assert len(kernels) == 1 and kernels[0].count(" ms (") == 4
    assert any(line.startswith("  axis 1 sends ") and
               "(groups of 2 over 1 node)" in line for line in lines)
    assert lines[-1].startswith("  memory per rank  ") and \
        lines[-1].endswith("(fits)")


@pytest.mark.parametrize("args,message", [
    ([], "no plan file given"),
    (["PLAN"], "--topology is required"),
    (["PLAN", "--topology", FOUR], "give one of --device and --device-file"),
    (["PLAN", "--topology", "nodes=2", "--device", "h100"],
     "--topology: nodes= and ranks_per_node= are required (e.g. "
     "nodes=2,ranks_per_node=8,intra=450GB/s,inter=50GB/s,latency=5us)"),
    (["PLAN", "--topology", FOUR, "--device", "tpu"],
     "--device: unknown device 'tpu' (built in: a100, h100, h200, v100; or "
     "--device-file FILE)"),
    (["PLAN", "--topology", "nodes=1,ranks_per_node=2,intra=1GB/s,latency=0",
      "--device", "h100"],
     "the plan runs on 4 ranks, the topology has 2 (nodes x ranks_per_node);"
     " compile for the topology's ranks"),
    (["PLAN", "--topology", FOUR, "--device", "h100", "--threads", "2"],
     "--threads applies to CPU devices (a device file with \"cores\")"),
    (["PLAN", "--topology", FOUR, "--device", "h100", "--algorithm", "bus"],
     "--algorithm: expected auto, ring, tree or direct, got 'bus'"),
    (["PLAN", "--bogus"], "unknown option '--bogus'"),
    (["PLAN", "--topology", FOUR, "--device", "h100",
      "--matmul-efficiency", "1.5"],
     "--matmul-efficiency must be in (0, 1], got 1.5"),
    (["PLAN", "--topology", FOUR, "--device", "h100",
      "--memory-efficiency", "nan"],
     "--memory-efficiency must be in (0, 1], got nan"),
    (["PLAN", "PLAN"], "unexpected argument 'PLAN'"),
])
def test_bad_input_is_one_line(tmp_path, args, message):
    plan = compile_plan(tmp_path, 1, 4)
    code, out, err = sim(*[plan if a == "PLAN" else a for a in args])
    assert code == 1 and out == ""
    first, usage = err.splitlines()[0], err.splitlines()[1:]
    assert first == "zero-sim: " + message.replace("PLAN", plan)
    assert all(line.startswith("usage: zero-sim") for line in usage)


def test_bad_device_file_and_plan(tmp_path):
    plan = compile_plan(tmp_path, 1, 4)
    device = tmp_path / "dev.json"
    device.write_text('{"name": "x", "vector_flops": 1e9}')
    code, _, err = sim(plan, "--topology", FOUR, "--device-file", device)
    assert code == 1
    assert err == "zero-sim: %s: 'matmul_flops' must be an object " \
        "{\"f32\": ..., \"f16\": ...}\n" % device
    broken = tmp_path / "broken.zplan"
    broken.write_text(open(plan).read()[:1000])
    code, _, err = sim(broken, "--topology", FOUR, "--device", "h100")
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith("zero-sim: %s: " % broken)


def test_help_lists_the_flags():
    code, out, err = sim("--help")
    assert code == 0 and err == ""
    assert out.startswith("usage: zero-sim model.zplan --topology ")
    for flag in ["--topology", "--device", "--device-file", "--threads",
                 "--algorithm", "--matmul-efficiency", "--memory-efficiency",
                 "--report", "--report-file"]:
        assert "\n  %s " % flag in out, flag


def test_hpz_backward_gathers_wait_for_the_backward(tmp_path):
    # hpZ's backward gathers read the secondary partition, sliced in the
    # forward; they are parameter gathers all the same, issued before their
    # first use in the backward (within the prefetch budget), so the step
    # holds one secondary partition per parameter, not a second gathered
    # copy of the model.
    model = [flag for flag in GPT2 if not flag.startswith(
        ("--num-layers", "--hidden-size"))] + ["--num-layers=8",
                                               "--hidden-size=64"]
    budget = ("stage3-prefetch-bucket-size=20000 "
              "stage3-max-live-parameters=40000")

    def compile_report(extra):
        plan = tmp_path / ("p%s.zplan" % len(extra))
        out = subprocess.run(
            [os.environ["ZEROSBP_COMPILE"], *model, "--world=4",
             "--stage=3", f"--pipeline={PIPELINE} {budget} {extra}",
             "--report=json", "-o", str(plan)],
            check=True, capture_output=True, text=True).stdout
        return json.loads(out), json.loads(plan.read_text())["memory"]

    report, flat = compile_report("")
    _, hpz = compile_report("hpz-partition-size=2")
    params = report["params"]
    assert params == 405120  # 8 layers of hidden 64.
    secondary = params * 4 // 2
    assert hpz["peak"]["activation"] <= \
        flat["peak"]["activation"] + secondary + params * 4 // 10
    assert hpz["arena"] < flat["arena"]
