#!/usr/bin/env bash
# `bazel run -c opt //bench/remat -- --csv=$PWD/bench/results/remat.csv --json=$PWD/bench/results/remat.json`
export PYTHONPATH="$PWD/python_api${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 bench/remat/remat_bench.py "$@"
