"""Activation checkpointing: a module or a call whose activations are
recomputed in the backward instead of kept (zero-remat,
docs/design.md#activation-checkpointing)."""

from . import _trace
from .nn.module import Module


def checkpoint(function, *args, **kwargs):
    """``checkpoint(module)`` marks the module: every call of it in a
    graph's ``build`` is a checkpointed segment (OneFlow's
    ``activation_checkpointing``); returns the module.
    ``checkpoint(fn, *args)`` calls ``fn(*args)`` inside ``build`` as one
    checkpointed segment and returns its result (PyTorch's
    ``torch.utils.checkpoint.checkpoint``).

    The segment's inputs and outputs are kept from the forward to the
    backward; the values in between are recomputed where the backward first
    needs them, with the same results bit for bit. An inference graph
    ignores it."""
    if isinstance(function, Module) and not args and not kwargs:
        object.__setattr__(function, "_checkpointed", True)
        return function
    if not callable(function):
        raise TypeError(f"checkpoint takes a module or a function, got "
                        f"{type(function).__name__}")
    return _trace.checkpointed(function, *args, **kwargs)
