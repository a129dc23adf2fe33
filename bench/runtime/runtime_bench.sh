#!/usr/bin/env bash
# `bazel run -c opt //bench/runtime -- --csv=$PWD/bench/results/runtime.csv --json=$PWD/bench/results/runtime.json`
exec /usr/bin/python3 bench/runtime/runtime_bench.py "$@"
