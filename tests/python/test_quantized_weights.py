"""ZeRO++ qwZ (docs/design.md#quantized-weight-gathers): the forward of a
stage-3 graph with zero-quantized-weights computes on exactly the
block-quantized parameters, each rank's part quantized on its own, which a
NumPy model of the block quantization (float32, as the kernels compute it)
gives; the unquantized parameters give other logits."""

import numpy as np
import pytest

import zerosbp as zs

import models
from test_eval import Predict, assert_close, mlp_reference

WORLD = 4


def block_quantized(value, block, bits=8):
    """`value` after nn.quantize and nn.dequantize of its stage-3 shards on
    WORLD ranks: flattened, padded to a multiple of WORLD, each rank's part
    padded to whole blocks of `block` and quantized block by block."""
    flat = np.asarray(value, np.float32).reshape(-1)
    padded = np.zeros(-(-flat.size // WORLD) * WORLD, np.float32)
    padded[:flat.size] = flat
    part = padded.size // WORLD
    rows = np.zeros((WORLD, -(-part // block) * block), np.float32)
    rows[:, :part] = padded.reshape(WORLD, part)
    blocks = rows.reshape(-1, block)
    levels = np.float32(2 ** (bits - 1) - 1)
    amax = np.abs(blocks).max(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        factor = np.where(amax > 0, levels / amax, np.float32(0))
    codes = np.clip(np.rint(blocks * factor.astype(np.float32)), -levels,
                    levels)
    dequantized = codes * (amax / levels).astype(np.float32)
    parts = dequantized.astype(np.float32).reshape(WORLD, -1)[:, :part]
    return parts.reshape(-1)[:flat.size].reshape(np.shape(value))


@pytest.mark.parametrize("block", [8, 64])
def test_forward_computes_on_the_block_quantized_parameters(block):
    zs.manual_seed(11)
    model = models.Mlp(hidden=32)

    def quantize_weights(graph):
        graph.config.set_pipeline_options(
            "stage3-param-persistence-threshold=0 zero-quantized-weights=true "
            "zero-quantized-weights-block-size=%d" % block)

    train = models.train_graph(
        model, zs.optim.Adam(model.parameters(), lr=0.02), stage=3,
        world=WORLD, configure=quantize_weights)
    x, y = models.mlp_batches(1, batch=24, seed=11)[0]
    train.compile(x, y)
    logits, loss = Predict(model)(x, y)
    state = {k: np.array(v) for k, v in model.state_dict().items()}
    quantized = {k: block_quantized(v, block) for k, v in state.items()}
    # Every part of fc2.bias (10 elements, parts of 3) is padded to a block.
    want_logits, want_loss = mlp_reference(quantized, x, y)
    assert_close(logits, want_logits)
    assert abs(float(loss) - want_loss) <= 2e-6 * max(1, want_loss)
    unquantized, _ = mlp_reference(state, x, y)
    assert np.abs(unquantized - want_logits).max() > 1e-4
