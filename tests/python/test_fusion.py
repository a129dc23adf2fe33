"""Fusion (docs/design.md#fusion): attention compiles to one nn.attention
and nn.attention_grad, so no plan holds a heads x seq x seq tensor; the
fused step trains to the unfused step's losses within float32 rounding, and
its stages stay bit-identical; the loss reads low-precision logits with no
f32 copy."""

import json
import os
import subprocess

import numpy as np
import pytest

import zerosbp as zs
from zerosbp import nn

import models

SEQ = 32  # --preset=tiny: 2 layers, 4 heads, sequence 32, head dim 16.


def compile_tiny(tmp_path, name, *flags):
    """The tiny preset's plan and IR for `flags`."""
    plan, ir = tmp_path / f"{name}.zplan", tmp_path / f"{name}.mlir"
    subprocess.run([os.environ["ZEROSBP_COMPILE"], "--preset=tiny",
                    *flags, "--report=none", "-o", str(plan),
                    f"--emit-ir={ir}"], check=True)
    return json.loads(plan.read_text()), ir.read_text()


def square_values(plan):
    """Values of the plan shaped (..., seq, seq): attention probabilities."""
    return [v["shape"] for v in plan["values"]
            if len(v["shape"]) >= 3 and v["shape"][-2:] == [SEQ, SEQ]]


def ops(plan):
    return [i["op"] for i in plan["instructions"] if "op" in i]


CONFIGS = {
    "stage0": ["--world=1", "--stage=0"],
    "stage2": ["--world=2", "--stage=2"],
    "stage3": ["--world=4", "--stage=3"],
    "bf16": ["--world=2", "--stage=1", "--pipeline=precision=bf16"],
    "remat": ["--world=2", "--stage=3", "--checkpoint-activations"],
    "eval": ["--world=2", "--stage=3", "--eval"],
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_no_plan_holds_seq_by_seq(tmp_path, name):
    plan, _ = compile_tiny(tmp_path, name, *CONFIGS[name])
    assert square_values(plan) == []
    kinds = ops(plan)
    assert kinds.count("nn.attention") == (4 if name == "remat" else 2)
    assert kinds.count("nn.attention_grad") == (0 if name == "eval" else 2)
    assert "nn.softmax" not in kinds


def test_unfused_plan_keeps_probabilities(tmp_path):
    plan, _ = compile_tiny(tmp_path, "unfused", "--world=2", "--stage=2",
                           "--pipeline=fuse-attention=false")
    # Scores, probabilities and their gradients, per layer, per rank.
    assert [1, 4, SEQ, SEQ] in square_values(plan)
    assert "nn.attention" not in ops(plan)
    assert "nn.softmax" in ops(plan)


def test_bf16_loss_reads_bf16_logits(tmp_path):
    plan, ir = compile_tiny(tmp_path, "bf16", *CONFIGS["bf16"])
    # No cast of the (tokens, vocabulary) logits to f32 and back.
    assert "nn.cast" not in " ".join(
        line for line in ir.splitlines() if "x256xf32" in line)
    assert "nn.cross_entropy %" in ir and "-> tensor<f32>" in ir
    grads = [line for line in ir.splitlines() if "nn.cross_entropy_grad" in line]
    assert len(grads) == 1 and grads[0].rstrip().endswith("xbf16>")


def train_tiny(tmp_path, name, *flags, steps=4):
    plan = tmp_path / f"{name}.zplan"
    world = next(int(f.split("=")[1]) for f in flags if f.startswith("--world"))
    subprocess.run([os.environ["ZEROSBP_COMPILE"], "--preset=tiny", *flags,
                    "--report=none", "-o", str(plan)], check=True)
    report = tmp_path / f"{name}.json"
    subprocess.run([os.environ["ZEROSBP_RUN"], str(plan), f"--ranks={world}",
                    f"--steps={steps}", "--seed=3", "--report=json",
                    "--report-file", str(report), "--quiet"], check=True,
                   timeout=300)
    return np.array(json.loads(report.read_text())["losses"], np.float64)


def test_fused_losses_equal_unfused_within_float32_rounding(tmp_path):
    fused = train_tiny(tmp_path, "fused", "--world=2", "--stage=2")
    unfused = train_tiny(tmp_path, "unfused", "--world=2", "--stage=2",
                         "--pipeline=fuse-attention=false")
    # Measured: at most a few float32 ulps of the loss (about 6.2) apart.
    assert np.max(np.abs(fused - unfused) / np.abs(unfused)) <= 2e-6
    assert not np.array_equal(fused[:1], [0.0])


def test_fused_stages_are_bit_identical(tmp_path):
    losses = [train_tiny(tmp_path, f"s{stage}", "--world=2",
                         f"--stage={stage}") for stage in range(4)]
    for other in losses[1:]:
        np.testing.assert_array_equal(other, losses[0])


def numpy_attention(q, k, v, causal, scale):
    s = np.einsum("...qd,...kd->...qk", q, k) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p @ v


class Sdpa(nn.Graph):
    def __init__(self, causal, scale, options=None):
        super().__init__()
        self.causal, self.scale = causal, scale
        if options:
            self.config.set_pipeline_options(options)

    def build(self, q, k, v):
        return nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=self.causal, scale=self.scale)


@pytest.mark.parametrize("causal,scale", [(True, None), (False, 0.3)])
@pytest.mark.parametrize("fuse", [True, False])
def test_scaled_dot_product_attention_equals_numpy(causal, scale, fuse):
    rng = np.random.default_rng(4)
    q = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    k = rng.standard_normal((2, 3, 9 if causal else 5, 8)).astype(np.float32)
    v = rng.standard_normal((2, 3, k.shape[2], 6)).astype(np.float32)
    graph = Sdpa(causal, scale,
                 None if fuse else "fuse-attention=false").to(
                     zs.placement("cpu", ranks=range(2)))
    got = graph(q, k, v)
    want = numpy_attention(q.astype(np.float64), k.astype(np.float64),
                           v.astype(np.float64), causal,
                           scale if scale else 1 / np.sqrt(8))
    assert np.max(np.abs(got - want)) <= 1e-5
    fused_ir = graph.ir(after="zero-fold-transposes" if not fuse
                        else "zero-fuse-attention")
    assert ("nn.attention" in fused_ir) == fuse
    assert ("zero-fuse-attention" in graph.passes) == fuse


def test_scaled_dot_product_attention_refuses_what_it_lacks():
    f = nn.functional.scaled_dot_product_attention
    with pytest.raises(NotImplementedError, match="attn_mask is not"):
        f(None, None, None, attn_mask=1)
    with pytest.raises(NotImplementedError, match="dropout_p must be 0"):
        f(None, None, None, dropout_p=0.1)
