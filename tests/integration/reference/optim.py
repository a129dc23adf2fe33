"""torch.optim's SGD, Adam and AdamW in float64 (docs/design.md#numerics).

    SGD:   p -= lr * g
    Adam:  g += wd * p  (L2, only when weight_decay != 0)
           m = b1 m + (1 - b1) g
           v = b2 v + (1 - b2) g^2
           bc1 = 1 - b1^t,  bc2 = 1 - b2^t          (t counts from 1)
           denom = sqrt(v) / sqrt(bc2) + eps
           p -= (lr / bc1) * m / denom
    AdamW: p *= 1 - lr * wd, then Adam's update without weight decay.

`nn.sgd` takes no weight decay (ZeroConfig: "SGD takes none"), so neither
does this SGD. Parameters are updated in place.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Dict

import numpy as np

OPTIMIZERS = ("sgd", "adam", "adamw")
DEFAULT_LR = {"sgd": 0.1, "adam": 1e-2, "adamw": 1e-2}
DEFAULT_WEIGHT_DECAY = {"sgd": 0.0, "adam": 0.0, "adamw": 0.01}


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    kind: str
    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    def validate(self) -> None:
        if self.kind not in OPTIMIZERS:
            raise ValueError("optimizer must be one of %s" % (OPTIMIZERS,))
        if self.kind == "sgd" and self.weight_decay != 0.0:
            raise ValueError("sgd takes no weight decay (nn.sgd is p - lr * g)")

    def to_json(self) -> dict:
        """The settings, plus the equivalent zero-opt/zero-compile --pipeline
        keys (ZeroConfig::str() spelling)."""
        out = {"type": self.kind, "lr": self.lr}
        pipeline = "optimizer=%s lr=%r" % (self.kind, self.lr)
        if self.kind != "sgd":
            out.update(beta1=self.beta1, beta2=self.beta2, eps=self.eps,
                       weight_decay=self.weight_decay)
            pipeline += " beta1=%r beta2=%r eps=%r weight-decay=%r" % (
                self.beta1, self.beta2, self.eps, self.weight_decay)
        out["pipeline"] = pipeline
        return out


class Sgd:
    def __init__(self, cfg: OptimizerConfig):
        self.cfg = cfg

    def step(self, params: Dict[str, np.ndarray], grads: Dict[str, np.ndarray]) -> None:
        for name, p in params.items():
            p -= self.cfg.lr * grads[name]


class Adam:
    """Adam (decoupled=False) or AdamW (decoupled=True); state per parameter."""

    def __init__(self, cfg: OptimizerConfig, decoupled: bool):
        self.cfg = cfg
        self.decoupled = decoupled
        self.t = 0
        self.exp_avg: Dict[str, np.ndarray] = {}
        self.exp_avg_sq: Dict[str, np.ndarray] = {}

    def step(self, params: Dict[str, np.ndarray], grads: Dict[str, np.ndarray]) -> None:
        c = self.cfg
        self.t += 1
        bc1 = 1.0 - c.beta1**self.t
        bc2 = 1.0 - c.beta2**self.t
        for name, p in params.items():
            g = grads[name]
            if self.decoupled:
                p *= 1.0 - c.lr * c.weight_decay
            elif c.weight_decay != 0.0:
                g = g + c.weight_decay * p
            m = self.exp_avg.setdefault(name, np.zeros_like(p))
            v = self.exp_avg_sq.setdefault(name, np.zeros_like(p))
            m *= c.beta1
            m += (1.0 - c.beta1) * g
            v *= c.beta2
            v += (1.0 - c.beta2) * g * g
            denom = np.sqrt(v) / math.sqrt(bc2) + c.eps
            p -= (c.lr / bc1) * m / denom


def make_optimizer(cfg: OptimizerConfig):
    cfg.validate()
    if cfg.kind == "sgd":
        return Sgd(cfg)
    return Adam(cfg, decoupled=(cfg.kind == "adamw"))
