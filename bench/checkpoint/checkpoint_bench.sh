#!/usr/bin/env bash
# `bazel run -c opt //bench/checkpoint -- --csv=$PWD/bench/results/checkpoint.csv --json=$PWD/bench/results/checkpoint.json`
exec /usr/bin/python3 bench/checkpoint/checkpoint_bench.py "$@"
