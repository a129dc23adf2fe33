#!/usr/bin/env bash
# `bazel run -c opt //bench/pp_scaling -- --csv=$PWD/bench/results/pp_scaling.csv --json=$PWD/bench/results/pp_scaling.json`
exec /usr/bin/python3 bench/pp_scaling/pp_scaling.py "$@"
