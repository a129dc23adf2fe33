#!/usr/bin/env bash
# `bazel run -c opt //bench/sim:validate -- --csv=$PWD/bench/results/sim_validation.csv --json=$PWD/bench/results/sim_validation.json`
exec /usr/bin/python3 bench/sim/sim_validate.py "$@"
