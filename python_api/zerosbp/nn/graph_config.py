"""nn.Graph.config: OneFlow's GraphConfig methods, checked when called."""

import json
import math
import os
import re

import numpy as np

from .. import _zerosbp

_AMP_DTYPES = {"fp16": "fp16", "float16": "fp16", "f16": "fp16",
               "bf16": "bf16", "bfloat16": "bf16"}


# The compiler reads integer fields as int64.
_INT64_MAX = 2 ** 63 - 1


def _check_int(method, name, value):
    """An int (not a bool) that the compiler can read."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{method}: {name} must be an int, got {value!r}")
    if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        raise ValueError(f"{method}: {name} is out of range: {value} (at "
                         f"most 2**63 - 1)")


class GraphConfig:
    def __init__(self):
        self._spec = {}
        self._deepspeed = None  # The parsed DeepSpeed config, if any.
        self._compiled_by = None  # The graph, once it compiled this config.

    def _check_open(self, method):
        """The plan is compiled from the config on the first call: a later
        change would not reach it, so it is refused (once the arguments
        themselves are checked)."""
        if self._compiled_by is not None:
            raise RuntimeError(
                f"{method}: {self._compiled_by} was compiled on its first "
                "call and its config can no longer change; configure it "
                "before the first call, or build a new graph")

    def _set(self, drop=(), **fields):
        """Sets `fields` and unsets those named in `drop`."""
        spec = {k: v for k, v in self._spec.items() if k not in drop}
        spec.update(fields)
        # The compiler's own checks, with its messages, where the call is;
        # on the fewest ranks the config allows (one per pipeline stage).
        _zerosbp.check_config(spec, pipeline_stages_of(spec))
        self._spec = spec

    def enable_zero(self, mode=True, *, stage=2, shard_min_size=1024,
                    shard_restore_level=1, mics_shard_size=0,
                    hpz_partition_size=0):
        """OneFlow's enable_zero: ZeRO stage 1-3 with mode True; off (plain
        data parallelism) with mode False. `mics_shard_size` m (not
        OneFlow's) splits the model states within groups of m ranks and
        replicates them across groups (MiCS); 0 splits them over every
        rank. `hpz_partition_size` h (not OneFlow's either) lets the stage-3
        backward gather parameters from a copy split within groups of h
        ranks (ZeRO++ hpZ); 0 turns it off."""
        # A string such as "no" would be true.
        if not isinstance(mode, (bool, np.bool_)):
            raise TypeError("enable_zero: mode must be True (ZeRO) or False "
                            f"(off), got {mode!r}")
        for name, value in (("stage", stage),
                            ("shard_min_size", shard_min_size),
                            ("shard_restore_level", shard_restore_level),
                            ("mics_shard_size", mics_shard_size),
                            ("hpz_partition_size", hpz_partition_size)):
            _check_int("enable_zero", name, value)
        self._check_open("enable_zero")
        if "deepspeed_json" in self._spec:
            raise ValueError(
                "enable_zero and set_deepspeed_config exclude each other: "
                "the DeepSpeed config's zero_optimization section sets the "
                "stage")
        self._set(zero=True, zero_mode=bool(mode), stage=stage,
                  shard_min_size=shard_min_size,
                  shard_restore_level=shard_restore_level,
                  mics_shard_size=mics_shard_size,
                  hpz_partition_size=hpz_partition_size)

    def set_deepspeed_config(self, config):
        """A DeepSpeed config (a dict, or the path of a JSON file): every
        key is honoured or refused with an error."""
        if isinstance(config, (str, os.PathLike)):
            with open(config) as file:
                text = file.read()
            parsed = json.loads(text)
        elif isinstance(config, dict):
            parsed = config
            text = json.dumps(config)
        else:
            raise TypeError("set_deepspeed_config takes a dict or a path, "
                            f"got {type(config).__name__}")
        self._check_open("set_deepspeed_config")
        if self._spec.get("zero"):
            raise ValueError(
                "enable_zero and set_deepspeed_config exclude each other")
        self._set(deepspeed_json=text)
        self._deepspeed = parsed

    def enable_amp(self, mode=True, dtype="fp16"):
        """Mixed precision with fp32 master weights: fp16 (loss scaling) or
        bf16. ``enable_amp("bf16")`` is short for
        ``enable_amp(True, dtype="bf16")``."""
        if isinstance(mode, str):
            mode, dtype = True, mode
        key = str(dtype).replace("torch.", "").replace("numpy.", "")
        if mode and key not in _AMP_DTYPES:
            raise ValueError(f"enable_amp: dtype must be fp16 or bf16, got "
                             f"{dtype!r}")
        self._check_open("enable_amp")
        if not mode:
            self._spec.pop("precision", None)
            return
        self._set(precision=_AMP_DTYPES[key])

    def set_gradient_accumulation_steps(self, steps):
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError("set_gradient_accumulation_steps: expected a "
                             f"positive int, got {steps!r}")
        _check_int("set_gradient_accumulation_steps", "steps", steps)
        self._check_open("set_gradient_accumulation_steps")
        self._set(accumulation_steps=steps)

    def set_gradient_clipping(self, max_norm):
        """Clips the global gradient norm to `max_norm`; 0 turns clipping
        off."""
        # NaN compares false with everything, so it would pass `< 0`.
        if isinstance(max_norm, bool) or \
                not isinstance(max_norm, (int, float)) or \
                not math.isfinite(max_norm) or max_norm < 0:
            raise ValueError("set_gradient_clipping: expected a finite norm "
                             f">= 0 (0: no clipping), got {max_norm!r}")
        self._check_open("set_gradient_clipping")
        self._set(clipping=float(max_norm))

    def set_pipeline_parallel_size(self, size):
        """Cuts the graph into `size` pipeline stages (Megatron's
        pipeline_model_parallel_size), the modules of each marked with
        ``zs.pipeline_stage(module, k)``: the graph's ranks are `size`
        stages of world / `size` ranks each, the pipeline axis outermost,
        and set_gradient_accumulation_steps' micro-batches flow through
        them (docs/design.md#pipeline-parallelism). 1 turns it off."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError("set_pipeline_parallel_size: expected an int "
                             f">= 1, got {size!r}")
        _check_int("set_pipeline_parallel_size", "size", size)
        self._check_open("set_pipeline_parallel_size")
        self._set(pipeline_parallel_size=size)

    def set_pipeline_schedule(self, schedule):
        """The order of the micro-batches on each pipeline stage:
        ``"1f1b"`` (the default: one forward, one backward, as Megatron and
        DeepSpeed run them) or ``"gpipe"`` (every forward, then every
        backward). Both give the same losses bit for bit."""
        if schedule not in ("1f1b", "gpipe"):
            raise ValueError("set_pipeline_schedule: expected \"1f1b\" or "
                             f"\"gpipe\", got {schedule!r}")
        self._check_open("set_pipeline_schedule")
        self._set(pipeline_schedule=schedule)

    def set_pipeline_options(self, options):
        """Further compiler options as ``key=value`` pairs (zero-opt's
        --zero-pipeline syntax), e.g. ``"overlap-comm=true
        reduce-bucket-size=1000"``."""
        self._check_open("set_pipeline_options")
        self._set(overrides=str(options))

    def set_offload_optimizer(self, device, *, nvme_path=None,
                              pin_memory=False, buffer_count=4,
                              delayed_param_update=False):
        """ZeRO-Offload (``device="cpu"``: optimizer states and fp32 masters
        in host memory, the optimizer step on the host) or ZeRO-Infinity
        (``device="nvme"``: the states in a file under ``nvme_path``),
        DeepSpeed's ``offload_optimizer``; needs ZeRO stage 1-3
        (docs/design.md#offload). ``buffer_count`` NVMe reads run ahead of
        the updates. ``delayed_param_update``: ZeRO-Offload's one-step
        delayed update, each step applying the previous step's gradient
        (zeros at the first), so that the host updates during the whole
        step; it changes the numerics."""
        _check_offload("set_offload_optimizer", device, nvme_path)
        if isinstance(buffer_count, bool) or not isinstance(buffer_count,
                                                            int) or \
                buffer_count < 1:
            raise ValueError("set_offload_optimizer: buffer_count must be an "
                             f"int >= 1, got {buffer_count!r}")
        _check_int("set_offload_optimizer", "buffer_count", buffer_count)
        if not isinstance(delayed_param_update, bool):
            raise ValueError("set_offload_optimizer: delayed_param_update "
                             "must be True or False, got "
                             f"{delayed_param_update!r}")
        self._check_open("set_offload_optimizer")
        # The NVMe fields only with NVMe: a field given where it has no
        # effect is refused.
        nvme = {"offload_nvme_path": str(nvme_path),
                "offload_buffer_count": buffer_count} \
            if device == "nvme" else {}
        self._set(drop=("offload_nvme_path", "offload_buffer_count"),
                  offload_optimizer=device,
                  offload_pin_memory=bool(pin_memory),
                  offload_delayed_update=delayed_param_update, **nvme)

    def set_offload_param(self, device, *, nvme_path=None):
        """ZeRO-Infinity's parameter offload, DeepSpeed's ``offload_param``:
        the stage-3 parameter shards in host memory (``"cpu"``) or in a
        file under ``nvme_path`` (``"nvme"``; the same directory as
        set_offload_optimizer's, if both use NVMe), copied to the device
        for each gather (docs/design.md#offload). Needs stage 3."""
        _check_offload("set_offload_param", device, nvme_path)
        self._check_open("set_offload_param")
        nvme = {"offload_param_nvme_path": str(nvme_path)} \
            if device == "nvme" else {}
        self._set(drop=("offload_param_nvme_path",), offload_param=device,
                  **nvme)

    def set_activation_memory_budget(self, budget_bytes):
        """Of the modules marked with ``zs.checkpoint``, checkpoint the
        fewest (in call order) for which the planned activation peak per
        rank fits ``budget_bytes``; ``g.report["activation_checkpointing"]``
        says which (docs/design.md#activation-checkpointing)."""
        if isinstance(budget_bytes, bool) or \
                not isinstance(budget_bytes, int) or budget_bytes < 1:
            raise ValueError("set_activation_memory_budget: expected a "
                             f"number of bytes >= 1, got {budget_bytes!r}")
        _check_int("set_activation_memory_budget", "budget_bytes",
                   budget_bytes)
        self._check_open("set_activation_memory_budget")
        self._set(activation_memory_budget=budget_bytes)

    @property
    def pipeline_parallel_size(self):
        """The pipeline stages configured: set_pipeline_parallel_size's,
        or a ``pipeline-parallel-size`` pair of set_pipeline_options, which
        is applied last; 1 without a pipeline."""
        return pipeline_stages_of(self._spec)

    @property
    def stage(self):
        if self._spec.get("zero"):
            return self._spec["stage"] if self._spec["zero_mode"] else 0
        if self._deepspeed is not None:
            return self._deepspeed.get("zero_optimization", {}).get("stage",
                                                                    0)
        return 0

    def _deepspeed_has_optimizer(self):
        return self._deepspeed is not None and "optimizer" in self._deepspeed


def pipeline_stages_of(spec):
    """The pipeline stages a config spec gives, read as the compiler reads
    them: set_pipeline_options' pairs apply last, and the last pair of a
    key wins. A value that is no integer is the compiler's to refuse."""
    stages = spec.get("pipeline_parallel_size", 1)
    for pair in spec.get("overrides", "").split():
        key, _, value = pair.partition("=")
        if key == "pipeline-parallel-size":
            stages = int(value) if re.fullmatch("[0-9]+", value) else 1
    return max(stages, 1)


def _check_offload(method, device, nvme_path):
    """The device and NVMe directory of an offload setter."""
    if device not in ("cpu", "nvme"):
        raise ValueError(f"{method}: device must be \"cpu\" or \"nvme\", "
                         f"got {device!r}")
    if device == "nvme" and not nvme_path:
        raise ValueError(f"{method}: device \"nvme\" needs nvme_path, the "
                         "directory for the files")
    if device == "cpu" and nvme_path:
        raise ValueError(f"{method}: nvme_path is only used with device "
                         "\"nvme\"")
