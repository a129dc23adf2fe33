#!/usr/bin/env bash
# `bazel run -c opt //bench/eval -- --csv=$PWD/bench/results/eval.csv --json=$PWD/bench/results/eval.json`
export PYTHONPATH="$PWD/python_api${PYTHONPATH:+:$PYTHONPATH}"
exec /usr/bin/python3 bench/eval/eval_bench.py "$@"
