"""One step's timeline (nn.Graph.trace_step, zero-run --trace): every
instruction of the plan on the compute stream, every collective on the
communication stream, and waits that end only after their collective."""

import json
import os
import subprocess

import pytest

import zerosbp as zs

import models


def traced_mlp(stage, world=2):
    zs.manual_seed(0)
    model = models.Mlp()
    graph = models.train_graph(
        model, zs.optim.Adam(model.parameters()), stage=stage, world=world,
        configure=lambda g: g.config.set_pipeline_options(
            "overlap-comm=true reduce-bucket-size=8192 "
            "allgather-bucket-size=8192"))
    batches = models.mlp_batches(2, batch=32)
    graph(*batches[0])
    return graph, graph.trace_step(*batches[1])


def spans(trace, rank, tid):
    return [e for e in trace["traceEvents"]
            if e["ph"] == "X" and e["pid"] == rank and e["tid"] == tid]


def local_ir_ops(graph, op):
    return graph.ir(after="zero-export-plan").count(op)


@pytest.mark.parametrize("stage", [0, 2, 3])
def test_streams_hold_the_plan_and_waits_follow_collectives(stage):
    graph, trace = traced_mlp(stage)
    starts = local_ir_ops(graph, "sbp.collective_start ")
    waits = local_ir_ops(graph, "sbp.collective_wait ")
    assert starts > 1 and waits == starts
    for rank in range(2):
        compute, comm = spans(trace, rank, 0), spans(trace, rank, 1)
        assert len(comm) == starts
        assert all(e["cat"] == "collective" for e in comm)
        assert sum(e["cat"] == "wait" for e in compute) == waits
        assert {e["cat"] for e in compute} >= {"forward", "backward",
                                               "optimizer"}
        # One stream runs one thing at a time, in order.
        for stream in (compute, comm):
            for before, after in zip(stream, stream[1:]):
                assert after["ts"] >= before["ts"] + before["dur"] - 1e-3
        # A wait cannot end before the collective of its bucket ended.
        ends = {e["args"]["bucket"]: e["ts"] + e["dur"] for e in comm}
        for wait in (e for e in compute if e["cat"] == "wait"):
            assert wait["ts"] + wait["dur"] >= ends[wait["args"]["bucket"]] \
                - 1e-3


def test_trace_names_the_ops():
    graph, trace = traced_mlp(2)
    names = {e["name"] for e in spans(trace, 0, 0)}
    assert {"nn.matmul", "nn.adam", "collective_wait"} <= names
    comm = {e["name"] for e in spans(trace, 0, 1)}
    assert comm <= {"reduce_scatter", "all_gather", "all_reduce"}
    assert "reduce_scatter" in comm and "all_gather" in comm


def test_zero_run_writes_the_last_steps_trace(tmp_path):
    plan = tmp_path / "mlp.zplan"
    subprocess.run([os.environ["ZEROSBP_COMPILE"],
                    os.path.join("examples", "mlp", "mlp.mlir"), "--world=4",
                    "--stage=3", "--report=none", "-o", str(plan)],
                   check=True)
    trace_file = tmp_path / "trace.json"
    subprocess.run([os.environ["ZEROSBP_RUN"], str(plan), "--steps=2",
                    "--trace", str(trace_file), "--quiet"], check=True)
    trace = json.loads(trace_file.read_text())
    assert sorted({e["pid"] for e in trace["traceEvents"]}) == [0, 1, 2, 3]
    names = {e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"compute", "communication"}
    for rank in range(4):
        assert any(e["name"] == "all_gather" for e in spans(trace, rank, 1))


def test_zero_run_trace_to_an_unwritable_path_is_an_error(tmp_path):
    plan = tmp_path / "mlp.zplan"
    subprocess.run([os.environ["ZEROSBP_COMPILE"],
                    os.path.join("examples", "mlp", "mlp.mlir"), "--world=4",
                    "--report=none", "-o", str(plan)], check=True)
    result = subprocess.run(
        [os.environ["ZEROSBP_RUN"], str(plan), "--steps=1", "--quiet",
         "--trace", str(tmp_path / "missing" / "trace.json")],
        capture_output=True, text=True)
    assert result.returncode == 1
    assert "trace.json: cannot write the trace" in result.stderr
    assert result.stderr.count("\n") == 1
