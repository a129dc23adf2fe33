"""The graph being traced: the C++ capture, and the parameters it has met."""

_current = None


class Trace:
    """One run of ``build``: creates graph values for inputs and parameters
    and remembers the loss ``backward()`` was called on."""

    def __init__(self, capture, parameter_names, placement,
                 pipeline_stages=1, module_names=None):
        self.capture = capture
        self.placement = placement  # The graph's.
        self.parameter_names = parameter_names  # id(Parameter) -> name
        self.parameter_values = {}  # id(Parameter) -> handle
        self.used_parameters = {}  # name -> Parameter
        self.loss = None
        self.dropouts = 0  # Dropout ops traced so far: the next one's stream.
        # Pipeline stages (zs.pipeline_stage): how many, the one ops are
        # built on now and the module that set it, the marked module being
        # called, and the stages called so far.
        self.pipeline_stages = pipeline_stages
        self.module_names = module_names or {}  # id(Module) -> name
        self.stage = -1
        self.stage_module = None
        self.open_stage = None  # (module, stage) while one is called.
        self.stages_called = set()

    def describe_module(self, module):
        """How errors name a module: by its name in the graph where it has
        one."""
        name = self.module_names.get(id(module))
        kind = type(module).__name__
        return f"{kind} '{name}'" if name else f"a {kind} module"

    def dropout_stream(self):
        """A stream number for the next dropout op: its index in the trace,
        so that the graph's dropout ops draw different masks."""
        stream = self.dropouts
        self.dropouts += 1
        return stream

    def parameter(self, param):
        key = id(param)
        if key not in self.parameter_values:
            name = self.parameter_names.get(key)
            if name is None:
                raise ValueError(
                    f"a parameter of shape {tuple(param.shape)} is used in "
                    "build() but belongs to no module of the graph; assign "
                    "its module to the graph (self.model = model)")
            self.parameter_values[key] = self.capture.parameter(
                name, list(param.shape), bool(param.requires_grad),
                self._splits(name, param))
            self.used_parameters[name] = param
        return self.parameter_values[key]

    def _splits(self, name, param):
        """The split dim on each hierarchy axis that to_global gave
        `param` (-1: broadcast); [] broadcasts it on every axis."""
        if param.placement is None:
            return []
        if param.placement != self.placement:
            raise ValueError(
                f"parameter '{name}' is placed on {param.placement} by "
                f"to_global but the graph on {self.placement}; place them "
                "on the same ranks")
        return [s.dim if s.kind == "split" else -1 for s in param.sbp]


def current():
    if _current is None:
        raise RuntimeError(
            "graph tensors exist only inside nn.Graph.build(); call the "
            "graph to trace it")
    return _current


def set_current(trace):
    global _current
    _current = trace


def checkpointed(function, *args, **kwargs):
    """``function(*args, **kwargs)`` as one checkpointed segment of the
    current trace (zs.checkpoint)."""
    trace = current()
    trace.capture.begin_checkpoint()
    try:
        return function(*args, **kwargs)
    finally:
        trace.capture.end_checkpoint()
