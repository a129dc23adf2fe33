"""Optimizer offload through the Python API (docs/design.md#offload):
set_offload_optimizer keeps the losses and parameters bit for bit, moves
the optimizer state off the device arena, and the measured peaks of every
arena equal the plan's; zero-compile's report reproduces DeepSpeed's
model-state estimates, checked here against DeepSpeed's formulas written
out again and against the plan."""

import json
import os
import subprocess

import numpy as np
import pytest

import zerosbp as zs

import models

VOCAB, SEQ, EMBED, HEADS, LAYERS = 61, 16, 32, 2, 2


def run(stage, offload, tmp_path, world=2, steps=3, params=None):
    zs.manual_seed(1)
    model = models.Gpt2(VOCAB, SEQ, EMBED, HEADS, LAYERS)

    def configure(graph):
        if offload == "cpu":
            graph.config.set_offload_optimizer("cpu")
        elif offload == "nvme":
            graph.config.set_offload_optimizer(
                "nvme", nvme_path=str(tmp_path), buffer_count=2)
        if params:
            graph.config.set_offload_param(
                params, nvme_path=str(tmp_path) if params == "nvme" else None)

    graph = models.train_graph(
        model, zs.optim.Adam(model.parameters(), lr=0.01), stage=stage,
        world=world, configure=configure)
    batches = models.gpt2_batches(steps, 8, SEQ, VOCAB)
    losses = [float(graph(*b)) for b in batches]
    return losses, model.state_dict(), graph


@pytest.mark.parametrize("stage", [1, 2, 3])
@pytest.mark.parametrize("offload", ["cpu", "nvme"])
def test_offload_is_exact(stage, offload, tmp_path):
    plain_losses, plain_state, plain = run(stage, None, tmp_path)
    losses, state, graph = run(stage, offload, tmp_path)
    assert losses == plain_losses
    for name in plain_state:
        np.testing.assert_array_equal(state[name], plain_state[name])
    assert "zero-offload" in graph.passes
    assert "zero-offload" not in plain.passes
    planned = graph.memory_report()["planned"]
    before = plain.memory_report()["planned"]
    # The states leave the device arena for the host (cpu) or NVMe arena.
    assert planned["peak_bytes_by_role"]["opt_state"] == 0
    assert before["peak_bytes_by_role"]["opt_state"] > 0
    assert planned["arena_bytes"] < before["arena_bytes"]
    assert graph.report["offloaded_bytes_per_rank"][
        "host" if offload == "cpu" else "nvme"] >= \
        before["peak_bytes_by_role"]["opt_state"]
    # Nothing stays under nvme_path: the rank's file has no name.
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("params", ["cpu", "nvme"])
def test_parameter_offload_is_exact(params, tmp_path):
    """offload_param at stage 3, with and without offload_optimizer: the
    parameter shards leave the device arena, the losses and the trained
    parameters stay bit for bit."""
    plain_losses, plain_state, plain = run(3, None, tmp_path)
    for optimizer in (None, params):
        losses, state, graph = run(3, optimizer, tmp_path, params=params)
        assert losses == plain_losses
        for name in plain_state:
            np.testing.assert_array_equal(state[name], plain_state[name])
        offloaded = graph.report["offloaded_bytes_per_rank"]
        device = graph.report["bytes_per_rank"]
        before = plain.report["bytes_per_rank"]
        assert device["param"] == 0
        assert offloaded["host" if params == "cpu" else "nvme"] >= \
            before["param"]
        assert os.listdir(tmp_path) == []


def deepspeed_zero2(params, gpus, offload):
    """DeepSpeed's estimate_zero2_model_states_mem_needs, written out."""
    if offload:
        return int(params * max(4 * gpus, 16) * 1.5), int(2 * params)
    return int(params * 4 * gpus * 1.5), int(4 * params + int(16 * params /
                                                             gpus))


def deepspeed_zero3(params, largest, gpus, offload, offload_params, init):
    """DeepSpeed's estimate_zero3_model_states_mem_needs on one node."""
    largest_memory = 4 * largest
    if offload and offload_params:
        return (int(params * (18 if init else max(4 * gpus, 18)) * 1.5),
                int(largest_memory))
    if offload:
        return (int(params * (16 if init else max(4 * gpus, 16)) * 1.5),
                int(largest_memory + int(2 * params / gpus)))
    return (int((largest if init else params) * 4 * gpus * 1.5),
            int(largest_memory + int(18 * params / gpus)))


def test_deepspeed_estimates_in_the_report():
    flags = ["--num-layers=2", "--hidden-size=64", "--num-attention-heads=4",
             "--seq-length=32", "--vocab-size=512", "--world=4",
             "--report=json"]

    def report(pipeline):
        out = subprocess.run([os.environ["ZEROSBP_COMPILE"], *flags,
                              "--pipeline=" + pipeline],
                             check=True, capture_output=True, text=True)
        return json.loads(out.stdout)

    offloaded = report("stage=2 precision=bf16 offload-optimizer=cpu")
    estimates = offloaded["deepspeed_estimates"]
    params = offloaded["params"]
    # GPT-2's largest layer is the tied token embedding, vocab x hidden.
    assert estimates["largest_layer_params"] == 512 * 64
    assert estimates["total_params"] == params
    zero2 = [(row["host_bytes"], row["device_bytes"])
             for row in estimates["zero2"]]
    assert zero2 == [deepspeed_zero2(params, 4, True),
                     deepspeed_zero2(params, 4, False)]
    zero3 = [(row["host_bytes"], row["device_bytes"])
             for row in estimates["zero3"]]
    assert zero3 == [deepspeed_zero3(params, 512 * 64, 4, o, p, i)
                     for o, p in ((True, True), (True, False),
                                  (False, False))
                     for i in (True, False)]
    # The plan against DeepSpeed's ZeRO-2 + CPU offload row: the device
    # holds the bf16 parameters, 2Ψ, as DeepSpeed says; the fp32 masters,
    # Adam's moments and the gradient shard the update reads are in host
    # memory, 14Ψ per node less padding, inside DeepSpeed's 24Ψ (16Ψ and its
    # 1.5 buffer factor).
    plain = report("stage=2 precision=bf16")
    device = offloaded["bytes_per_rank"]
    assert device["param"] == estimates["zero2"][0]["device_bytes"]
    assert device["grad"] == device["master"] == device["opt_state"] == 0
    before = plain["bytes_per_rank"]
    host = offloaded["offloaded_bytes_per_rank"]["host"]
    assert host == before["grad"] + before["master"] + before["opt_state"]
    assert 4 * host < estimates["zero2"][0]["host_bytes"]


def _delayed_adam_reference(weight, bias, batches, lr, steps):
    """Softmax regression trained with ZeRO-Offload's delayed update, in
    float64: step t applies step t-1's gradient (zeros at step 1) with
    torch.optim.Adam's formulas and step count t. Returns the losses and
    the final parameters."""
    params = [weight.astype(np.float64), bias.astype(np.float64)]
    moments = [[np.zeros_like(p), np.zeros_like(p)] for p in params]
    delayed = [np.zeros_like(p) for p in params]
    losses = []
    for t, (x, y) in enumerate(batches[:steps], start=1):
        x = x.astype(np.float64)
        logits = x @ params[0].T + params[1]
        logits -= logits.max(axis=1, keepdims=True)
        probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        losses.append(-np.log(probs[np.arange(len(y)), y]).mean())
        dlogits = probs.copy()
        dlogits[np.arange(len(y)), y] -= 1
        dlogits /= len(y)
        grads = [dlogits.T @ x, dlogits.sum(axis=0)]
        for p, (m, v), g in zip(params, moments, delayed):
            m *= 0.9
            m += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            denom = np.sqrt(v) / np.sqrt(1 - 0.999 ** t) + 1e-8
            p -= lr / (1 - 0.9 ** t) * m / denom
        delayed = grads
    return losses, params


@pytest.mark.parametrize("device", ["cpu", "nvme"])
def test_delayed_update_matches_its_reference(device, tmp_path):
    """offload_optimizer with delayed_param_update (ZeRO-Offload's DPU) at
    stage 2 on 2 ranks trains a softmax regression as the float64
    reference of the delayed update does, within float32 rounding; the
    undelayed run does not match it."""
    steps, lr = 6, 0.05

    def train(delayed):
        zs.manual_seed(4)
        model = zs.nn.Linear(6, 4)
        start = {k: np.array(v) for k, v in model.state_dict().items()}

        def configure(graph):
            graph.config.set_offload_optimizer(
                device, nvme_path=str(tmp_path) if device == "nvme" else None,
                delayed_param_update=delayed)

        graph = models.train_graph(
            model, zs.optim.Adam(model.parameters(), lr=lr), stage=2,
            world=2, configure=configure)
        batches = models.small_mlp_batches(steps)
        losses = [float(graph(*b)) for b in batches]
        return start, batches, losses, model.state_dict()

    start, batches, losses, state = train(True)
    ref_losses, (ref_weight, ref_bias) = _delayed_adam_reference(
        start["weight"], start["bias"], batches, lr, steps)
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    np.testing.assert_allclose(state["weight"], ref_weight, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(state["bias"], ref_bias, rtol=1e-5, atol=1e-6)
    # Without the delay the first step is the same and the second is not.
    _, _, plain, _ = train(False)
    assert plain[0] == losses[0]
    assert abs(plain[1] - losses[1]) > 1e-4


def test_delayed_update_is_refused_where_it_would_mix_steps():
    model = zs.nn.Linear(6, 4)
    with pytest.raises(zs.Error, match="offload-optimizer-delayed-update: "
                       "not with gradient_clipping"):
        models.train_graph(
            model, zs.optim.Adam(model.parameters(), lr=0.1), stage=2,
            world=2, configure=lambda g: (g.config.set_offload_optimizer(
                "cpu", delayed_param_update=True),
                g.config.set_gradient_clipping(1.0)))
    fresh = models.train_graph(
        model, zs.optim.Adam(model.parameters(), lr=0.1), stage=2, world=2)
    with pytest.raises(ValueError, match="delayed_param_update must be True "
                       "or False"):
        fresh.config.set_offload_optimizer("cpu", delayed_param_update=1)
