"""g.ir(after=...) shows each pass's IR, with the collectives of the stage."""

import re

import numpy as np
import pytest

import zerosbp as zs

import models


def compiled_mlp(stage, world=4):
    zs.manual_seed(0)
    model = models.Mlp()
    graph = models.train_graph(model, zs.optim.Adam(model.parameters()),
                               stage=stage, world=world)
    graph(*models.mlp_batches(1, batch=64)[0])
    return graph


def count(pattern, text):
    return len(re.findall(pattern, text))


def test_passes_in_order():
    graph = compiled_mlp(2)
    assert graph.passes[:9] == ["capture", "zero-fold-transposes",
                                "zero-fuse-attention", "zero-fuse-epilogues",
                                "zero-autodiff", "zero-recompute-cheap",
                                "zero-optimizer", "zero-sbp-propagation",
                                "zero-stage"]
    assert "zero-partition" in graph.passes
    assert graph.passes[-1] == "zero-export-plan"
    capture = graph.ir(after="capture")
    assert 'nn.input "x"' in capture
    assert re.search(r'nn\.variable "fc1\.weight" param', capture)
    assert "nn.adam" not in capture
    assert "nn.adam" in graph.ir(after="zero-optimizer")


def test_stage0_all_reduces_gradients():
    local = compiled_mlp(0).ir(after="zero-partition")
    assert count(r"shard\.all_reduce", local) >= 1
    assert count(r"shard\.reduce_scatter", local) == 0
    assert count(r"shard\.all_gather", local) == 0


@pytest.mark.parametrize("stage", [1, 2])
def test_stages_1_2_reduce_scatter_and_gather(stage):
    graph = compiled_mlp(stage)
    stage_ir = graph.ir(after="zero-stage")
    # Optimizer states are split; parameters stay whole (B) in the model.
    assert re.search(r'nn\.variable "fc1\.weight\.exp_avg" opt_state[^\n]*'
                     r'tensor<32768xf32, #sbp\.global<\[S\(0\)\]', stage_ir)
    assert re.search(r'nn\.variable "fc1\.weight" param[^\n]*\[B\]',
                     stage_ir)
    local = graph.ir(after="zero-partition")
    assert count(r"shard\.reduce_scatter", local) >= 1
    assert count(r"shard\.all_gather", local) >= 1


def test_stage3_splits_parameters_and_gathers_before_use():
    graph = compiled_mlp(3)
    stage_ir = graph.ir(after="zero-stage")
    assert re.search(r'nn\.variable "fc1\.weight" param[^\n]*\[S\(0\)\]',
                     stage_ir)
    local = graph.ir(after="zero-partition")
    # Gathered for forward and again for backward: more than stage 2.
    stage2 = compiled_mlp(2).ir(after="zero-partition")
    assert count(r"shard\.all_gather", local) > count(r"shard\.all_gather",
                                                      stage2)


def test_ir_dump_and_print(tmp_path):
    graph = compiled_mlp(2)
    paths = graph.ir_dump(tmp_path)
    assert len(paths) == len(graph.passes)
    assert paths[0].endswith("00-capture.mlir")
    text = open(paths[graph.passes.index("zero-stage")]).read()
    assert text == graph.ir(after="zero-stage")
    printed = str(graph)
    assert printed.startswith("TrainGraph(world=4, stage=2)")
    assert re.search(r'nn\.matmul\(%\d+, %\d+\) : tensor<64x128xf32, '
                     r'#sbp\.global<\[S\(0\)\]', printed)
    assert "stage=2" in printed


def test_unknown_pass_lists_passes():
    graph = compiled_mlp(1)
    with pytest.raises(ValueError, match="no pass 'zero-stag'.*zero-stage"):
        graph.ir(after="zero-stag")


def test_reports_match_measurement():
    graph = compiled_mlp(2)
    memory = graph.memory_report()
    for rank in memory["measured"]:
        assert rank["model_states"] in (
            memory["planned"]["model_state_bytes"],
            memory["planned"]["model_state_bytes"] + 4)
        assert rank["high_water"] <= memory["planned"]["arena_bytes"]
    comm = graph.comm_report()
    for rank in comm["measured"]:
        for kind in ("reduce_scatter", "all_gather"):
            assert rank[kind] == comm["planned"][kind]
