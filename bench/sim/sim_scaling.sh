#!/usr/bin/env bash
# `bazel run -c opt //bench/sim:scaling -- --csv=$PWD/bench/results/sim_scaling.csv --json=$PWD/bench/results/sim_scaling.json`
exec /usr/bin/python3 bench/sim/sim_scaling.py "$@"
