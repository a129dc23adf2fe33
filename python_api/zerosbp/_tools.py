"""The command-line tools of an installed wheel (zero-compile, zero-run,
zero-checkpoint, zero-sim): each entry point runs the binary the wheel
packs beside this module, with the same arguments."""

import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def _run(name):
    path = os.path.join(_BIN, name)
    if not os.access(path, os.X_OK):
        sys.exit("%s: not part of this installation (no %s); install the "
                 "wheel python_api/wheel builds" % (name, path))
    os.execv(path, [name] + sys.argv[1:])


def zero_compile():
    _run("zero-compile")


def zero_run():
    _run("zero-run")


def zero_checkpoint():
    _run("zero-checkpoint")


def zero_sim():
    _run("zero-sim")
