"""torch.nn.Module's bookkeeping: parameters and submodules by name."""

from collections import OrderedDict

import numpy as np

from .. import _stages, _trace
from .parameter import Parameter, _describe


def _finite_name(value):
    """nan, inf or -inf, as the runtime names them."""
    return "nan" if np.isnan(value) else "inf" if value > 0 else "-inf"


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"{type(self).__name__}.__init__ must call "
                "super().__init__() before assigning attributes")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def register_parameter(self, name, param):
        setattr(self, name, param)

    def add_module(self, name, module):
        setattr(self, name, module)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        stage = self.__dict__.get("_pipeline_stage")
        if stage is not None:
            with _stages.on_stage(self, stage):
                return self._forward_call(*args, **kwargs)
        return self._forward_call(*args, **kwargs)

    def _forward_call(self, *args, **kwargs):
        if getattr(self, "_checkpointed", False):
            return _trace.checkpointed(self.forward, *args, **kwargs)
        return self.forward(*args, **kwargs)

    def named_parameters(self, prefix="", remove_duplicate=True):
        seen = set()
        for module_prefix, module in self.named_modules(prefix):
            for name, param in module._parameters.items():
                if remove_duplicate and id(param) in seen:
                    continue
                seen.add(id(param))
                yield (module_prefix + "." + name if module_prefix
                       else name), param

    def parameters(self):
        for _, param in self.named_parameters():
            yield param

    def named_modules(self, prefix=""):
        yield prefix, self
        for name, module in self._modules.items():
            yield from module.named_modules(
                prefix + "." + name if prefix else name)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def children(self):
        return iter(self._modules.values())

    def to_global(self, placement, sbp):
        """OneFlow's ``Module.to_global``: every parameter of the module
        (and its submodules) takes `placement` and `sbp`
        (Parameter.to_global), all or nothing: each is checked, naming it,
        before any is set. ``fc1.to_global(p, [B, S(0)])`` makes a Linear
        column-parallel, weight and bias. Returns the module."""
        layouts = [(param, param._check_global(
            placement, sbp, _describe(param, param._name or name)))
            for name, param in self.named_parameters()]
        for param, layout in layouts:
            param._placement, param._sbp = placement, layout
        return self

    def train(self, mode=True):
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def state_dict(self):
        """Every parameter by PyTorch name (tied ones under each name), as
        float32 numpy arrays: the trained values once a graph has run."""
        return OrderedDict(
            (name, param.numpy())
            for name, param in self.named_parameters(remove_duplicate=False))

    def load_state_dict(self, state_dict, strict=True):
        """Sets the parameters named in `state_dict`, all or nothing: every
        key, shape and value is checked before any parameter is set, and if
        a compiled graph refuses a value midway, the parameters set before
        it get their earlier values back. Returns (missing, unexpected)."""
        params = dict(self.named_parameters(remove_duplicate=False))
        missing = [name for name in params if name not in state_dict]
        unexpected = [name for name in state_dict if name not in params]
        if strict and (missing or unexpected):
            raise KeyError(
                "load_state_dict: " +
                (f"missing keys {missing}" if missing else "") +
                ("; " if missing and unexpected else "") +
                (f"unexpected keys {unexpected}" if unexpected else ""))
        updates = []
        for name, value in state_dict.items():
            if name not in params:
                continue
            try:
                value = np.asarray(value, dtype=np.float32)
            except (TypeError, ValueError) as error:
                raise ValueError(
                    f"load_state_dict: '{name}' is not a float array "
                    f"({error})") from None
            if value.shape != params[name].shape:
                raise ValueError(
                    f"load_state_dict: '{name}' has shape "
                    f"{params[name].shape}, the file has {value.shape}")
            # As zero-run --init refuses them (docs/runtime.md).
            bad = np.flatnonzero(~np.isfinite(value))
            if bad.size:
                element = value.reshape(-1)[bad[0]]
                raise ValueError(
                    f"load_state_dict: '{name}': element {bad[0]} is "
                    f"{_finite_name(element)}; parameters must be finite")
            updates.append((params[name], value))
        earlier = {}  # id -> (parameter, value before this call)
        try:
            for param, value in updates:
                if id(param) not in earlier:
                    earlier[id(param)] = (param, param.data)
                param.copy_(value)
        except BaseException:
            for param, value in reversed(list(earlier.values())):
                try:
                    param.copy_(value)
                except Exception:  # The first error says why; raise it.
                    pass
            raise
        return missing, unexpected

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, module in self._modules.items():
            text = repr(module).replace("\n", "\n  ")
            lines.append(f"  ({name}): {text}")
        return "\n".join(lines) + ("\n)" if len(lines) > 1 else ")")
