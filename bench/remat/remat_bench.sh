#!/usr/bin/env bash
# `bazel run -c opt //bench/remat -- --csv=$PWD/bench/results/remat.csv --json=$PWD/bench/results/remat.json`
export PYTHONPATH="$PWD/python_api${PYTHONPATH:+:$PYTHONPATH}"
export ZEROSBP_COMPILE="$PWD/$1" ZEROSBP_RUN="$PWD/$2"
shift 2
exec /usr/bin/python3 bench/remat/remat_bench.py "$@"
