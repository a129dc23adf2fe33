"""zero-compile takes the DeepSpeed tutorial's Megatron-DeepSpeed command
line: `--deepspeed_config` reads a config as `--config` does and makes
`--batch-size` Megatron's per-GPU batch; `--deepspeed` is accepted, and
`--model-parallel-size` lays GPT-2 out as Megatron does, or refuses a
model its ranks cannot split evenly. Flags it cannot honour, and a
`train_batch_size` that disagrees with the flags, are one-line errors.

Run: bazel test //tests/examples:test_zero_compile_flags
"""

import json
import os
import re
import subprocess

import pytest

ZERO_COMPILE = os.environ["ZEROSBP_COMPILE"]
STAGE1 = "examples/gpt2/ds_zero_stage_1.config"
STAGE2 = "examples/gpt2/ds_zero_stage_2.config"
SMALL = ["--num-layers", "2", "--hidden-size", "32",
         "--num-attention-heads", "4", "--seq-length", "16",
         "--vocab-size", "64"]


def run(flags):
    return subprocess.run([ZERO_COMPILE] + flags, capture_output=True,
                          text=True)


def write_config(tmp_path, config):
    path = tmp_path / "ds.config"
    path.write_text(json.dumps(config))
    return str(path)


def global_batch(tmp_path, flags):
    """The tokens input's global batch in the compiled IR."""
    ir = tmp_path / "model.mlir"
    result = run(SMALL + flags + ["--report=none", "--emit-ir", str(ir)])
    assert result.returncode == 0, result.stderr
    match = re.search(r'nn\.input "tokens" \{zero\.global_type = '
                      r'tensor<(\d+)x16xi64', ir.read_text())
    assert match, "no tokens input in the compiled IR"
    return int(match.group(1))


def expect_error(flags, *needles):
    result = run(flags)
    assert result.returncode != 0
    assert result.stdout == ""
    first = result.stderr.splitlines()[0]
    assert first.startswith("zero-compile: ")
    for needle in needles:
        assert needle in first, first
    return result.stderr


@pytest.mark.parametrize("flags", [
    # The tutorial's two launch-script changes, as written, plus the world
    # and the switch the launch script passes; the 10B model with the
    # tutorial's --checkpoint-activations.
    ["--deepspeed", "--model-parallel-size", "1", "--num-layers", "48",
     "--hidden-size", "1600", "--num-attention-heads", "16",
     "--batch-size", "1", "--deepspeed_config", STAGE1, "--world", "8"],
    ["--deepspeed", "--model-parallel-size", "1", "--num-layers", "50",
     "--hidden-size", "4096", "--num-attention-heads", "32",
     "--batch-size", "1", "--deepspeed_config", STAGE2, "--world", "32",
     "--checkpoint-activations"],
])
def test_tutorial_command_lines_compile(flags):
    result = run(flags + ["--report=none"])
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_batch_size_is_per_gpu_with_deepspeed_config(tmp_path):
    # Megatron: 2 sequences per GPU on 4 GPUs make a step of 8.
    assert global_batch(tmp_path, ["--batch-size", "2", "--deepspeed_config",
                                   STAGE2, "--world", "4"]) == 8
    # With gradient accumulation DeepSpeed's step takes micro * steps *
    # world sequences; the graph holds the whole step.
    config = write_config(tmp_path, {"gradient_accumulation_steps": 3,
                                     "zero_optimization": {"stage": 2}})
    assert global_batch(tmp_path, ["--batch-size", "2", "--deepspeed_config",
                                   config, "--world", "4"]) == 24


def test_batch_size_is_global_otherwise(tmp_path):
    assert global_batch(tmp_path, ["--batch-size", "8", "--config", STAGE2,
                                   "--world", "4"]) == 8
    assert global_batch(tmp_path, ["--batch-size", "8", "--world",
                                   "4"]) == 8


def test_batch_defaults_to_the_config_then_one_per_rank(tmp_path):
    config = write_config(tmp_path, {"train_batch_size": 16,
                                     "zero_optimization": {"stage": 1}})
    assert global_batch(tmp_path, ["--deepspeed_config", config,
                                   "--world", "4"]) == 16
    assert global_batch(tmp_path, ["--config", config, "--world", "4"]) == 16
    assert global_batch(tmp_path, ["--deepspeed_config", STAGE1,
                                   "--world", "4"]) == 4


def test_matching_train_batch_size_is_accepted(tmp_path):
    config = write_config(tmp_path, {"train_batch_size": 16,
                                     "zero_optimization": {"stage": 2}})
    assert global_batch(tmp_path, ["--batch-size", "2", "--deepspeed_config",
                                   config, "--world", "8"]) == 16


def test_train_batch_size_disagreeing_with_the_flags(tmp_path):
    config = write_config(tmp_path, {"train_batch_size": 16,
                                     "zero_optimization": {"stage": 2}})
    expect_error(SMALL + ["--batch-size", "1", "--deepspeed_config", config,
                          "--world", "8"],
                 "train_batch_size 16 != --batch-size 1 (per GPU) * "
                 "gradient_accumulation_steps 1 * 8 ranks = 8")
    expect_error(SMALL + ["--batch-size", "8", "--config", config,
                          "--world", "8"],
                 "train_batch_size 16 != --batch-size 8 (the global batch")


@pytest.mark.parametrize("flags,needles", [
    (["--checkpoint-num-layers", "0", "--checkpoint-activations"],
     ["--checkpoint-num-layers: expected an integer >= 1, got 0"]),
    (["--checkpoint-num-layers", "2"],
     ["--checkpoint-num-layers needs --checkpoint-activations"]),
    (["--model-parallel-size", "3", "--world", "4"],
     ["model-parallel-size: expected a divisor of world (4), got 3"]),
    (["--tensor-model-parallel-size", "8", "--world", "8"],
     ["--model-parallel-size 8: the head count 4 does not divide by the "
      "model-parallel size 8 (each rank computes whole heads)"]),
    (["--deepspeed_config", STAGE1, "--config", STAGE2],
     ["--config and --deepspeed_config", "give one"]),
    (["--deepspeed_config", STAGE1, "--pipeline", "stage=1"],
     ["--deepspeed_config and --pipeline exclude each other"]),
    (["--batch-size", "3", "--world", "4"],
     ["--batch-size 3 does not split evenly into "
      "gradient_accumulation_steps 1 * 4 ranks"]),
    (["--batch-size", "-2", "--world", "4"],
     ["--batch-size must be positive, got -2"]),
    (["--deepspeed_config", "no/such.config"], ["no/such.config"]),
])
def test_flags_that_cannot_be_honoured(flags, needles):
    expect_error(SMALL + flags, *needles)


@pytest.mark.parametrize("sizes,needle", [
    (["--hidden-size", "36", "--num-attention-heads", "4",
      "--vocab-size", "64"],
     "--model-parallel-size 8: the hidden size 36 does not divide by the "
     "model-parallel size 8"),
    (["--hidden-size", "32", "--num-attention-heads", "8",
      "--vocab-size", "50257"],
     "--model-parallel-size 8: the vocabulary 50257 does not divide by the "
     "model-parallel size 8 (the embedding is split by vocabulary; Megatron "
     "pads it to a multiple of 128 x 8: 51200)"),
])
def test_model_parallel_layout_refusals(sizes, needle):
    expect_error(["--num-layers", "1", "--seq-length", "16",
                  "--model-parallel-size", "8", "--world", "8"] + sizes,
                 needle)


def test_unknown_flag():
    stderr = expect_error(SMALL + ["--num-layer", "48"],
                          "Unknown command line argument '--num-layer'")
    assert "Did you mean '--num-layers'?" in stderr


def test_batch_size_with_a_graph_file():
    expect_error(["examples/mlp/mlp.mlir", "--world", "4", "--batch-size",
                  "8"], "give either a .mlir file or the GPT-2 flags")


def test_refused_config_key_names_the_file_and_key(tmp_path):
    config = write_config(tmp_path, {
        "zero_optimization": {"stage": 2},
        "activation_checkpointing": {"partition_activations": True}})
    expect_error(SMALL + ["--deepspeed_config", config],
                 "ds.config", "activation_checkpointing.partition_activations",
                 "each model rank keeps its checkpoints whole")
