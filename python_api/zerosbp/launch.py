"""``python3 -m zerosbp.launch -n 4 train.py [args]``: runs the script as
one process per rank over MPI (mpirun with this machine's flags); each
graph then runs this process's rank."""

import argparse
import os
import shutil
import subprocess
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
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER,
                        help="arguments for the script")
    options = parser.parse_args(argv)
    if options.nproc < 1:
        parser.error("-n must be at least 1")
    if not os.path.isfile(options.script):
        parser.error(f"no such script: {options.script}")
    if shutil.which("mpirun") is None:
        print("zerosbp.launch: mpirun not found (install openmpi-bin)",
              file=sys.stderr)
        return 1
    session = tempfile.mkdtemp(prefix="zerosbp-mpi.")
    try:
        command = _zerosbp.mpirun_command(options.nproc, session)
        command += [sys.executable, options.script] + options.args
        return subprocess.call(command)
    finally:
        shutil.rmtree(session, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
