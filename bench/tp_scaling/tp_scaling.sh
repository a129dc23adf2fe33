#!/usr/bin/env bash
# `bazel run -c opt //bench/tp_scaling -- --csv=$PWD/bench/results/tp_scaling.csv --json=$PWD/bench/results/tp_scaling.json`
exec /usr/bin/python3 bench/tp_scaling/tp_scaling.py "$@"
