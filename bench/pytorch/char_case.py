"""The benchmark's training case: GPT-2 parameters and character-level data.

Both trainings read what this module writes, so they start from the same
parameters and see the same batches:

* init/<param>.npy: float32, PyTorch names and layouts but for c_attn,
  whose q, k and v are stacked as zero-compile's GPT-2 declares them,
  (3, E, E) and (3, E) (torch_gpt2.load_parameters reads them as its
  (3E, E) Linear), drawn with the initializers zero-compile's GPT-2
  declares (compiler/builder/Gpt2Builder.cpp):
  token embedding N(0, 0.02^2), position embedding N(0, 0.01^2), Linear
  weight and bias U(-1/sqrt(in), 1/sqrt(in)), LayerNorm weight 1, bias 0;
* data/tokens.npy, data/labels.npy: int64 (steps, batch, seq), random
  windows of a text; labels are the next characters.
"""

import math
import os

import numpy as np

def gpt2_parameters(layers, embed, vocab, seq):
    """(name, shape, initializer, scale) in the order Gpt2.cpp declares."""
    def linear(prefix, inputs, outputs):
        bound = 1.0 / math.sqrt(inputs)
        return [(prefix + ".weight", (outputs, inputs), "uniform", bound),
                (prefix + ".bias", (outputs,), "uniform", bound)]

    def layer_norm(prefix):
        return [(prefix + ".weight", (embed,), "ones", 0.0),
                (prefix + ".bias", (embed,), "zeros", 0.0)]

    specs = [("wte.weight", (vocab, embed), "normal", 0.02),
             ("wpe.weight", (seq, embed), "normal", 0.01)]
    for i in range(layers):
        p = "h.%d." % i
        specs += layer_norm(p + "ln_1")
        # q, k and v: three (E, E) Linears stacked.
        specs += [(name, (3,) + shape, init, scale) for name, shape, init,
                  scale in linear(p + "attn.c_attn", embed, embed)]
        specs += linear(p + "attn.c_proj", embed, embed)
        specs += layer_norm(p + "ln_2")
        specs += linear(p + "mlp.c_fc", embed, 4 * embed)
        specs += linear(p + "mlp.c_proj", 4 * embed, embed)
    return specs + layer_norm("ln_f")


def initial_parameters(specs, rng):
    """Draws every parameter in order, as float32."""
    params = {}
    for name, shape, init, scale in specs:
        if init == "uniform":
            value = rng.uniform(-scale, scale, size=shape)
        elif init == "normal":
            value = rng.normal(0.0, scale, size=shape)
        elif init == "ones":
            value = np.ones(shape)
        else:
            value = np.zeros(shape)
        params[name] = value.astype(np.float32)
    return params


def encode_text(text, vocab):
    """Character ids, most frequent character first (case kept). When the
    text has more than `vocab` distinct characters, the rarest share the last
    id. Returns (ids, alphabet)."""
    counts = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    ranked = sorted(counts, key=lambda c: (-counts[c], c))
    if len(ranked) > vocab:
        ranked = ranked[:vocab - 1]
    table = {c: i for i, c in enumerate(ranked)}
    ids = np.array([table.get(c, vocab - 1) for c in text], dtype=np.int64)
    return ids, ranked


def batches(ids, steps, batch, seq, rng):
    """`batch` random windows of seq + 1 characters per step: tokens are the
    first seq, labels the last seq."""
    if len(ids) < seq + 2:
        raise ValueError("the text has %d characters; it needs at least %d"
                         % (len(ids), seq + 2))
    starts = rng.integers(0, len(ids) - seq - 1, size=(steps, batch))
    windows = ids[starts[..., None] + np.arange(seq + 1)]
    return windows[..., :-1].copy(), windows[..., 1:].copy()


def write_case(directory, text, layers, embed, vocab, seq, batch, steps,
               seed):
    """Writes DIR/init and DIR/data; returns the alphabet used."""
    specs = gpt2_parameters(layers, embed, vocab, seq)
    params = initial_parameters(specs, np.random.default_rng([seed, 0]))
    ids, alphabet = encode_text(text, vocab)
    tokens, labels = batches(ids, steps, batch, seq,
                             np.random.default_rng([seed, 1]))
    for sub in ("init", "data"):
        os.makedirs(os.path.join(directory, sub), exist_ok=True)
    for name, value in params.items():
        np.save(os.path.join(directory, "init", name + ".npy"), value)
    np.save(os.path.join(directory, "data", "tokens.npy"), tokens)
    np.save(os.path.join(directory, "data", "labels.npy"), labels)
    return alphabet
