#!/usr/bin/python3
"""Trains the benchmark's GPT-2 with PyTorch eager on CPU and writes a report.

The network is the one zero-compile builds for its GPT-2 flags
(examples/gpt2/Gpt2.cpp): learned token and position embeddings, pre-norm
blocks of causal self-attention and a GELU (tanh form) MLP, a final layer
norm and an LM head tied to the token embedding; LayerNorm eps 1e-5; mean
cross-entropy over every token; torch.optim.Adam. Parameter names and
layouts are the ones `zero-run --init` reads, so both trainings start from
the same arrays.

The attention is computed as zero-compile writes it (attention="math", the
default): the scores, a causal mask and a softmax. attention="sdpa" computes
the same function with F.scaled_dot_product_attention(q, k, v,
is_causal=True) (PyTorch 2.0 or later), which dispatches to a fused kernel
(flash or memory-efficient attention on a GPU); the parameters, their names
and everything else stay the same.

Usage:
    torch_gpt2.py --init DIR --data DIR --steps N --threads T
        --num-layers L --hidden-size E --num-attention-heads H
        --lr LR --report FILE [--save DIR] [--attention math|sdpa]

DIR/<param>.npy hold the initial parameters; --data DIR holds tokens.npy and
labels.npy of shape (steps, batch, seq). The report (JSON) has the loss and
the wall time of every step; --save writes the final parameters as .npy.
"""

import argparse
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


ATTENTIONS = ("math", "sdpa")


def check_attention(attention):
    """Raises ValueError for an unknown variant, RuntimeError when this
    PyTorch lacks F.scaled_dot_product_attention (before 2.0)."""
    if attention not in ATTENTIONS:
        raise ValueError("attention must be one of %s, not %r" %
                         (", ".join(ATTENTIONS), attention))
    if attention == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        raise RuntimeError("attention=\"sdpa\" needs "
                           "F.scaled_dot_product_attention (PyTorch 2.0 or "
                           "later); this is PyTorch %s" % torch.__version__)


class CausalSelfAttention(nn.Module):
    def __init__(self, embed, heads, attention="math"):
        super().__init__()
        check_attention(attention)
        self.heads = heads
        self.attention = attention
        self.c_attn = nn.Linear(embed, 3 * embed)
        self.c_proj = nn.Linear(embed, embed)

    def forward(self, x, mask):
        batch, seq, embed = x.shape
        head_dim = embed // self.heads
        q, k, v = self.c_attn(x).split(embed, dim=2)
        # (batch, heads, seq, head_dim); written out rather than as a
        # generator, which torch.compile's tracer may not follow.
        q = q.view(batch, seq, self.heads, head_dim).transpose(1, 2)
        k = k.view(batch, seq, self.heads, head_dim).transpose(1, 2)
        v = v.view(batch, seq, self.heads, head_dim).transpose(1, 2)
        if self.attention == "sdpa":
            # The same scale (1/sqrt(head_dim), SDPA's default), no dropout;
            # is_causal masks key j > query i as `mask` does.
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
            probs = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
            y = probs @ v
        y = y.transpose(1, 2).reshape(batch, seq, embed)
        return self.c_proj(y)


class Mlp(nn.Module):
    def __init__(self, embed):
        super().__init__()
        self.c_fc = nn.Linear(embed, 4 * embed)
        self.c_proj = nn.Linear(4 * embed, embed)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, embed, heads, attention="math"):
        super().__init__()
        self.ln_1 = nn.LayerNorm(embed, eps=1e-5)
        self.attn = CausalSelfAttention(embed, heads, attention)
        self.ln_2 = nn.LayerNorm(embed, eps=1e-5)
        self.mlp = Mlp(embed)

    def forward(self, x, mask):
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp(self.ln_2(x))


class Gpt2(nn.Module):
    """attention: "math" (scores, mask, softmax) or "sdpa"
    (F.scaled_dot_product_attention with is_causal=True)."""

    def __init__(self, vocab, seq, embed, heads, layers, attention="math"):
        super().__init__()
        check_attention(attention)
        self.wte = nn.Embedding(vocab, embed)
        self.wpe = nn.Embedding(seq, embed)
        self.h = nn.ModuleList(Block(embed, heads, attention)
                               for _ in range(layers))
        self.ln_f = nn.LayerNorm(embed, eps=1e-5)
        # True above the diagonal: key j > query i is masked out ("math";
        # "sdpa" masks through is_causal and leaves it unread).
        self.register_buffer(
            "mask", torch.ones(seq, seq, dtype=torch.bool).triu(1))

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe.weight
        for block in self.h:
            x = block(x, self.mask)
        return self.ln_f(x) @ self.wte.weight.T


def load_parameters(model, directory):
    """Copies DIR/<name>.npy into every parameter; shapes must match, but
    for c_attn, which ZeroSBP keeps as q, k and v stacked, (3, E, E) and
    (3, E): the same elements as this Linear's (3E, E) and (3E)."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            value = np.load(os.path.join(directory, name + ".npy"))
            if ".c_attn." in name and value.size == param.numel():
                value = value.reshape(tuple(param.shape))
            if value.shape != tuple(param.shape):
                raise ValueError("%s.npy has shape %s, the model %s" %
                                 (name, value.shape, tuple(param.shape)))
            param.copy_(torch.from_numpy(value))


def train(args):
    torch.set_num_threads(args.threads)
    tokens = torch.from_numpy(np.load(os.path.join(args.data, "tokens.npy")))
    labels = torch.from_numpy(np.load(os.path.join(args.data, "labels.npy")))
    steps_available, _, seq = tokens.shape
    if args.steps > steps_available:
        raise ValueError("--data holds %d steps, %d asked" %
                         (steps_available, args.steps))
    wte = np.load(os.path.join(args.init, "wte.weight.npy"), mmap_mode="r")
    model = Gpt2(wte.shape[0], seq, args.hidden_size,
                 args.num_attention_heads, args.num_layers, args.attention)
    load_parameters(model, args.init)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr,
                           betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    losses, step_ms = [], []
    for step in range(args.steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = model(tokens[step])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               labels[step].reshape(-1))
        loss.backward()
        opt.step()
        value = loss.item()
        step_ms.append((time.perf_counter() - start) * 1e3)
        losses.append(value)
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        for name, param in model.named_parameters():
            value = param.detach().numpy()
            if ".c_attn." in name:
                value = value.reshape((3, value.shape[0] // 3) +
                                      value.shape[1:])
            np.save(os.path.join(args.save, name + ".npy"), value)
    return {"torch_version": torch.__version__, "threads": args.threads,
            "attention": args.attention, "losses": losses,
            "step_ms": step_ms}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--init", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--num-layers", type=int, required=True)
    parser.add_argument("--hidden-size", type=int, required=True)
    parser.add_argument("--num-attention-heads", type=int, required=True)
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--save")
    parser.add_argument("--attention", choices=ATTENTIONS, default="math",
                        help="math: scores, causal mask, softmax (default); "
                        "sdpa: F.scaled_dot_product_attention(is_causal=True)")
    args = parser.parse_args()
    report = train(args)
    with open(args.report, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
