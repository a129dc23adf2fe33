"""examples/mlp/train.py, OneFlow's ZeRO tutorial: stages 0-3 train to the
same losses and parameters bit for bit, stage 0 equals a NumPy float64
implementation of the same training, and each stage's per-rank model
states and bytes sent equal the ones derived by hand from enable_zero's
shard_min_size rule.

Run: bazel test //tests/examples:test_mlp_tutorial
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.getcwd(), "examples", "mlp"))
import train  # noqa: E402

STEPS, RANKS, LR = 12, 4, 1e-3
# The tutorial's MLP, PyTorch names and element counts.
SIZES = {"0.weight": 128 * 256, "0.bias": 128, "2.weight": 10 * 128,
         "2.bias": 10}
SHARD_MIN_SIZE = 1024  # enable_zero's default


@pytest.fixture(scope="module")
def batches():
    return train.make_batches(STEPS)


@pytest.fixture(scope="module")
def results(batches):
    return {stage: train.train_stage(stage, batches, RANKS)
            for stage in train.STAGES}


def reference_training(batches):
    """SGD on the MLP in float64: mean cross-entropy over the batch,
    p -= lr * grad. Returns the losses and the final parameters."""
    p = {n: v.astype(np.float64)
         for n, v in train.make_model().state_dict().items()}
    losses = []
    for x, y in batches:
        x = x.astype(np.float64)
        h_pre = x @ p["0.weight"].T + p["0.bias"]
        h = np.maximum(h_pre, 0)
        logits = h @ p["2.weight"].T + p["2.bias"]
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1,
                                                         keepdims=True))
        rows = np.arange(len(y))
        losses.append(-log_probs[rows, y].mean())
        d_logits = np.exp(log_probs)
        d_logits[rows, y] -= 1
        d_logits /= len(y)
        d_h = d_logits @ p["2.weight"] * (h_pre > 0)
        grads = {"2.weight": d_logits.T @ h, "2.bias": d_logits.sum(0),
                 "0.weight": d_h.T @ x, "0.bias": d_h.sum(0)}
        for name in p:
            p[name] -= LR * grads[name]
    return np.array(losses), p


def test_stage0_equals_numpy_float64(results, batches):
    losses, params = reference_training(batches)
    np.testing.assert_allclose(results[0]["losses"], losses, rtol=2e-6)
    for name, value in params.items():
        np.testing.assert_allclose(results[0]["parameters"][name], value,
                                   rtol=1e-5, atol=1e-7, err_msg=name)
    # All labels are 1: SGD makes class 1 likelier (each step draws new x,
    # so single steps may go up).
    assert losses[-3:].mean() < losses[:3].mean() - 0.05


def test_stages_agree_bit_for_bit(results):
    assert train.disagreements([results[s] for s in train.STAGES]) == []
    for stage in [1, 2, 3]:
        assert results[stage]["losses"] == results[0]["losses"]


def per_rank(stage_partitions, name):
    """Elements of `name` one rank holds: a padded shard when partitioned,
    the whole tensor when under shard_min_size."""
    n = SIZES[name]
    if stage_partitions and n >= SHARD_MIN_SIZE:
        return -(-n // RANKS)
    return n


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_model_states_per_rank(results, stage):
    # fp32 SGD has no optimizer state and no master copy; gradients are
    # partitioned from stage 2, parameters at stage 3 (enable_zero has no
    # persistence threshold: shard_min_size alone keeps tensors whole).
    param = sum(4 * per_rank(stage >= 3, n) for n in SIZES)
    grad = sum(4 * per_rank(stage >= 2, n) for n in SIZES)
    r = results[stage]
    assert r["bytes_by_role"] == {"param": param, "grad": grad,
                                  "master": 0, "opt_state": 0}
    assert r["model_state_bytes"] == param + grad


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_bytes_sent_per_step(results, stage):
    share = (RANKS - 1) / RANKS
    split = [n for n in SIZES if stage >= 1 and SIZES[n] >= SHARD_MIN_SIZE]
    whole = [n for n in SIZES if n not in split]
    padded = {n: -(-SIZES[n] // RANKS) * RANKS for n in split}
    # Whole gradients and the loss are all-reduced: 2 T (N - 1) / N.
    all_reduce = sum(2 * 4 * SIZES[n] * share for n in whole) + 2 * 4 * share
    # Split gradients are reduce-scattered and split parameters gathered
    # after the update (stages 1, 2) or before the forward (stage 3):
    # T (N - 1) / N each. At stage 3 the backward reads fc2's weight (for
    # the hidden layer's gradient; fc1's input is data): the default
    # stage3_max_reuse_distance (1e9) keeps the forward's gathered copy for
    # it, so nothing is gathered twice.
    reduce_scatter = sum(4 * padded[n] * share for n in split)
    expected = {"all_reduce": all_reduce, "reduce_scatter": reduce_scatter,
                "all_gather": reduce_scatter}
    r = results[stage]
    # What the ranks counted in the last step: ranks own unequal chunks of
    # an uneven all-reduce, so the formula is their mean.
    assert r["sent"] == pytest.approx(expected, rel=1e-12)
    for measured in r["measured_sent"]:
        assert measured == pytest.approx(expected, abs=4 * RANKS)
    assert r["planned_sent"] == pytest.approx(expected, rel=1e-12)
