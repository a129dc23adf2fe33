#!/usr/bin/python3
"""Compares a runtime training run with the float64 reference, or two runs.

Against the reference (float32 run vs float64 reference):
    compare.py --case DIR --report run.json --saved SAVEDIR
               [--rtol R] [--loss-rtol R] [--loss-atol A]
               [--param-rtol R] [--param-atol A] [--invariant-atol A]
  run.json's "losses" (one per step) vs DIR/reference.json's, and every
  SAVEDIR/<param>.npy (float32, PyTorch layout) vs DIR/reference/<param>.npy.

Two runs bit for bit (e.g. ZeRO stage 0 vs 3 on the in-process backend):
    compare.py --bitwise A.json B.json [--saved-a DIR --saved-b DIR]
  losses must be the same doubles (write them with repr / 17 significant
  digits), parameters the same bytes.

Two runs to float32 noise (e.g. MPI vs in-process):
    compare.py --close A.json B.json [--rtol 1e-6] [--saved-a DIR --saved-b DIR]
               [--case DIR] [--param-atol A] [--invariant-atol A]

Exit status 0 on agreement, 1 on a mismatch (with a line saying what), 2 on
bad usage or unreadable input.

Default tolerances. They come from measuring honest float32 training against
this reference (emulate_run.py: float32 NumPy, 1 to 3 data-parallel ranks,
the default sizes, 20 steps) and leaving a wide margin; a real bug (a missing
1/N, a wrong bias correction or learning rate, a dropped gradient term) moves
losses by 1e-3 or more and parameters by about lr per step.
  * Losses: |run - ref| <= 1e-6 + 1e-4 |ref|. Measured worst 4e-7 relative:
    the loss of a step depends on the float32 parameters of earlier steps,
    so its error is a few float32 roundings (6e-8 each) compounded.
  * Parameters, SGD: |run - ref| <= 1e-5 + 1e-4 |ref|. SGD moves a parameter
    by lr * g, so the float32 gradient's ~1e-6 relative error reaches the
    parameter scaled by lr; measured worst 4e-7.
  * Parameters, Adam / AdamW: atol 1e-3 * lr * steps (2e-4 at lr 1e-2, 20
    steps), rtol 1e-4. Adam moves every element by about lr per step whatever
    the gradient's size, so an element whose gradient is small has its
    direction set by float32 noise: measured worst 1.4e-5 (GPT-2), and two
    float32 runs with different reduction orders differ by as much.
  * Loss-invariant entries (GPT-2's key bias, models.loss_invariant_slice):
    the exact gradient is 0, so Adam drives them by rounding noise (measured
    1e-3 after 20 steps). They are held to |run - ref| <= lr * steps (the
    most Adam can move them) and must be finite; with SGD they use the
    ordinary parameter tolerance.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import models  # noqa: E402

LOSS_RTOL, LOSS_ATOL = 1e-4, 1e-6
PARAM_RTOL, SGD_PARAM_ATOL = 1e-4, 1e-5
ADAM_ATOL_PER_LR_STEP = 1e-3
# --close without --case does not know lr * steps: the defaults' value.
DEFAULT_INVARIANT_ATOL = 1e-2 * 20


class Mismatch(Exception):
    """A disagreement between the runs: reported, exit status 1."""


class BadInput(Exception):
    """Missing or malformed input: exit status 2."""


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def load_json(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise BadInput("cannot read %s: %s" % (path, error))


def load_losses(path: str) -> List[float]:
    losses = load_json(path).get("losses")
    if not isinstance(losses, list) or not all(isinstance(v, (int, float)) for v in losses):
        raise BadInput('%s: "losses" must be a list of numbers' % path)
    return [float(v) for v in losses]


def load_params(directory: str, names: Optional[List[str]] = None) -> Dict[str, np.ndarray]:
    """<name>.npy files of a directory (all of them, or exactly `names`)."""
    if not os.path.isdir(directory):
        raise BadInput("no such directory: %s" % directory)
    found = sorted(f[:-4] for f in os.listdir(directory) if f.endswith(".npy"))
    if names is not None:
        missing = sorted(set(names) - set(found))
        extra = sorted(set(found) - set(names))
        if missing or extra:
            raise Mismatch("%s: missing parameters %s, unexpected %s" % (directory, missing, extra))
        found = names
    return {n: np.load(os.path.join(directory, n + ".npy")) for n in found}


# ---------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------


def compare_losses(run: List[float], ref: List[float], rtol: float, atol: float,
                   labels=("run", "ref")) -> List[str]:
    """Prints the worst step; returns failure messages."""
    if len(run) != len(ref):
        return ["%d losses in %s, %d in %s" % (len(run), labels[0], len(ref), labels[1])]
    if not ref:
        return ["no losses to compare"]
    a, b = np.array(run), np.array(ref)
    err = np.abs(a - b)
    allowed = atol + rtol * np.abs(b)
    bad = ~(err <= allowed)  # NaN counts as bad
    worst = int(np.argmax(np.where(np.isfinite(err), err / allowed, np.inf)))
    print("losses: %d steps, %s %.6f -> %.6f, worst step %d: %s %.9g %s %.9g "
          "(|diff| %.2e, allowed %.2e)"
          % (len(a), labels[1], b[0], b[-1], worst, labels[0], a[worst], labels[1], b[worst],
             err[worst], allowed[worst]))
    if bad.any():
        steps = np.flatnonzero(bad)
        s = steps[0]
        return ["loss differs at steps %s (first: %s %.9g vs %s %.9g, allowed |diff| %.2e)"
                % (steps.tolist(), labels[0], a[s], labels[1], b[s], allowed[s])]
    return []


def tolerance_array(name: str, ref: np.ndarray, rtol: float, atol: float,
                    invariant_atol: Optional[float]) -> np.ndarray:
    """Allowed |diff| per element; loss-invariant entries get invariant_atol."""
    allowed = atol + rtol * np.abs(ref)
    s = models.loss_invariant_slice(name, ref.shape)
    if s is not None and invariant_atol is not None:
        allowed.reshape(-1)[s] = invariant_atol
    return allowed


def compare_params(run: Dict[str, np.ndarray], ref: Dict[str, np.ndarray], rtol: float,
                   atol: float, invariant_atol: Optional[float]) -> List[str]:
    """Prints the worst deviation of every parameter; returns failures."""
    failures = []
    width = max(len(n) for n in ref)
    print("%-*s %14s %12s %12s %8s"
          % (width, "parameter", "shape", "max |diff|", "allowed", "ratio"))
    for name, b in ref.items():
        a = run[name]
        if a.shape != b.shape:
            failures.append("%s: shape %s, expected %s" % (name, a.shape, b.shape))
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if not np.isfinite(a64).all():
            failures.append("%s: %d non-finite values" % (name, int((~np.isfinite(a64)).sum())))
            continue
        err = np.abs(a64 - b64)
        allowed = tolerance_array(name, b64, rtol, atol, invariant_atol)
        ratio = err / allowed
        i = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.size else ()
        worst = (err[i], allowed[i], ratio[i]) if ratio.size else (0.0, 0.0, 0.0)
        print("%-*s %14s %12.3e %12.3e %8.3f%s" % (width, name, "x".join(map(str, b.shape)),
                                                 worst[0], worst[1], worst[2],
                                                 "  FAIL" if worst[2] > 1 else ""))
        if worst[2] > 1:
            failures.append("%s%s: %.9g vs %.9g (|diff| %.2e > allowed %.2e)"
                            % (name, list(i), a64[i], b64[i], worst[0], worst[1]))
    return failures


def float_bits(value: float) -> bytes:
    return struct.pack("<d", value)


def bitwise_losses(a: List[float], b: List[float]) -> List[str]:
    if len(a) != len(b):
        return ["%d losses vs %d" % (len(a), len(b))]
    diff = [s for s, (x, y) in enumerate(zip(a, b)) if float_bits(x) != float_bits(y)]
    print("losses: %d steps, %d differ" % (len(a), len(diff)))
    if diff:
        s = diff[0]
        return ["losses differ at steps %s (first: %r vs %r)" % (diff, a[s], b[s])]
    return []


def bitwise_params(a: Dict[str, np.ndarray], b: Dict[str, np.ndarray]) -> List[str]:
    failures = []
    for name in b:
        x, y = a[name], b[name]
        same = x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        if not same:
            if x.shape != y.shape or x.dtype != y.dtype:
                failures.append("%s: %s %s vs %s %s" % (name, x.dtype, x.shape, y.dtype, y.shape))
            else:
                bytes_x = x.view(np.uint8).reshape(x.size, -1)
                bytes_y = y.view(np.uint8).reshape(y.size, -1)
                n = int((bytes_x != bytes_y).any(axis=1).sum())
                d = np.abs(x.astype(np.float64) - y.astype(np.float64))
                failures.append("%s: %d of %d elements differ (max |diff| %.3e)"
                                % (name, n, x.size, np.nanmax(d)))
    print("parameters: %d compared, %d differ" % (len(b), len(failures)))
    return failures


# ---------------------------------------------------------------------------
# Modes
# ---------------------------------------------------------------------------


def reference_tolerances(args, ref_json: dict) -> Tuple[float, float, float, float,
                                                        Optional[float]]:
    """(loss_rtol, loss_atol, param_rtol, param_atol, invariant_atol)."""
    opt = ref_json["optimizer"]
    lr_steps = float(opt["lr"]) * int(ref_json["steps"])
    adam = opt["type"] in ("adam", "adamw")
    loss_rtol = first(args.loss_rtol, args.rtol, LOSS_RTOL)
    param_rtol = first(args.param_rtol, args.rtol, PARAM_RTOL)
    param_atol = first(args.param_atol,
                       ADAM_ATOL_PER_LR_STEP * lr_steps if adam else SGD_PARAM_ATOL)
    invariant_atol = first(args.invariant_atol, lr_steps if adam else None)
    return loss_rtol, first(args.loss_atol, LOSS_ATOL), param_rtol, param_atol, invariant_atol


def first(*values):
    """The first value that is not None (None if all are)."""
    return next((v for v in values if v is not None), None)


def run_reference_mode(args) -> List[str]:
    ref_json = load_json(os.path.join(args.case, "reference.json"))
    tolerances = reference_tolerances(args, ref_json)
    loss_rtol, loss_atol, param_rtol, param_atol, invariant_atol = tolerances
    print("case %s: %s, %s, %d steps" % (args.case, ref_json["model"]["name"],
                                        ref_json["optimizer"]["type"], ref_json["steps"]))
    invariant = "" if invariant_atol is None else "; loss-invariant entries %.1e" % invariant_atol
    print("tolerances: loss %.1e + %.1e |ref|; params %.1e + %.1e |ref|%s"
          % (loss_atol, loss_rtol, param_atol, param_rtol, invariant))
    failures = compare_losses(load_losses(args.report), ref_json["losses"], loss_rtol, loss_atol)
    names = ref_json["params"]
    ref = load_params(os.path.join(args.case, "reference"), names)
    run = load_params(args.saved, names)
    return failures + compare_params(run, ref, param_rtol, param_atol, invariant_atol)


def run_bitwise_mode(args) -> List[str]:
    a_path, b_path = args.bitwise
    failures = bitwise_losses(load_losses(a_path), load_losses(b_path))
    if args.saved_a or args.saved_b:
        b = load_params(require(args.saved_b, "--saved-b"))
        a = load_params(require(args.saved_a, "--saved-a"), list(b))
        failures += bitwise_params(a, b)
    return failures


def run_close_mode(args) -> List[str]:
    a_path, b_path = args.close
    rtol = first(args.rtol, 1e-6)
    failures = compare_losses(load_losses(a_path), load_losses(b_path),
                              first(args.loss_rtol, rtol), first(args.loss_atol, 0.0),
                              labels=("A", "B"))
    if args.saved_a or args.saved_b:
        invariant_atol, param_atol = DEFAULT_INVARIANT_ATOL, 1e-4
        if args.case:
            ref_json = load_json(os.path.join(args.case, "reference.json"))
            _, _, _, param_atol, invariant_atol = reference_tolerances(args, ref_json)
        param_atol = first(args.param_atol, param_atol)
        invariant_atol = first(args.invariant_atol, invariant_atol)
        param_rtol = first(args.param_rtol, rtol)
        print("tolerances: params %.1e + %.1e |B|; loss-invariant entries %s"
              % (param_atol, param_rtol,
                 "none" if invariant_atol is None else "%.1e" % invariant_atol))
        b = load_params(require(args.saved_b, "--saved-b"))
        a = load_params(require(args.saved_a, "--saved-a"), list(b))
        failures += compare_params(a, b, param_rtol, param_atol, invariant_atol)
    return failures


def require(value, flag):
    if not value:
        raise BadInput("%s is needed with --saved-a / --saved-b" % flag)
    return value


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(__doc__.splitlines()[1:]))
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--report", help="run.json of the run checked against --case")
    mode.add_argument("--bitwise", nargs=2, metavar=("A.json", "B.json"))
    mode.add_argument("--close", nargs=2, metavar=("A.json", "B.json"))
    p.add_argument("--case", help="case directory written by make_case.py")
    p.add_argument("--saved", help="the run's final parameters (<param>.npy)")
    p.add_argument("--saved-a", help="run A's final parameters")
    p.add_argument("--saved-b", help="run B's final parameters")
    p.add_argument("--rtol", type=float, help="relative tolerance of losses and parameters")
    p.add_argument("--loss-rtol", type=float)
    p.add_argument("--loss-atol", type=float)
    p.add_argument("--param-rtol", type=float)
    p.add_argument("--param-atol", type=float)
    p.add_argument("--invariant-atol", type=float,
                   help="allowed |diff| on loss-invariant entries (GPT-2 key bias)")
    args = p.parse_args(argv)
    if args.report and not (args.case and args.saved):
        p.error("--report needs --case and --saved")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        if args.report:
            failures = run_reference_mode(args)
        elif args.bitwise:
            failures = run_bitwise_mode(args)
        else:
            failures = run_close_mode(args)
    except BadInput as error:
        print("compare.py: error: %s" % error, file=sys.stderr)
        return 2
    except Mismatch as error:
        failures = [str(error)]
    if failures:
        print("FAIL: %d mismatch(es):" % len(failures))
        for f in failures:
            print("  " + f)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
