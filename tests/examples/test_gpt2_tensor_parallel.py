"""The tutorial's 10B GPT-2 with ZeRO-2 on 32 ranks at --model-parallel-size
2 and 4 (examples/gpt2/tensor_parallel.py): it compiles, its model states
per rank equal the formula of docs/design.md#zero-on-the-data-axis derived
here by hand from the parameter shapes, role by role, to the byte, and they
shrink as the model-parallel size grows; the example script runs and
agrees.

Run: bazel test //tests/examples:test_gpt2_tensor_parallel
"""

import json
import os
import subprocess
import sys

import pytest

ZERO_COMPILE = os.environ["ZEROSBP_COMPILE"]
GPT2 = "examples/gpt2"
LAYERS, E, HEADS, SEQ = 50, 4096, 32, 1024
VOCAB = 50304  # GPT-2's 50257 padded so that 2, 4 and 8 model ranks split it
RANKS = 32


def tensors():
    """(elements, split on the model axis): the token embedding (tied LM
    head) split by vocabulary, the position embedding whole; per block
    ln_1, c_attn (3E x E and 3E, column-parallel), attn c_proj (E x E
    row-parallel, bias whole), ln_2, c_fc (4E x E and 4E column-parallel),
    mlp c_proj (E x 4E row-parallel, bias whole); ln_f."""
    block = [(E, False)] * 2 + [(3 * E * E, True), (3 * E, True),
                                (E * E, True), (E, False)] + \
        [(E, False)] * 2 + [(4 * E * E, True), (4 * E, True),
                            (4 * E * E, True), (E, False)]
    return [(VOCAB * E, True), (SEQ * E, False)] + block * LAYERS + \
        [(E, False)] * 2


def compile_report(tp, batch_per_dp_rank):
    flags = ["--deepspeed", "--model-parallel-size", str(tp),
             "--num-layers", str(LAYERS), "--hidden-size", str(E),
             "--num-attention-heads", str(HEADS), "--batch-size",
             str(batch_per_dp_rank), "--deepspeed_config",
             os.path.join(GPT2, "ds_zero_stage_2.config"),
             "--checkpoint-activations", "--vocab-size", str(VOCAB),
             "--world", str(RANKS), "--report=json"]
    done = subprocess.run([ZERO_COMPILE] + flags, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def expected_by_role(tp):
    """ZeRO-2 on the data axis, fp32 Adam (p = 4, K = 8: the config enables
    no fp16): each parameter whole on its model part, p Ψ_rank; gradients
    and m, v on the rank's shard, a split tensor's part padded to a multiple
    of dp and a replicated one to tp dp."""
    dp = RANKS // tp
    psi_rank = sum(n // tp if split else n for n, split in tensors())
    shard = 0
    for n, split in tensors():
        if split:
            assert n % tp == 0
            shard += -(-(n // tp) // dp)
        else:
            shard += -(-n // (tp * dp))
    return {"param": 4 * psi_rank, "grad": 4 * shard,
            "opt_state": 8 * shard, "master": 0}


# The tutorial's one sequence per data-parallel rank.
@pytest.mark.parametrize("tp", [1, 2, 4])
def test_model_states_equal_the_data_axis_formula(tp):
    report = compile_report(tp, 1)
    assert report["world"] == RANKS and report["stage"] == 2
    assert report["params"] == sum(n for n, _ in tensors())
    # The report leaves the key out at its default, 1.
    assert report["config"]["zerosbp"].get("model_parallel_size", 1) == tp
    expected = expected_by_role(tp)
    assert report["bytes_per_rank"] == expected
    total = sum(expected.values())
    # The formula p Ψ_rank + (p + K) Ψ / (tp dp), in the IR and in the
    # memory plan (stage 2 keeps gradient shards only).
    assert report["model_state_bytes_per_rank"] == total
    assert report["plan"]["memory_plan"]["model_state_bytes"] == total
    axes = report["plan"]["overlap"]["comm_bytes_by_axis"]
    assert len(axes) == (1 if tp == 1 else 2)
    if tp > 1:
        assert axes[1] > 0  # the model axis carries the layout's traffic


def test_model_states_shrink_as_tp_grows():
    states = [compile_report(tp, 1)["model_state_bytes_per_rank"]
              for tp in [1, 2, 4]]
    assert states[0] > states[1] > states[2]
    # Only the parameters' term shrinks: ZeRO-2 already splits gradients
    # and Adam's states over all 32 ranks at every tp.
    params = [expected_by_role(tp)["param"] for tp in [1, 2, 4]]
    assert [a - b for a, b in zip(states, states[1:])] == \
        [a - b for a, b in zip(params, params[1:])]


def test_example_script_runs(tmp_path):
    out = tmp_path / "tp.json"
    subprocess.run([sys.executable, os.path.join(GPT2, "tensor_parallel.py"),
                    ZERO_COMPILE, "--model-parallel", "1", "2", "4",
                    "--json", str(out)], check=True)
    rows = json.loads(out.read_text())
    assert [r["model_parallel_size"] for r in rows] == [1, 2, 4]
    for r in rows:
        tp = r["model_parallel_size"]
        assert r["bytes_per_rank"] == expected_by_role(tp)
        assert r["model_states_planned"] == \
            sum(expected_by_role(tp).values())
        assert r["data_parallel_size"] * tp == RANKS
        assert r["sequences_per_dp_rank"] == 1
