"""Activation checkpointing (zero-remat): losses and parameters equal those
without checkpointing bit for bit at ZeRO stages 0-3, and the activation
memory falls, measured equal to planned."""

import os
import subprocess
import json

import numpy as np
import pytest

import zerosbp as zs
from zerosbp import nn

import models

VOCAB, SEQ, EMBED, HEADS, LAYERS = 61, 16, 32, 2, 4


def run(stage, checkpoint, world=2, steps=3, dropout=0.0):
    zs.manual_seed(1)
    model = models.Gpt2(VOCAB, SEQ, EMBED, HEADS, LAYERS)
    if checkpoint:
        for block in model.h:
            assert zs.checkpoint(block) is block
    graph = models.train_graph(
        model, zs.optim.Adam(model.parameters(), lr=0.01), stage=stage,
        world=world)
    batches = models.gpt2_batches(steps, 8, SEQ, VOCAB)
    losses = [float(graph(*b)) for b in batches]
    return losses, model.state_dict(), graph


@pytest.mark.parametrize("stage", [0, 1, 2, 3])
def test_checkpointing_is_exact_and_saves_activations(stage):
    plain_losses, plain_state, plain = run(stage, checkpoint=False)
    losses, state, graph = run(stage, checkpoint=True)
    assert losses == plain_losses
    for name in plain_state:
        np.testing.assert_array_equal(state[name], plain_state[name])
    assert "zero-remat" in graph.passes and "zero-remat" not in plain.passes
    for g in (plain, graph):
        report = g.memory_report()
        planned = report["planned"]["peak_bytes_by_role"]["activation"]
        for measured in report["measured"]:
            assert measured["by_role"]["activation"] == planned
    before = plain.memory_report()["planned"]["peak_bytes_by_role"]
    after = graph.memory_report()["planned"]["peak_bytes_by_role"]
    # Four blocks: the activations kept between forward and backward drop
    # to the blocks' inputs. Fused attention and the cheap recomputation
    # already keep little else, so the drop is to about half here.
    assert after["activation"] < 0.6 * before["activation"]
    # Model states do not change.
    for role in ("param", "grad", "master", "opt_state"):
        assert after[role] == before[role], role


def test_recomputation_is_in_the_ir():
    _, _, graph = run(2, checkpoint=True, steps=1)
    captured = graph.ir(after="capture")
    assert "zero.checkpoint = 3" in captured  # One segment per block.
    remat = graph.ir(after="zero-remat")
    assert "zero.checkpoint" not in remat
    # Each block's attention runs again in the backward.
    autodiff = graph.ir(after="zero-autodiff")
    assert remat.count("nn.attention ") == \
        autodiff.count("nn.attention ") + LAYERS


def test_checkpoint_of_a_function_and_errors():
    zs.manual_seed(3)
    model = models.Mlp(hidden=32)
    x, y = models.mlp_batches(1, batch=8)[0]

    class Train(nn.Graph):
        def __init__(self, checkpointed):
            super().__init__()
            self.model, self.loss_fn = model, nn.CrossEntropyLoss()
            self.add_optimizer(zs.optim.SGD(model.parameters(), lr=0.1))
            self.checkpointed = checkpointed

        def build(self, x, y):
            hidden = (zs.checkpoint(lambda t: self.model.relu(
                self.model.fc1(t)), x) if self.checkpointed else
                self.model.relu(self.model.fc1(x)))
            loss = self.loss_fn(self.model.fc2(hidden), y)
            loss.backward()
            return loss

    # The segment's output is read by fc2 outside it: nothing to recompute,
    # and the same loss.
    init = model.state_dict()
    a = float(Train(True)(x, y))
    model.load_state_dict(init)
    b = float(Train(False)(x, y))
    assert a == b
    with pytest.raises(TypeError, match="checkpoint takes a module or a "
                       "function, got int"):
        zs.checkpoint(3, 4)

    class Nested(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(zs.optim.SGD(model.parameters(), lr=0.1))

        def build(self, x, y):
            out = zs.checkpoint(
                lambda t: zs.checkpoint(self.model, t), x)
            loss = nn.CrossEntropyLoss()(out, y)
            loss.backward()
            return loss

    with pytest.raises(zs.Error, match="checkpoint segments do not nest"):
        Nested()(x, y)


def test_zero_compile_checkpoint_activations(tmp_path):
    """The tutorial's --checkpoint-activations: one segment per block (or
    per --checkpoint-num-layers blocks); the activation peak falls and the
    model states stay."""
    def report(*flags):
        out = subprocess.run(
            [os.environ["ZEROSBP_COMPILE"], "--preset=tiny", "--world=2",
             "--stage=2", "--num-layers=4", "--batch-size=8",
             "--report=json", *flags],
            check=True, capture_output=True, text=True).stdout
        return json.loads(out)
    plain = report()
    every = report("--checkpoint-activations")
    pairs = report("--checkpoint-activations", "--checkpoint-num-layers=2")
    peak = lambda r: r["plan"]["memory_plan"]["peak_bytes_by_role"]
    # Two blocks per segment keep fewer block inputs but recompute two
    # blocks at once; here the LM head sets the peak of both.
    assert peak(every)["activation"] <= peak(pairs)["activation"] < \
        peak(plain)["activation"]
    assert peak(every)["param"] == peak(plain)["param"]
    # The recomputed matmuls, per rank (B = 4 sequences, half the batch of
    # 8, of T = 32 tokens; E = 64), counted as the unfused ops' products
    # (the fused ones compute the same products):
    # a block recomputes QKV (6 B T E^2), attention (4 B T^2 E), the
    # projection (2 B T E^2) and fc (8 B T E^2), not fc2, whose input the
    # backward reads and whose output feeds the block's output. A segment
    # of two blocks also recomputes the first block's fc2.
    b, t, e = 4, 32, 64
    block = 16 * b * t * e * e + 4 * b * t * t * e
    fc2 = 8 * b * t * e * e
    assert "remat" not in plain
    assert every["remat"]["recompute_flops_per_rank"] == 4 * block
    assert every["remat"]["recompute_flops"] == 2 * 4 * block
    assert pairs["remat"]["recompute_flops_per_rank"] == \
        2 * (2 * block + fc2)
    passes = [p["pass"] for p in every["pass_ms"]]
    autodiff = passes.index("zero-autodiff")
    assert passes[autodiff + 1] == "zero-remat"


def test_activation_memory_budget(tmp_path):
    """--activation-memory-budget checkpoints the fewest blocks whose
    planned activation peak fits; it never exceeds the budget and never
    recomputes more than checkpointing every block at the same peak."""
    def report(*flags, check=True):
        done = subprocess.run(
            [os.environ["ZEROSBP_COMPILE"], "--preset=tiny", "--world=2",
             "--stage=2", "--num-layers=8", "--batch-size=8",
             "--report=json", *flags],
            capture_output=True, text=True)
        if check:
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout)
        return done
    activation = lambda r: \
        r["plan"]["memory_plan"]["peak_bytes_by_role"]["activation"]
    plain = activation(report())
    every = activation(report("--checkpoint-activations"))
    assert every < plain
    for budget in (plain, (plain + every) // 2, every):
        chosen = report(f"--activation-memory-budget={budget}")
        choice = chosen["activation_checkpointing"]
        blocks = len(choice["checkpointed_blocks"])
        assert activation(chosen) == choice["activation_peak_bytes"] <= \
            budget
        assert choice["activation_peak_without_bytes"] == plain
        assert 0 <= blocks <= 8
        if budget == plain:
            assert blocks == 0 and choice["recompute_flops_per_rank"] == 0
    per_block = report(f"--activation-memory-budget={every}")
    assert len(per_block["activation_checkpointing"]
               ["checkpointed_blocks"]) <= 8
    done = report(f"--activation-memory-budget={every - 1}", check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"zero-compile: activation memory budget: {every - 1} bytes cannot "
        f"be met: with all 8 segments checkpointed the planned activation "
        f"peak per rank is {every} bytes (without, {plain})")
    done = report("--activation-memory-budget=5", "--checkpoint-activations",
                  check=False)
    assert done.stderr.strip() == (
        "zero-compile: --activation-memory-budget picks the checkpoints "
        "itself; drop --checkpoint-activations")


@pytest.mark.parametrize("world", [2, 4])
def test_stage3_recompute_gathers_match_the_formula(world):
    """At stage 3 a recomputed op reads its parameters like the forward:
    with stage3_max_reuse_distance 0 every parameter the recomputation reads
    and the backward does not (per GPT-2 block: the layer-norm betas 2E and
    the biases of c_attn 3E, c_proj E and c_fc 4E, 10E in all) is gathered
    once more, so all-gathers send 10 E L (N-1)/N elements more; at the
    default distance the forward's copies serve it and nothing more is
    sent (docs/design.md#activation-checkpointing)."""
    embed, layers = 64, 4

    def sent(distance, *flags):
        out = subprocess.run(
            [os.environ["ZEROSBP_COMPILE"], "--preset=tiny",
             f"--world={world}", "--stage=3", f"--num-layers={layers}",
             "--pipeline=stage3-param-persistence-threshold=0 "
             f"stage3-max-reuse-distance={distance}", "--report=json",
             *flags], check=True, capture_output=True, text=True).stdout
        return json.loads(out)["comm_bytes_per_step"]

    for distance, extra in ((0, 10 * embed * layers * 4 * (world - 1) //
                             world), (1000000000, 0)):
        plain = sent(distance)
        checkpointed = sent(distance, "--checkpoint-activations")
        assert checkpointed["all_gather"] - plain["all_gather"] == extra
        assert checkpointed["reduce_scatter"] == plain["reduce_scatter"]


def test_python_activation_memory_budget():
    """set_activation_memory_budget keeps the fewest checkpointed modules
    that fit, in call order; the losses stay exact."""
    plain_losses, _, plain = run(2, checkpoint=False)
    _, _, every = run(2, checkpoint=True)
    top = plain.memory_report()["planned"]["peak_bytes_by_role"]["activation"]
    bottom = every.memory_report()["planned"]["peak_bytes_by_role"][
        "activation"]
    budget = (top + bottom) // 2
    zs.manual_seed(1)
    model = models.Gpt2(VOCAB, SEQ, EMBED, HEADS, LAYERS)
    for block in model.h:
        zs.checkpoint(block)
    graph = models.train_graph(
        model, zs.optim.Adam(model.parameters(), lr=0.01), stage=2, world=2,
        configure=lambda g: g.config.set_activation_memory_budget(budget))
    batches = models.gpt2_batches(3, 8, SEQ, VOCAB)
    assert [float(graph(*b)) for b in batches] == plain_losses
    choice = graph.report["activation_checkpointing"]
    kept = choice["checkpointed_segments"]
    assert 0 < len(kept) < LAYERS and kept == list(range(len(kept)))
    peak = graph.memory_report()["planned"]["peak_bytes_by_role"][
        "activation"]
    assert peak == choice["activation_peak_bytes"] <= budget
    assert choice["activation_peak_without_bytes"] == top
    for measured in graph.memory_report()["measured"]:
        assert measured["by_role"]["activation"] == peak
    with pytest.raises(ValueError, match="expected a number of bytes >= 1"):
        graph.config.set_activation_memory_budget(0)
