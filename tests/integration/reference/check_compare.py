#!/usr/bin/python3
"""Checks compare.py's tolerances: honest float32 runs pass, planted bugs fail.

Honest runs are emulate_run.py's float32 NumPy training on 1, 2 and 3
data-parallel ranks. Each planted bug is a mistake a runtime could make:
the reference-mode comparison must reject it. Also checks --bitwise and
--close on identical, noisy and perturbed runs.

Prints one line per check and "compare OK" on success; exits 1 on failure.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compare  # noqa: E402
import emulate_run  # noqa: E402
import make_case  # noqa: E402
import models  # noqa: E402
import optim  # noqa: E402


# ---------------------------------------------------------------------------
# Planted bugs: each returns emulate() keyword arguments or edits a run
# ---------------------------------------------------------------------------


def wrong_lr(opt_cfg):
    """The learning rate off by 1%."""
    return {"optimizer": optim.make_optimizer(
        optim.OptimizerConfig(**{**opt_cfg.__dict__, "lr": opt_cfg.lr * 1.01}))}


def adamw_without_decay(opt_cfg):
    """AdamW run as Adam: the decoupled weight decay forgotten."""
    return {"optimizer": optim.make_optimizer(
        optim.OptimizerConfig(**{**opt_cfg.__dict__, "kind": "adam", "weight_decay": 0.0}))}


def step_from_zero_plus_one(opt_cfg):
    """Adam's bias correction one step ahead (t counted from 2)."""
    opt = optim.make_optimizer(opt_cfg)
    opt.t = 1
    return {"optimizer": opt}


def missing_one_over_n(_opt_cfg):
    """Data-parallel gradients summed without the 1/N (here N = 2)."""
    def grad_fn(model, cfg, params, batch):
        loss, grads = models.loss_and_grads(model, cfg, params, batch)
        return loss, {k: g * 2 for k, g in grads.items()}
    return {"grad_fn": grad_fn}


def untied_wte(_opt_cfg):
    """GPT-2's wte gradient without the LM-head use."""
    def grad_fn(model, cfg, params, batch):
        loss, grads, dwte_embedding, _ = models.gpt2_loss_and_grad_parts(params, batch, cfg)
        return loss, {**grads, "wte.weight": dwte_embedding}
    return {"grad_fn": grad_fn}


def no_causal_mask(_opt_cfg):
    """GPT-2 attention that sees future tokens."""
    def grad_fn(model, cfg, params, batch):
        saved = models.causal_mask
        models.causal_mask = lambda n: np.ones((n, n), dtype=bool)
        try:
            return models.loss_and_grads(model, cfg, params, batch)
        finally:
            models.causal_mask = saved
    return {"grad_fn": grad_fn}


# (name, models it applies to, optimizers it applies to, bug)
BUGS = [
    ("lr off by 1%", ("mlp", "gpt2"), ("sgd", "adam", "adamw"), wrong_lr),
    ("AdamW without weight decay", ("mlp", "gpt2"), ("adamw",), adamw_without_decay),
    ("Adam step count off by one", ("mlp", "gpt2"), ("adam", "adamw"), step_from_zero_plus_one),
    # Adam is invariant to the gradient's scale, so a missing 1/N only shows
    # under SGD (and in the losses' absence of change under Adam: not a bug
    # Adam-trained runs can reveal).
    ("gradient not divided by N", ("mlp", "gpt2"), ("sgd",), missing_one_over_n),
    ("wte gradient without the LM head", ("gpt2",), ("sgd", "adam", "adamw"), untied_wte),
    ("attention without the causal mask", ("gpt2",), ("sgd", "adam", "adamw"), no_causal_mask),
]


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def run_compare(argv):
    """compare.main(argv) with its output captured: (exit code, output)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = compare.main(argv)
    return code, out.getvalue()


def make(root, model, kind):
    case = os.path.join(root, "%s-%s" % (model, kind))
    with contextlib.redirect_stdout(io.StringIO()):
        assert make_case.main(["--model", model, "--optimizer", kind, "--out", case]) == 0
    return case


def emulate_into(case, tag, world=1, **kwargs):
    """Writes case/<tag>.json and case/<tag>/ from a float32 emulation."""
    model, cfg, opt_cfg, init, data, steps = emulate_run.load_case(case)
    losses, params = emulate_run.emulate(model, cfg, opt_cfg, init, data, steps,
                                         np.float32, world, **kwargs)
    report, saved = os.path.join(case, tag + ".json"), os.path.join(case, tag)
    emulate_run.write_run(report, saved, losses, params)
    return report, saved


class Checks:
    def __init__(self):
        self.failed = []

    def expect(self, label, ok, detail=""):
        print("%-66s %s %s" % (label, "ok  " if ok else "FAIL", detail))
        if not ok:
            self.failed.append(label)


def last_line(text):
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else ""


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------


def check_case(checks, root, model, kind):
    case = make(root, model, kind)
    _, _, opt_cfg, *_ = emulate_run.load_case(case)
    runs = {}
    for world in (1, 2, 3):
        report, saved = runs[world] = emulate_into(case, "w%d" % world, world)
        code, out = run_compare(["--case", case, "--report", report, "--saved", saved])
        checks.expect("%s/%s: float32 on %d rank(s) passes" % (model, kind, world), code == 0,
                      last_line(out) if code else "")
    for name, bug_models, bug_kinds, bug in BUGS:
        if model not in bug_models or kind not in bug_kinds:
            continue
        world = 2 if bug is missing_one_over_n else 1
        report, saved = emulate_into(case, "bug", world, **bug(opt_cfg))
        code, out = run_compare(["--case", case, "--report", report, "--saved", saved])
        checks.expect("%s/%s: caught: %s" % (model, kind, name), code == 1,
                      "" if code == 1 else "(exit %d)" % code)

    # Losses reported after the update instead of before it.
    report, saved = runs[1]
    with open(report) as f:
        losses = json.load(f)["losses"]
    shifted = os.path.join(case, "shifted.json")
    with open(shifted, "w") as f:
        json.dump({"losses": losses[1:] + losses[-1:]}, f)
    code, _ = run_compare(["--case", case, "--report", shifted, "--saved", saved])
    checks.expect("%s/%s: caught: losses taken after the update" % (model, kind), code == 1)

    # --close: two honest runs with different reduction orders agree to 1e-6.
    (ra, sa), (rb, sb) = runs[1], runs[2]
    code, out = run_compare(["--close", ra, rb, "--rtol", "1e-6", "--saved-a", sa, "--saved-b", sb])
    checks.expect("%s/%s: --close 1 vs 2 ranks passes" % (model, kind), code == 0,
                  last_line(out) if code else "")
    # --bitwise: a run against itself passes; one ulp anywhere fails.
    code, _ = run_compare(["--bitwise", ra, ra, "--saved-a", sa, "--saved-b", sa])
    checks.expect("%s/%s: --bitwise on identical runs passes" % (model, kind), code == 0)
    code, _ = run_compare(["--bitwise", ra, rb])
    checks.expect("%s/%s: --bitwise 1 vs 2 ranks fails" % (model, kind), code == 1)
    return case, runs


def check_ulp_changes(checks, case, runs):
    report, saved = runs[1]
    with open(report) as f:
        losses = json.load(f)["losses"]
    ulp = os.path.join(case, "ulp.json")
    with open(ulp, "w") as f:
        json.dump({"losses": losses[:-1] + [float(np.nextafter(losses[-1], np.inf))]}, f)
    code, _ = run_compare(["--bitwise", report, ulp])
    checks.expect("--bitwise catches one ulp in the last loss", code == 1)

    bumped = os.path.join(case, "bumped")
    params = compare.load_params(saved)
    name = next(iter(params))
    flat = params[name].reshape(-1)
    flat[0] = np.nextafter(flat[0], np.float32(np.inf))
    make_case.save_arrays(bumped, params)
    code, out = run_compare(["--bitwise", report, report, "--saved-a", bumped, "--saved-b", saved])
    checks.expect("--bitwise catches one float32 ulp in %s" % name, code == 1)

    nowhere = os.path.join(case, "nowhere")
    code, _ = run_compare(["--case", case, "--report", report, "--saved", nowhere])
    checks.expect("a missing saved directory is a usage error (exit 2)", code == 2)


def main() -> int:
    checks = Checks()
    with tempfile.TemporaryDirectory() as root:
        for model in ("mlp", "gpt2"):
            for kind in optim.OPTIMIZERS:
                case, runs = check_case(checks, root, model, kind)
        check_ulp_changes(checks, case, runs)
    if checks.failed:
        print("compare check FAILED: " + "; ".join(checks.failed))
        return 1
    print("compare OK: honest float32 runs pass, planted bugs are caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
