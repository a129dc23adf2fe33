#!/usr/bin/env bash
# `bazel run -c opt //bench/scaling -- --csv=$PWD/bench/results/scaling.csv --json=$PWD/bench/results/scaling.json`
exec /usr/bin/python3 bench/scaling/scaling_bench.py "$@"
