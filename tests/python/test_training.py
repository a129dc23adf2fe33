"""Models written in Python train exactly as the same models built in C++
and run through zero-compile / zero-run, and ZeRO stages 0-3 agree."""

import os
import re

import numpy as np
import pytest

import zerosbp as zs
from zerosbp import nn

import cli
import models

REPO = os.getcwd()
STEPS = 4


def initial_state(model):
    return {k: v.copy() for k, v in model.state_dict().items()}


def train(graph, batches):
    return np.array([graph(*b) for b in batches], dtype=np.float32)


def zero_flags(stage, optimizer="optimizer=adam lr=0.01"):
    return (f"--pipeline=stage={stage} shard-min-size=1 "
            f"stage3-param-persistence-threshold=0 {optimizer}")


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_mlp_equals_zero_run(tmp_path, stage):
    zs.manual_seed(1)
    model = models.Mlp()
    init = initial_state(model)
    batches = models.mlp_batches(1, batch=64) * STEPS  # Loss must fall.
    graph = models.train_graph(model, zs.optim.Adam(model.parameters(),
                                                    lr=0.01),
                               stage=stage, world=4)
    losses = train(graph, batches)
    cli_losses, cli_params = cli.run_cli(
        tmp_path, [os.path.join(REPO, "examples/mlp/mlp.mlir"),
                   zero_flags(stage)],
        init, (["x", "labels"], batches), world=4)
    # The same IR from Python and from the .mlir file: bit for bit.
    np.testing.assert_array_equal(losses, cli_losses)
    trained = model.state_dict()
    assert sorted(trained) == sorted(cli_params)
    for name, value in trained.items():
        np.testing.assert_array_equal(value, cli_params[name], err_msg=name)
    assert losses[-1] < losses[0]


GPT2 = dict(vocab=64, seq=8, embed=32, heads=4, layers=2)
BATCH = 4


def gpt2_graph(stage, world, sgd=False):
    zs.manual_seed(2)
    model = models.Gpt2(**GPT2)
    optimizer = (zs.optim.SGD(model.parameters(), lr=0.1) if sgd else
                 zs.optim.Adam(model.parameters(), lr=0.01))
    graph = models.train_graph(model, optimizer, stage=stage, world=world)
    return model, graph


@pytest.mark.parametrize("stage", [0, 2, 3])
def test_gpt2_equals_zero_run(tmp_path, stage):
    # SGD: its update is linear in the gradient, so float32 noise from the
    # different op sequence stays noise (Adam's normalization can turn the
    # noise of a near-zero gradient into an lr-sized step).
    model, graph = gpt2_graph(stage, world=2, sgd=True)
    init = initial_state(model)
    batches = models.gpt2_batches(STEPS, BATCH, GPT2["seq"], GPT2["vocab"])
    losses = train(graph, batches)
    cli_losses, cli_params = cli.run_cli(
        tmp_path, [f"--num-layers={GPT2['layers']}",
                   f"--hidden-size={GPT2['embed']}",
                   f"--num-attention-heads={GPT2['heads']}",
                   f"--seq-length={GPT2['seq']}",
                   f"--vocab-size={GPT2['vocab']}",
                   f"--batch-size={BATCH}",
                   zero_flags(stage, "optimizer=sgd lr=0.1")],
        init, (["tokens", "labels"], batches), world=2)
    # Python's graph has extra reshapes around (batch, seq, embed) tensors;
    # the arithmetic is the same up to float32 rounding.
    np.testing.assert_allclose(losses, cli_losses, rtol=1e-5)
    trained = model.state_dict()
    for name, value in cli_params.items():
        np.testing.assert_allclose(trained[name], value, rtol=1e-4,
                                   atol=1e-6, err_msg=name)
    assert losses[-1] < losses[0]


def test_gpt2_stages_agree_bit_for_bit():
    batches = models.gpt2_batches(STEPS, 6, GPT2["seq"], GPT2["vocab"])
    results = []
    for stage in [0, 1, 2, 3]:
        model, graph = gpt2_graph(stage, world=3)
        results.append((train(graph, batches), model.state_dict()))
    losses0, params0 = results[0]
    for stage, (losses, params) in enumerate(results[1:], start=1):
        np.testing.assert_array_equal(losses, losses0,
                                      err_msg=f"stage {stage}")
        for name in params0:
            np.testing.assert_array_equal(params[name], params0[name],
                                          err_msg=f"stage {stage} {name}")


def test_mlp_matches_numpy_sgd_step():
    """One SGD step against a float64 hand derivation of the MLP."""
    zs.manual_seed(4)
    model = models.Mlp(hidden=16)
    init = initial_state(model)
    (x, y), = models.mlp_batches(1, batch=8)
    graph = models.train_graph(model, zs.optim.SGD(model.parameters(),
                                                   lr=0.5), stage=2, world=2)
    loss = graph(x, y)
    w1, b1 = init["fc1.weight"].astype(np.float64), init["fc1.bias"]
    w2, b2 = init["fc2.weight"].astype(np.float64), init["fc2.bias"]
    h = x @ w1.T + b1
    a = np.maximum(h, 0)
    z = a @ w2.T + b2
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    expected = -np.mean(np.log(p[np.arange(8), y]))
    dz = p.copy()
    dz[np.arange(8), y] -= 1
    dz /= 8
    dw2 = dz.T @ a
    dh = (dz @ w2) * (h > 0)
    dw1 = dh.T @ x
    assert abs(float(loss) - expected) < 1e-5 * abs(expected)
    trained = model.state_dict()
    np.testing.assert_allclose(trained["fc2.weight"], w2 - 0.5 * dw2,
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(trained["fc1.weight"], w1 - 0.5 * dw1,
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(trained["fc1.bias"],
                               b1 - 0.5 * dh.sum(0), rtol=1e-4, atol=1e-6)


def test_amp_accumulation_and_clipping_reach_the_compiler():
    def configure(graph):
        graph.config.enable_amp(True, dtype="bf16")
        graph.config.set_gradient_accumulation_steps(2)
        graph.config.set_gradient_clipping(1.0)

    zs.manual_seed(5)
    model = models.Mlp(hidden=32)
    graph = models.train_graph(model, zs.optim.AdamW(model.parameters(),
                                                     lr=0.01),
                               stage=2, world=2, configure=configure)
    batch = models.mlp_batches(1, batch=16)[0]
    losses = train(graph, [batch] * STEPS)
    config = graph.report["config"]
    assert config["bf16"]["enabled"] is True
    assert config["gradient_accumulation_steps"] == 2
    assert config["gradient_clipping"] == 1
    assert config["optimizer"]["type"] == "AdamW"
    assert "precision=bf16" in repr(graph)
    assert re.search(r"bf16", graph.ir(after="zero-amp"))
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    # Masters keep fp32 values: the saved parameters are not bf16-rounded.
    weight = model.state_dict()["fc1.weight"]
    assert np.any(weight.view(np.uint32) & 0xFFFF)
    times = graph.step_times()
    assert len(times) == 2 and len(times[0]) == STEPS
    assert all(step["step_ms"] > 0 for step in times[0])
