#!/usr/bin/env bash
# `bazel run -c opt //bench/stages -- --csv=$PWD/bench/results/stages.csv --json=$PWD/bench/results/stages.json`
exec /usr/bin/python3 bench/stages/stages_bench.py "$@"
