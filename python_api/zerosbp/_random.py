"""The seed: parameter initializers draw from a numpy generator seeded with
it, and dropout masks are keyed by it (docs/compiler.md, "Dropout")."""

import numpy as np

_seed = 0
_generator = np.random.default_rng(0)


def manual_seed(seed):
    """Seeds parameter initialization and dropout, like torch.manual_seed.
    The seed is an integer in [0, 2^64)."""
    global _generator, _seed
    seed = int(seed)
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"manual_seed: the seed must lie in [0, 2^64), got "
                         f"{seed}")
    _generator = np.random.default_rng(seed)
    _seed = seed


def initial_seed():
    """The seed last given to manual_seed (0 before any), which dropout
    masks traced from now on use."""
    return _seed


def generator():
    return _generator
