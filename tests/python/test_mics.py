"""MiCS and hpZ through Python: enable_zero(mics_shard_size=m) and
DeepSpeed's mics_shard_size lay 4 ranks out as 2 groups of 2, hold the
model states [B, S(0)] and train as flat ZeRO does; enable_zero(
hpz_partition_size=h) keeps a secondary copy for the backward and trains
as flat ZeRO does too."""

import numpy as np
import pytest

import zerosbp as zs

import models


def train(stage, mics, steps=3, deepspeed=False, stage_override=None):
    zs.manual_seed(5)
    model = models.Mlp(hidden=32)
    opt = zs.optim.Adam(model.parameters(), lr=0.01)

    def configure(graph):
        if deepspeed:
            graph.config.set_deepspeed_config({
                "train_batch_size": 16,
                "zero_optimization": {
                    "stage": stage if stage_override is None
                    else stage_override,
                    "mics_shard_size": mics}})
        elif mics:
            graph.config.enable_zero(True, stage=stage, shard_min_size=1,
                                     mics_shard_size=mics)

    graph = models.train_graph(model, opt, stage=None if deepspeed or mics
                               else stage, world=4, configure=configure)
    losses = [float(graph(x, y)) for x, y in models.mlp_batches(steps)]
    return graph, model, losses


@pytest.mark.parametrize("stage", [1, 2, 3])
def test_mics_trains_as_flat_zero(stage):
    _, flat_model, flat = train(stage, mics=0)
    graph, model, mics = train(stage, mics=2)
    np.testing.assert_allclose(mics, flat, rtol=1e-6)
    for name, value in flat_model.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[name], value,
                                   rtol=1e-5, atol=1e-7, err_msg=name)
    ir = graph.ir(after="zero-stage")
    assert "hierarchy = [2, 2]" in ir
    assert "[B, S(0)]" in ir


def test_deepspeed_key_and_its_default():
    graph, _, losses = train(3, mics=2, deepspeed=True)
    assert "[B, S(0)]" in graph.ir(after="zero-stage")
    _, _, flat = train(3, mics=-1, deepspeed=True)
    np.testing.assert_allclose(losses, flat, rtol=1e-6)


def test_refusals():
    # Checked when the graph is placed: enable_zero does not know its ranks.
    with pytest.raises(Exception, match="mics_shard_size: expected a "
                       "divisor of the world size 4, got 3"):
        train(2, mics=3)
    with pytest.raises(Exception, match="mics_shard_size: needs ZeRO stage "
                       "1, 2 or 3"):
        train(2, mics=2, deepspeed=True, stage_override=0)
    with pytest.raises(TypeError, match="mics_shard_size must be an int"):
        zs.nn.Graph().config.enable_zero(True, mics_shard_size="2")


def test_hpz_trains_as_flat_zero():
    def run(hpz):
        zs.manual_seed(5)
        model = models.Mlp(hidden=32)
        opt = zs.optim.Adam(model.parameters(), lr=0.01)

        def configure(graph):
            graph.config.enable_zero(True, stage=3, shard_min_size=1,
                                     hpz_partition_size=hpz)
            graph.config.set_pipeline_options(
                "stage3-param-persistence-threshold=0 "
                "stage3-max-reuse-distance=0")

        graph = models.train_graph(model, opt, world=4, configure=configure)
        losses = [float(graph(x, y)) for x, y in models.mlp_batches(3)]
        return graph, losses

    flat_graph, flat = run(0)
    graph, hpz = run(2)
    np.testing.assert_allclose(hpz, flat, rtol=1e-6)
    ir = graph.ir(after="zero-stage")
    assert "hierarchy = [2, 2]" in ir and "[B, S(0)]" in ir
    assert "hierarchy" not in flat_graph.ir(after="zero-stage")
    with pytest.raises(Exception, match="hpz_partition_size: needs ZeRO "
                       "stage 3"):
        zs.nn.Graph().config.enable_zero(True, stage=2,
                                         hpz_partition_size=2)
