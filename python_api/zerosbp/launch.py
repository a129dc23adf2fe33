"""``python3 -m zerosbp.launch -n 4 [--hostfile FILE] train.py [args]``:
runs the script as one process per rank over MPI (mpirun with this
machine's flags, or across the hosts of an OpenMPI hostfile, docs/runtime.md
#many-machines); each graph then runs this process's rank. SIGINT or
SIGTERM stops every rank and exits 130 or 143."""

import argparse
import os
import shutil
import signal as signal_module
import sys
import tempfile

from . import _zerosbp


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m zerosbp.launch",
        description="Run a ZeroSBP training script with one process per "
        "rank over MPI.")
    parser.add_argument("-n", "--nproc", type=int, required=True,
                        help="number of ranks (processes)")
    parser.add_argument("--hostfile",
                        help="OpenMPI hostfile (`host slots=N` per line): "
                        "ranks fill each host's slots in order")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER,
                        help="arguments for the script")
    options = parser.parse_args(argv)
    if not 1 <= options.nproc <= _zerosbp.MAX_RANKS:
        parser.error(f"-n: expected an integer in [1, {_zerosbp.MAX_RANKS}], "
                     f"got '{options.nproc}'")
    if not os.path.isfile(options.script):
        parser.error(f"no such script: {options.script}")
    if shutil.which("mpirun") is None:
        print("zerosbp.launch: mpirun not found (install openmpi-bin)",
              file=sys.stderr)
        return 1
    session = tempfile.mkdtemp(prefix="zerosbp-mpi.")
    try:
        try:
            command = _zerosbp.mpirun_command(options.nproc, session,
                                              options.hostfile or "")
        except _zerosbp.Error as error:
            print("zerosbp.launch: %s" % error, file=sys.stderr)
            return 1
        command += [sys.executable, options.script] + options.args
        # SIGINT and SIGTERM go to mpirun, which stops the ranks; whatever
        # still runs 5 s later is killed (docs/runtime.md#signals).
        status, signal, killed, mpirun_signal = _zerosbp.run_mpirun(
            command, _GRACE_SECONDS)
    finally:
        shutil.rmtree(session, ignore_errors=True)
    if signal:
        print(f"zerosbp.launch: interrupted by {_signal_name(signal)}",
              file=sys.stderr)
        if killed:
            print(f"zerosbp.launch: killed {killed} process(es) still "
                  f"running {_GRACE_SECONDS:g} s after it", file=sys.stderr)
    elif mpirun_signal:
        print(f"zerosbp.launch: mpirun was killed by "
              f"{_signal_name(mpirun_signal)}; stopped its ranks",
              file=sys.stderr)
    return status


_GRACE_SECONDS = 5.0


def _signal_name(number):
    try:
        return signal_module.Signals(number).name
    except ValueError:
        return f"signal {number}"


if __name__ == "__main__":
    sys.exit(main())
