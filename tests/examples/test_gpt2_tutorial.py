"""DeepSpeed's ZeRO tutorial models compiled at 8 ranks: parameters, per-rank
model states and bytes sent equal the formulas of
docs/design.md#zero-stages-and-their-formulas, derived here by hand; the
configs' knobs reach the plan; examples/gpt2/tutorial.py runs and its
scaled-down model learns.

Run: bazel test //tests/examples:test_gpt2_tutorial
"""

import json
import math
import os
import subprocess
import sys

import pytest

ZERO_COMPILE = os.environ["ZEROSBP_COMPILE"]
ZERO_RUN = os.environ["ZEROSBP_RUN"]
GPT2 = "examples/gpt2"
VOCAB, SEQ = 50257, 1024  # Megatron GPT-2's, which the tutorial keeps.
RANKS = 8


def gpt2_parameter_count(vocab, seq, embed, layers):
    """Token and position embeddings, L blocks, the final layer norm; the
    LM head is tied to the token embedding."""
    return vocab * embed + seq * embed + \
        layers * (12 * embed ** 2 + 13 * embed) + 2 * embed


def gpt2_tensors(vocab, seq, embed, layers):
    """The same count tensor by tensor: a block holds two layer norms
    (weight, bias), c_attn (3E x E + 3E), attn c_proj (E x E + E), c_fc
    (4E x E + 4E) and mlp c_proj (E x 4E + E)."""
    block = [embed] * 4 + [3 * embed ** 2, 3 * embed, embed ** 2, embed,
                           4 * embed ** 2, 4 * embed, 4 * embed ** 2, embed]
    return [vocab * embed, seq * embed] + block * layers + [embed, embed]


def shard(tensors, ranks):
    """Elements per rank once every tensor is flattened and padded to a
    multiple of the rank count."""
    return sum(-(-n // ranks) for n in tensors)


def compile_report(flags):
    result = subprocess.run([ZERO_COMPILE] + flags + ["--report=json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def tutorial_flags(layers, hidden, heads, config, ranks, extra=()):
    return ["--model-parallel-size", "1", "--num-layers", str(layers),
            "--hidden-size", str(hidden), "--num-attention-heads", str(heads),
            "--batch-size", "1", "--deepspeed_config",
            os.path.join(GPT2, config), "--world", str(ranks)] + list(extra)


CASES = [
    # The tutorial's 1.5B model with ZeRO stage 1 on 8 GPUs.
    pytest.param(dict(layers=48, hidden=1600, heads=16, vocab=VOCAB, seq=SEQ,
                      config="ds_zero_stage_1.config", stage=1), id="1.5B"),
    # The tutorial's 10B model with ZeRO stage 2 (32 GPUs there).
    pytest.param(dict(layers=50, hidden=4096, heads=32, vocab=VOCAB, seq=SEQ,
                      config="ds_zero_stage_2.config", stage=2), id="10B"),
    # Sizes that are not multiples of 8, so padding shows.
    pytest.param(dict(layers=2, hidden=36, heads=4, vocab=101, seq=17,
                      config="ds_zero_stage_2.config", stage=2),
                 id="padded"),
]


@pytest.mark.parametrize("case", CASES)
def test_model_states_and_traffic_equal_the_formulas(case):
    extra = ["--vocab-size", str(case["vocab"]), "--seq-length",
             str(case["seq"])]
    report = compile_report(tutorial_flags(
        case["layers"], case["hidden"], case["heads"], case["config"], RANKS,
        extra))
    psi = gpt2_parameter_count(case["vocab"], case["seq"], case["hidden"],
                               case["layers"])
    tensors = gpt2_tensors(case["vocab"], case["seq"], case["hidden"],
                           case["layers"])
    assert sum(tensors) == psi
    assert report["params"] == psi
    assert report["stage"] == case["stage"] and report["world"] == RANKS

    # Neither config enables fp16 or names an optimizer: fp32 Adam, whose
    # m and v are K = 8 bytes per parameter and whose master is the param.
    per_rank = shard(tensors, RANKS)
    grad = 4 * psi if case["stage"] == 1 else 4 * per_rank
    expected = {"param": 4 * psi, "grad": grad, "opt_state": 8 * per_rank,
                "master": 0}
    assert report["bytes_per_rank"] == expected
    # docs/design.md#model-state-memory: stage 1 (4 + 4) psi + K psi / N,
    # stage 2 4 psi + (4 + K) psi / N, with psi / N rounded up tensor by
    # tensor.
    formula = (8 * psi + 8 * per_rank if case["stage"] == 1
               else 4 * psi + 12 * per_rank)
    assert report["model_state_bytes_per_rank"] == formula
    if case["stage"] == 2:
        # Stage 2's gradients are reduce-scattered as backward makes them:
        # only the shards stay, so the memory plan holds the formula too.
        assert report["plan"]["memory_plan"]["model_state_bytes"] == formula

    # Each padded gradient reduce-scattered and each padded parameter
    # all-gathered once: T (N - 1) / N bytes each; the loss is all-reduced.
    padded = per_rank * RANKS
    comm = report["comm_bytes_per_step"]
    assert comm["reduce_scatter"] == 4 * padded * (RANKS - 1) / RANKS
    assert comm["all_gather"] == 4 * padded * (RANKS - 1) / RANKS
    assert comm["all_reduce"] == 2 * 4 * (RANKS - 1) / RANKS
    assert comm["all_to_all"] == 0


@pytest.mark.parametrize("config,stage", [("ds_zero_stage_1.config", 1),
                                          ("ds_zero_stage_2.config", 2)])
def test_the_configs_knobs_reach_the_plan(config, stage):
    report = compile_report(tutorial_flags(2, 64, 4, config, RANKS,
                                           ["--vocab-size", "512"]))
    zero = report["config"]["zero_optimization"]
    assert zero["stage"] == stage
    assert zero["reduce_bucket_size"] == 500000000
    assert zero["allgather_bucket_size"] == 500000000
    # Stage 2 sets overlap_comm; stage 1 leaves it at DeepSpeed's
    # default, which is off below stage 3.
    assert zero["overlap_comm"] == (stage == 2)
    assert zero["contiguous_gradients"] and zero["reduce_scatter"]
    plan = report["plan"]
    # Every padded gradient is reduced once and every padded parameter
    # gathered once, in buckets of at most 5e8 elements; those hold the
    # whole small model, so stage 2 (reducing as backward runs) fills one
    # bucket of each kind.
    padded = shard(gpt2_tensors(512, SEQ, 64, 2), RANKS) * RANKS
    buckets = plan["buckets"]["by_kind"]
    for kind in ["reduce_scatter", "all_gather"]:
        assert sum(buckets[kind]["elements"]) == padded
        assert max(buckets[kind]["elements"]) <= 500000000
    assert buckets["all_gather"]["count"] == 1
    if stage == 2:
        assert buckets["reduce_scatter"]["count"] == 1
    # overlap_comm: stage 2 starts its reduction while backward computes.
    overlapped = plan["overlap"]["overlapped_bytes"]
    assert (overlapped > 0) == (stage == 2)


def test_tutorial_script_runs_and_the_small_model_learns(tmp_path):
    out = tmp_path / "tutorial.json"
    subprocess.run([sys.executable, os.path.join(GPT2, "tutorial.py"),
                    ZERO_COMPILE, ZERO_RUN, "--ranks", "8", "--steps", "30",
                    "--json", str(out)], check=True)
    result = json.loads(out.read_text())
    rows = result["compiles"]
    assert [(r["model"], r["ranks"], r["stage"]) for r in rows] == [
        ("1.5B", 8, 1), ("10B", 8, 2)]
    assert all(r["model_states_ir"] == r["model_states_formula"]
               for r in rows)
    losses = result["small"]["losses"]
    assert len(losses) == 30
    # Embeddings start near zero, so the first loss is log(vocabulary).
    assert losses[0] == pytest.approx(math.log(128), abs=0.05)
    # Next token = token + 1 is learnable: the loss falls steadily.
    assert losses[-1] < losses[0] - 0.5
    assert sum(losses[-5:]) < sum(losses[:5])
