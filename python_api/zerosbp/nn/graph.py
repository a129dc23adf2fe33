"""nn.Graph: a training step traced once, compiled with ZeRO, run on ranks.

The first call traces ``build`` with the arguments' shapes into the ``nn``
dialect, runs the pass pipeline (the IR after every pass is kept), writes
the plan, starts the ranks (threads of this process, or this process's rank
under ``python3 -m zerosbp.launch``) and loads the parameters. Every call
then runs one training step and returns the loss.

A ``build`` that returns outputs without calling ``loss.backward()`` makes
an inference graph: no gradients, no optimizer, dropout off. When its
parameters belong to a compiled training graph, it runs on that graph's
storage on the ranks, laid out as that graph lays them out (split at stage
3, gathered layer by layer), so every call sees the current parameters and
no second copy of the model exists.
"""

import inspect
import json
import os
import shutil
import tempfile

import numpy as np

from .. import _distributed, _stages, _trace, _zerosbp
from .._placement import placement as Placement
from .._tensor import Tensor
from .graph_config import GraphConfig, pipeline_stages_of
from .module import Module


def _input_dtype(array):
    if np.issubdtype(array.dtype, np.floating):
        return "f32"
    if np.issubdtype(array.dtype, np.integer):
        return "i64"
    raise TypeError(f"graph inputs are float or integer arrays, got "
                    f"{array.dtype}")


class Graph:
    def __init__(self):
        object.__setattr__(self, "_modules", {})
        self.config = GraphConfig()
        self._optimizers = []
        self._placement = None
        self._signature = None  # [(name, shape, dtype)] of the traced inputs
        self._compiled = None
        self._session = None
        self._workdir = None
        self._parameters = {}  # name -> Parameter
        self._values = {}  # name -> (step, value) read back from the ranks
        self._pending_checkpoint = None  # Loaded right after compiling.
        self._spec_compiled = None  # The config spec the plan was built for.
        self._inference = False  # build() returned outputs, no backward.
        self._single_output = True
        self._owner = None  # The training graph whose parameters it runs on.
        self._versions = {}  # name -> Parameter._version, when it owns none.
        self._layouts = {}  # name -> (placement, sbp) it was compiled with.

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    # -- set-up ----------------------------------------------------------------
    def build(self, *args):
        raise NotImplementedError(
            f"{type(self).__name__}.build is not defined: subclass nn.Graph "
            "and define build(self, *inputs) returning the loss after "
            "calling loss.backward() (training), or returning outputs "
            "(inference)")

    def add_optimizer(self, optimizer):
        if self._compiled is not None:
            raise RuntimeError("add_optimizer after the graph was compiled")
        if self._optimizers:
            raise NotImplementedError("one optimizer per graph")
        self._optimizers.append(optimizer)

    def to(self, placement):
        if not isinstance(placement, Placement):
            raise TypeError(f"Graph.to takes a zerosbp.placement, got "
                            f"{type(placement).__name__}")
        if self._compiled is not None and placement != self._placement:
            raise RuntimeError("the graph is already compiled for "
                               f"{self._placement}")
        self._placement = placement
        return self

    @property
    def world(self):
        if _distributed.launched():
            return _distributed.world_size()
        placement = self._placement or self._parameters_placement()
        return placement.world if placement else 1

    @property
    def placement(self):
        """The placement given by to(), else the one its parameters were
        given by to_global, else None (one rank, or the MPI ranks)."""
        return self._placement or self._parameters_placement()

    def _parameters_placement(self):
        """The placement the modules' parameters were given by to_global
        (one for all), or None: a graph not placed by to() takes it."""
        placements = []
        for module in self._modules.values():
            for param in module.parameters():
                if param.placement is not None and \
                        param.placement not in placements:
                    placements.append(param.placement)
        if len(placements) > 1:
            raise ValueError(
                f"{type(self).__name__}: its parameters are placed on "
                f"{placements[0]} and {placements[1]} by to_global; place "
                "the graph with to(placement)")
        return placements[0] if placements else None

    def _effective_placement(self):
        """What the graph is compiled for: its placement, or the flat ranks
        of its world."""
        placement = self.placement
        if placement is None:
            placement = Placement("cpu", ranks=range(self.world))
        return placement

    @staticmethod
    def _stage_placement(placement, stages):
        """The first of `stages` pipeline stages of `placement`, on which
        the graph is captured (zero-pipeline-stages adds the others): its
        first world / stages ranks; the stages of a 2-D placement take
        whole rows, as the pipeline axis is outermost."""
        if stages == 1:
            return placement
        if placement.ndim == 1:
            if placement.world % stages:
                raise ValueError(
                    f"pipeline_parallel_size {stages} does not divide the "
                    f"graph's {placement.world} ranks: each pipeline stage "
                    f"runs on world / {stages} of them")
            return Placement(placement.type,
                             ranks=range(placement.world // stages))
        rows, columns = placement.hierarchy
        if rows % stages:
            raise ValueError(
                f"pipeline_parallel_size {stages} does not divide the "
                f"{rows} row{'s' if rows > 1 else ''} of the graph's "
                f"placement {list(placement.hierarchy)}: the pipeline axis "
                "is outermost, so each stage takes whole rows of ranks")
        return Placement(placement.type,
                         ranks=range(placement.world // stages),
                         hierarchy=(rows // stages, columns))

    # -- naming ----------------------------------------------------------------
    def _module_names(self):
        """id(Module) -> its name in the graph (attribute, then PyTorch
        path), for messages."""
        names = {}
        for attr, module in self._modules.items():
            for name, sub in module.named_modules(attr):
                names.setdefault(id(sub), name)
        return names

    def _parameter_names(self):
        """id(Parameter) -> name: a lone module with parameters gives its own
        (PyTorch) names, several get their attribute name as a prefix."""
        holders = [(attr, module) for attr, module in self._modules.items()
                   if any(True for _ in module.parameters())]
        names = {}
        for attr, module in holders:
            prefix = attr if len(holders) > 1 else ""
            for name, param in module.named_parameters(prefix):
                names.setdefault(id(param), name)
        return names

    # -- compile -----------------------------------------------------------------
    def _check_world(self):
        if _distributed.launched():
            size = _distributed.world_size()
            if self._placement and self._placement.world != size:
                raise ValueError(
                    f"the graph is placed on {self._placement.world} ranks "
                    f"but was launched on {size} processes")

    def _training_owner(self):
        """The compiled training graph that holds this graph's parameters
        (those its modules hold), or None."""
        owners = {}
        for module in self._modules.values():
            for param in module.parameters():
                graph = param._graph
                if graph is not None and graph is not self and \
                        graph._session is not None and not graph._inference:
                    owners[id(graph)] = graph
        if len(owners) > 1:
            names = sorted(type(g).__name__ for g in owners.values())
            raise ValueError(
                f"{type(self).__name__}: its parameters are held by several "
                f"training graphs ({', '.join(names)}); an inference graph "
                "runs on the parameters of one")
        return next(iter(owners.values()), None)

    def _check_training_optimizer(self):
        if not self._optimizers and not self.config._deepspeed_has_optimizer():
            raise RuntimeError(
                "the graph has no optimizer: call self.add_optimizer(...) in "
                "__init__ (or give one in the DeepSpeed config)")
        if self._optimizers and self.config._deepspeed_has_optimizer():
            raise ValueError(
                "an optimizer is given both by add_optimizer and by the "
                "DeepSpeed config; give one")

    def _inference_spec(self, owner):
        """An inference graph on a training graph's parameters is compiled
        with that graph's config, so that the layouts agree."""
        if owner is None:
            return dict(self.config._spec)
        own = self.config._spec
        if own and own != {k: v for k, v in owner._spec_compiled.items()
                           if k in own}:
            raise ValueError(
                f"{type(self).__name__} runs on the parameters of "
                f"{type(owner).__name__} and takes its config; do not "
                "configure it (its config: "
                f"{_zerosbp.check_config(own, self.world)})")
        return dict(owner._spec_compiled)

    def _compile(self, arrays):
        if type(self).build is Graph.build:
            self.build()
        owner = self._training_owner()
        if owner is not None and self._placement is None:
            self._placement = owner._placement
        if self._placement is None:
            self._placement = self._parameters_placement()
        self._check_world()
        names = list(inspect.signature(self.build).parameters)
        if len(names) != len(arrays) and not any(
                p.kind == p.VAR_POSITIONAL
                for p in inspect.signature(self.build).parameters.values()):
            raise TypeError(f"build() takes {len(names)} inputs, got "
                            f"{len(arrays)}")
        names = [names[i] if i < len(names) else f"input{i}"
                 for i in range(len(arrays))]
        # An inference graph on a training graph's parameters takes its
        # config, pipeline stages included.
        stages = pipeline_stages_of(owner._spec_compiled if owner is not None
                                    else self.config._spec)
        placement = self._effective_placement()
        captured_on = self._stage_placement(placement, stages)
        self._check_batch(names, arrays, captured_on, stages)

        capture = _zerosbp.GraphCapture(
            type(self).__name__, self.world, placement.type,
            list(captured_on.hierarchy) if captured_on.ndim > 1 else [],
            stages)
        param_names = self._parameter_names()
        if owner is not None:
            # The training graph's names, which its plan's variables carry.
            param_names.update(
                {id(p): n for n, p in owner._parameters.items()})
        trace = _trace.Trace(capture, param_names, placement, stages,
                             self._module_names())
        signature = []
        _trace.set_current(trace)
        try:
            inputs = []
            for name, array in zip(names, arrays):
                dtype = _input_dtype(array)
                signature.append((name, array.shape, dtype))
                tensor = Tensor(capture.input(name, list(array.shape),
                                              dtype))
                tensor._input_name = name  # For messages about it.
                inputs.append(tensor)
            result = self.build(*inputs)
            _stages.check_stages(trace)
            inference = trace.loss is None
            self._workdir = self._workdir or tempfile.mkdtemp(
                prefix="zerosbp-graph-")
            plan_file = os.path.join(self._workdir, "model.zplan")
            if inference:
                outputs = self._inference_outputs(result)
                if self._optimizers:
                    raise RuntimeError(
                        "build() did not call loss.backward() but the graph "
                        "has an optimizer: a training graph returns the loss "
                        "it called backward() on, an inference graph has no "
                        "optimizer")
                self._check_shared(trace, owner)
                spec = self._inference_spec(owner)
                compiled = capture.compile_inference(
                    [t._handle for t in outputs], spec, plan_file, True)
            else:
                if result is not None and result is not trace.loss:
                    raise RuntimeError("build() must return the loss it "
                                       "called backward() on")
                self._check_training_optimizer()
                self._freeze_untrained(trace)
                spec = dict(self.config._spec)
                if self._optimizers:
                    spec.update(self._optimizers[0]._spec())
                compiled = capture.compile(trace.loss._handle, spec,
                                           plan_file, True)
        finally:
            _trace.set_current(None)

        self._signature = signature
        self._compiled = compiled
        self.config._compiled_by = type(self).__name__
        self._spec_compiled = spec
        self._inference = inference
        self._report = json.loads(compiled["report"])
        backend = "mpi" if _distributed.launched() else "inprocess"
        self._session = _zerosbp.Session(plan_file, backend)
        self._parameters = dict(trace.used_parameters)
        self._layouts = {name: (p.placement, p.sbp)
                         for name, p in self._parameters.items()}
        if inference:
            self._owner = owner
            if owner is not None:
                if self._pending_checkpoint is not None:
                    self._pending_checkpoint = None
                    raise RuntimeError(self._shared_load_error())
                self._session.share_parameters_with(owner._session)
                return
            self._session.initialize(
                {name: p._data for name, p in self._parameters.items()})
            self._versions = {name: p._version
                              for name, p in self._parameters.items()}
            if self._pending_checkpoint is not None:
                # Its parameters only (docs/checkpoint.md#inference-plans).
                path = self._pending_checkpoint["path"]
                self._pending_checkpoint = None
                self._session.load_checkpoint(path)
            return
        self._session.initialize(
            {name: p._data for name, p in self._parameters.items()})
        for name, param in self._parameters.items():
            param._graph, param._name = self, name
        if self._pending_checkpoint is not None:
            # Before the first step. A checkpoint that does not fit leaves
            # the initial values, and is not tried again.
            path = self._pending_checkpoint["path"]
            self._pending_checkpoint = None
            self._session.load_checkpoint(path)

    def _check_batch(self, names, arrays, placement, stages):
        """Inputs are the global batch, split along axis 0 over the ranks
        (and each rank's share into the micro-batches): refused here with
        the input's name rather than by the compiler's partitioning. On a
        2-D placement they are split over the data axis, and the compiler
        may split a rank's rows over the model axis too (a reduce-scatter of
        a row-parallel layer's partial sums), so the batch divides over
        every rank there as well. With pipeline stages the batch goes
        through every stage: `placement` is one stage's."""
        world = placement.world
        of_stage = " of a pipeline stage" if stages > 1 else ""
        micro = self.config._spec.get("accumulation_steps", 1)
        for name, array in zip(names, arrays):
            if array.ndim == 0:
                continue
            batch = array.shape[0]
            if batch == 0:
                raise ValueError(f"input '{name}': the batch is empty "
                                 f"(shape {array.shape})")
            if batch % (world * micro) == 0:
                continue
            if placement.ndim == 1:
                over = f"the {world} ranks{of_stage}" if stages > 1 else \
                    f"{world} ranks"
                why = "inputs are split along axis 0"
            else:
                dp, tp = placement.hierarchy
                over = f"the {dp} x {tp} ranks{of_stage} of hierarchy " \
                    f"[{dp}, {tp}]"
                why = ("inputs are split along axis 0 over the data axis "
                       "and their rows may be split over the model axis")
            over += f" x {micro} micro-batches" if micro > 1 else ""
            raise ValueError(
                f"input '{name}': a batch of {batch} does not divide over "
                f"{over}: {why}, so the batch must be a multiple of "
                f"{world * micro}")

    def _inference_outputs(self, result):
        """build()'s outputs as a list of graph tensors; remembers whether
        it returned one tensor or a tuple."""
        self._single_output = isinstance(result, Tensor)
        outputs = [result] if self._single_output else result
        if not isinstance(outputs, (list, tuple)) or not outputs or \
                not all(isinstance(t, Tensor) for t in outputs):
            raise RuntimeError(
                "build() returned neither a loss it called backward() on "
                "(training) nor graph tensors (inference: a tensor or a "
                f"tuple of tensors), but {type(result).__name__}")
        return list(outputs)

    def _check_shared(self, trace, owner):
        """An inference graph runs on one training graph's parameters or on
        its own: not on a mix, and not yet on a pipelined graph's."""
        if owner is None:
            return
        if trace.pipeline_stages > 1:
            raise NotImplementedError(
                f"{type(self).__name__} would run on the parameters of "
                f"{type(owner).__name__}, which has pipeline_parallel_size "
                f"{trace.pipeline_stages}; an inference graph on a pipelined "
                "graph's parameters is not built yet: give it parameters of "
                "its own (a copy of the model, load_state_dict) and "
                "set_pipeline_parallel_size")
        held = {id(p) for p in owner._parameters.values()}
        for name, param in trace.used_parameters.items():
            if id(param) not in held:
                raise ValueError(
                    f"parameter '{name}' is used by {type(self).__name__}."
                    f"build() but not by {type(owner).__name__}, whose "
                    "parameters the other ones are: an inference graph "
                    "runs on one training graph's parameters or on its own")

    def _follow_parameters(self, arrays):
        """An inference graph that holds its own parameters follows them:
        values set since are copied in, and once a training graph holds them
        it is compiled again to run on that graph's storage."""
        if self._owner is not None:
            return
        # Held by a training graph since, or laid out anew by to_global.
        if any(p._graph is not None and p._graph._session is not None and
               not p._graph._inference for p in self._parameters.values()) \
                or any((p.placement, p.sbp) != self._layouts[name]
                       for name, p in self._parameters.items()):
            self._reset()
            self._compile(arrays)
            return
        for name, param in self._parameters.items():
            if param._version != self._versions.get(name):
                self._session.set_parameter(name, param._data)
                self._versions[name] = param._version

    def _reset(self):
        self._compiled = None
        self._session = None
        self._owner = None
        self._versions = {}

    def _freeze_untrained(self, trace):
        """Parameters the optimizer was not given keep their values."""
        if not self._optimizers:
            return
        trained = {id(p) for p in self._optimizers[0].params}
        for name, param in trace.used_parameters.items():
            if id(param) not in trained and param.requires_grad:
                raise ValueError(
                    f"parameter '{name}' is used by build() but not given to "
                    "the optimizer; set requires_grad=False to freeze it")

    # -- run -------------------------------------------------------------------
    def _check_inputs(self, arrays):
        if len(arrays) != len(self._signature):
            raise TypeError(f"the graph was traced with "
                            f"{len(self._signature)} inputs, got "
                            f"{len(arrays)}")
        for (name, shape, dtype), array in zip(self._signature, arrays):
            if array.shape != shape or _input_dtype(array) != dtype:
                raise ValueError(
                    f"input '{name}': the graph was traced with shape "
                    f"{shape} ({dtype}), got {array.shape} "
                    f"({_input_dtype(array)}); build a new graph for a new "
                    "shape")

    def __call__(self, *args):
        """A training graph runs one step and returns the loss; an inference
        graph returns its outputs (numpy arrays of the global batch)."""
        arrays = [np.asarray(a) for a in args]
        if self._compiled is None:
            self._compile(arrays)
        else:
            self._check_inputs(arrays)
        if self._inference:
            self._follow_parameters(arrays)
            outputs = self._session.evaluate(arrays)
            return outputs[0] if self._single_output else tuple(outputs)
        loss = self._session.step(arrays)
        return np.array(loss, dtype=np.float32)

    def compile(self, *args):
        """Traces and compiles the graph for the shapes of `args` without
        running it (a later call runs it). Returns the graph."""
        arrays = [np.asarray(a) for a in args]
        if self._compiled is None:
            self._compile(arrays)
        else:
            self._check_inputs(arrays)
        return self

    @property
    def inference(self):
        """True for a graph whose build() returns outputs without calling
        backward (known once compiled)."""
        return self._inference

    def trace_step(self, *args, path=None):
        """Runs one training step recording what each rank's compute and
        communication streams did; returns the Chrome trace-event JSON
        (a dict: chrome://tracing, Perfetto) and writes it to `path` if
        given. Under MPI it holds this process's rank."""
        arrays = [np.asarray(a) for a in args]
        if self._compiled is None:
            self._compile(arrays)
        else:
            self._check_inputs(arrays)
        self._session.set_tracing(True)
        try:
            if self._inference:
                self._follow_parameters(arrays)
                self._session.evaluate(arrays)
            else:
                self._session.step(arrays)
        finally:
            self._session.set_tracing(False)
        text = self._session.trace_json()
        if path:
            with open(path, "w") as file:
                file.write(text + "\n")
        return json.loads(text)

    # -- parameters --------------------------------------------------------------
    def _parameter_value(self, name):
        steps = self._session.steps_run
        cached = self._values.get(name)
        if cached is None or cached[0] != steps:
            cached = (steps, self._session.parameter(name))
            self._values[name] = cached
        return cached[1]

    def _set_parameter(self, name, value):
        self._session.set_parameter(name, value)
        self._values.pop(name, None)

    # -- checkpoints -------------------------------------------------------------
    def save_checkpoint(self, directory, keep=0, seed=0):
        """Saves the whole training state (parameters, fp32 masters,
        optimizer state, the step count) as `directory`/step-NNNNNNNN and
        points `directory`/latest at it; keeps the newest `keep` checkpoints
        (0: all). `seed` is recorded as the data seed (load_checkpoint
        returns it) for a data loader that draws from it. Returns the
        checkpoint's path. Under MPI, collective."""
        self._require_compiled("save_checkpoint")
        self._require_training("save_checkpoint")
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
            raise ValueError(f"keep must be 0 (keep all) or a positive "
                             f"int, got {keep!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or \
                not 0 <= seed < 2 ** 64:
            raise ValueError(f"seed must be an int in [0, 2**64), got "
                             f"{seed!r}")
        return self._session.save_checkpoint(os.fspath(directory), keep,
                                             seed)

    def load_checkpoint(self, path):
        """Loads a checkpoint (a step directory, or a directory with
        `latest`) saved at any world size and ZeRO stage; training
        continues from its step. An inference graph with parameters of its
        own loads only the parameters. Before the first call, the manifest is
        checked now and the state is loaded right after compiling. A
        checkpoint that does not check leaves the state as it was. Returns
        the checkpoint's path, step, world, stage and seed (a dict). Under
        MPI, collective."""
        path = os.fspath(path)
        if self._compiled is None:
            info = _zerosbp.checkpoint_info(path)
            self._pending_checkpoint = info
            return info
        if self._inference and self._owner is not None:
            raise RuntimeError(self._shared_load_error())
        info = self._session.load_checkpoint(path)
        self._values.clear()  # Cached values are the state before.
        return info

    @property
    def steps_run(self):
        """Training steps the state has seen: a loaded checkpoint's, and
        those run since."""
        if self._session is not None:
            return self._session.steps_run
        if self._pending_checkpoint is not None:
            return self._pending_checkpoint["step"]
        return 0

    # -- inspection --------------------------------------------------------------
    def _shared_load_error(self):
        return (f"load_checkpoint: {type(self).__name__} runs on the "
                f"parameters of {type(self._owner).__name__}; load the "
                "checkpoint into that graph, whose optimizer state goes with "
                "them")

    def _require_training(self, what):
        if self._inference:
            raise RuntimeError(
                f"{what}: {type(self).__name__} is an inference graph and "
                "holds no training state; call it on the training graph")

    def _require_compiled(self, what):
        if self._compiled is None:
            raise RuntimeError(f"{what}: the graph is compiled on its first "
                               "call; call it once with a batch")

    @property
    def passes(self):
        """The passes whose IR ir() can show, in order ("capture" first)."""
        self._require_compiled("passes")
        return [name for name, _ in self._compiled["pass_ir"]]

    def ir(self, after="zero-export-plan"):
        """The IR text after pass `after` ("capture" is before any)."""
        self._require_compiled("ir")
        for name, text in self._compiled["pass_ir"]:
            if name == after:
                return text
        raise ValueError(f"no pass '{after}' in this graph's pipeline; "
                         f"passes: {', '.join(self.passes)}")

    def ir_dump(self, directory):
        """Writes the IR after every pass: NN-<pass>.mlir. Returns the
        paths."""
        self._require_compiled("ir_dump")
        os.makedirs(directory, exist_ok=True)
        paths = []
        for index, (name, text) in enumerate(self._compiled["pass_ir"]):
            path = os.path.join(directory, f"{index:02d}-{name}.mlir")
            with open(path, "w") as file:
                file.write(text)
            paths.append(path)
        return paths

    @property
    def report(self):
        """The compiler's report (zero-compile --report=json)."""
        self._require_compiled("report")
        return self._report

    def memory_report(self):
        """Per rank: the compiler's planned bytes and the measured peaks."""
        self._require_compiled("memory_report")
        plan = self._report["plan"]["memory_plan"]
        planned = {
            "model_state_bytes": self._report["model_state_bytes_per_rank"],
            "bytes_by_role": dict(self._report["bytes_per_rank"]),
            "arena_bytes": plan["peak_bytes_per_rank"],
            "peak_bytes_by_role": dict(plan["peak_bytes_by_role"]),
        }
        if self._inference:
            # Next to a training graph's parameters it holds the rest only:
            # the most bytes live at once, less the parameters, in an arena
            # past them.
            planned["added_bytes"] = plan["lower_bound_bytes"] - \
                plan["peak_bytes_by_role"]["param"] if self._owner else \
                plan["lower_bound_bytes"]
            planned["held_arena_bytes"] = self._session.arena_bytes_held
            planned["shares_parameters_with"] = \
                type(self._owner).__name__ if self._owner else None
        measured = [dict(r["peak_bytes"]) for r in self._session.records()]
        return {"planned": planned, "measured": measured}

    def comm_report(self):
        """Per rank: planned bytes sent per step by collective kind, and what
        the last step measured."""
        self._require_compiled("comm_report")
        planned = {k: v for k, v in
                   self._report["comm_bytes_per_step"].items()}
        measured = [r["steps"][-1]["bytes_sent"] if r["steps"] else {}
                    for r in self._session.records()]
        return {"planned": planned,
                "collectives": dict(self._report["collectives"]),
                "measured": measured}

    def step_times(self):
        """Per rank, per step: time in ms by phase."""
        self._require_compiled("step_times")
        return [[{k: v for k, v in s.items() if k != "bytes_sent"}
                 for s in r["steps"]] for r in self._session.records()]

    def __repr__(self):
        head = f"{type(self).__name__}(world={self.world}, " \
               f"stage={self.config.stage})"
        if self._compiled is None:
            return head + ": not compiled yet (call it once with a batch)"
        return (head + ":\n  config: " + self._compiled["config"] + "\n" +
                self._compiled["summary"].rstrip())

    def __del__(self):
        workdir = getattr(self, "_workdir", None)
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)
