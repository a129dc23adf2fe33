"""The generator parameter initializers draw from (numpy, seeded)."""

import numpy as np

_generator = np.random.default_rng(0)


def manual_seed(seed):
    """Seeds parameter initialization, like torch.manual_seed."""
    global _generator
    _generator = np.random.default_rng(int(seed))


def generator():
    return _generator
