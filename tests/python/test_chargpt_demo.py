"""The main demo (examples/chargpt) end to end at a small size: it trains,
its loss falls, its held-out losses (from inference graphs on the training
graph's parameters) equal a NumPy float64 forward, its stage table matches
the ZeRO formulas, it writes every artifact it promises, and a run resumed
from its checkpoint continues it."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import zerosbp as zs
from gpt2_reference import numpy_loss

sys.path.insert(0, os.path.join("examples", "chargpt"))
from model import Gpt2  # noqa: E402
from train import Corpus  # noqa: E402

DEMO = os.path.join("examples", "chargpt", "train.py")
SMALL = ["--layers=1", "--embed=32", "--heads=2", "--seq=16", "--batch=8",
         "--ranks=2", "--lr=1e-2"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("chargpt")
    result = subprocess.run(
        [sys.executable, DEMO, "--steps=40", *SMALL, "--compare-steps=2",
         "--checkpoint-every=20", "--eval-every=20", "--out", str(out)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    with open(out / "stages.json") as file:
        return out, result.stdout, json.load(file)


def test_progress_line_per_step(demo):
    _, stdout, _ = demo
    lines = [l for l in stdout.splitlines() if l.startswith("step ")]
    assert len(lines) == 40
    assert lines[-1].startswith("step 40/40  loss ")
    assert "tokens/s" in lines[-1] and "peak MiB/rank" in lines[-1]
    assert len(lines[-1].split("peak MiB/rank")[1].split()) == 2


def test_loss_falls(demo):
    _, _, summary = demo
    training = summary["training"]
    assert training["last"] < training["first"] - 0.3
    assert training["held_out_after"] < training["held_out_before"] - 0.3


def held_out_batch():
    """The demo's held-out batch for SMALL (seed 0, 2 ranks: 16 rows)."""
    corpus = Corpus(os.path.join("examples", "chargpt", "data",
                                 "proverbs_ecclesiastes.txt"))
    rng = np.random.default_rng(1)
    return corpus, corpus.batch(rng, corpus.held_out, 16, 16)


def test_held_out_losses_equal_numpy(demo, tmp_path):
    out, stdout, summary = demo
    training = summary["training"]
    assert [step for step, _ in training["held_out"]] == [0, 20, 40]
    for step, loss in training["held_out"]:
        assert f"chargpt: held-out loss {loss:.4f} at step {step}" in stdout
    corpus, (tokens, labels) = held_out_batch()
    # Before training: the initial model, rebuilt as the demo builds it.
    zs.manual_seed(0)
    initial = Gpt2(len(corpus.chars), 16, 32, 2, 1, seed=0).state_dict()
    want = numpy_loss(initial, 2, tokens, labels)
    assert abs(training["held_out_before"] - want) <= 1e-5 * want
    # After: the parameters of the last checkpoint, in float64.
    subprocess.run([os.environ["ZEROSBP_CHECKPOINT"], "to-fp32",
                    str(out / "checkpoints"),
                    str(tmp_path / "final.safetensors")], check=True)
    final = zs.load(str(tmp_path / "final.safetensors"))
    want = numpy_loss(final, 2, tokens, labels)
    assert abs(training["held_out_after"] - want) <= 1e-5 * want
    # The inference graph holds no parameter bytes of its own.
    line = [l for l in stdout.splitlines() if "the held-out graph runs" in l]
    assert len(line) == 1 and line[0].endswith("its own parameter bytes: 0")


def test_stage_table_matches_the_formulas(demo):
    _, _, summary = demo
    psi = summary["parameters"]
    rows = {r["stage"]: r for r in summary["stages"]}
    # fp32 Adam, every tensor partitioned, N = 2 (sizes here divide by 2).
    # Stage 0 holds every gradient at once, and with them the loss's seed
    # gradient (one f32).
    assert rows[0]["model_state_bytes"] == 16 * psi + 4
    assert rows[2]["model_state_bytes"] == 4 * psi + 12 * psi // 2
    assert rows[3]["model_state_bytes"] == 16 * psi // 2
    for row in rows.values():
        assert row["model_state_formula_bytes"] == pytest.approx(
            {0: 16 * psi, 1: 8 * psi + 4 * psi, 2: 10 * psi,
             3: 8 * psi}[row["stage"]])
        # 2 psi elements of 4 bytes, half of them sent; plus the loss's
        # all-reduce (one f32, half of 2T).
        assert row["sent_bytes_per_step"] == 4 * psi + 4
    losses = [r["losses"] for r in rows.values()]
    assert all(l == losses[0] for l in losses)


def test_attention_fusion_comparison(demo):
    out, stdout, summary = demo
    fusion = summary["attention_fusion"]
    assert fusion["max_rel_loss_diff"] <= 2e-6
    assert fusion["unfused"]["losses"] != fusion["fused"]["losses"][:1]
    assert "| fused |" in stdout and "| unfused |" in stdout
    # The trained plan has one attention op per layer, no softmax.
    final = sorted(os.listdir(out / "ir"))[-1]
    ir = (out / "ir" / final).read_text()
    assert "nn.attention " in ir and "nn.attention_grad " in ir
    assert "nn.softmax" not in ir


def test_artifacts(demo):
    out, stdout, _ = demo
    ir = sorted(os.listdir(out / "ir"))
    assert ir[0] == "00-capture.mlir" and "02-zero-fuse-attention.mlir" in ir
    assert "03-zero-fuse-epilogues.mlir" in ir and "08-zero-stage.mlir" in ir
    for name in ("memory_by_role.svg", "timeline.svg"):
        ET.parse(out / name)
    trace = json.loads((out / "timeline.json").read_text())
    assert {e["pid"] for e in trace["traceEvents"]} == {0, 1}
    samples = (out / "samples.txt").read_text().splitlines()
    assert [s.split(" ")[0] for s in samples] == ["My", "Wisdom", "The"]
    assert "Sampled from the trained model" in stdout


def test_numpy_forward_matches_a_hand_computation():
    # One layer of width 2 with every weight zero: logits are the ln_f bias
    # (zero) times wte, so every next character is equally likely.
    embed, vocab, seq = 2, 3, 4
    state = {"wte.weight": np.arange(6.0).reshape(vocab, embed),
             "wpe.weight": np.zeros((seq, embed)),
             "ln_f.weight": np.zeros(embed), "ln_f.bias": np.zeros(embed)}
    for name, shape in (("ln_1", (embed,)), ("ln_2", (embed,))):
        state[f"h.0.{name}.weight"] = np.ones(shape)
        state[f"h.0.{name}.bias"] = np.zeros(shape)
    for name, out_dim, in_dim in (("attn.c_attn", 3 * embed, embed),
                                  ("attn.c_proj", embed, embed),
                                  ("mlp.c_fc", 4 * embed, embed),
                                  ("mlp.c_proj", embed, 4 * embed)):
        state[f"h.0.{name}.weight"] = np.zeros((out_dim, in_dim))
        state[f"h.0.{name}.bias"] = np.zeros(out_dim)
    tokens = np.array([[0, 1, 2, 1]])
    labels = np.array([[1, 2, 0, 0]])
    assert numpy_loss(state, 1, tokens, labels) == pytest.approx(np.log(3))


def test_checkpoints(demo):
    out, stdout, _ = demo
    checkpoints = out / "checkpoints"
    assert (checkpoints / "latest").read_text().strip() == "step-00000040"
    # Every 20 steps and at the end, the newest 2 kept.
    assert sorted(p.name for p in checkpoints.glob("step-*")) == [
        "step-00000020", "step-00000040"]
    for step in ("step-00000020", "step-00000040"):
        assert (checkpoints / step / "manifest.json").is_file()
        assert f"chargpt: checkpoint {checkpoints / step} saved in " in stdout


def test_resume_continues_the_run(demo, tmp_path):
    out, _, _ = demo
    result = subprocess.run(
        [sys.executable, DEMO, "--steps=20", *SMALL,
         "--resume", str(out / "checkpoints" / "step-00000020"),
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "resuming from " in result.stdout
    assert "at step 20 (saved on 2 ranks, stage 2)" in result.stdout
    lines = [l for l in result.stdout.splitlines() if l.startswith("step ")]
    assert lines[0].startswith("step 21/40") and len(lines) == 20
    # The same batches from the same state: the uninterrupted run's losses
    # and final model (its samples).
    losses = (out / "losses.csv").read_text().splitlines()
    resumed = (tmp_path / "losses.csv").read_text().splitlines()
    assert resumed == [losses[0]] + losses[21:]
    assert (tmp_path / "samples.txt").read_text() == \
        (out / "samples.txt").read_text()
    assert (tmp_path / "checkpoints" / "latest").read_text().strip() == \
        "step-00000040"
    # No stage comparison when resuming.
    assert "ZeRO stages side by side" not in result.stdout
    assert not (tmp_path / "memory_by_role.svg").exists()


def test_resume_with_another_seed_is_refused(demo, tmp_path):
    out, _, _ = demo
    result = subprocess.run(
        [sys.executable, DEMO, "--steps=2", *SMALL, "--seed=5",
         "--resume", str(out / "checkpoints"), "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "chargpt: --seed 5 differs from the checkpoint's 0: the resumed run "
        "would not read the batches an uninterrupted run reads")
