#!/usr/bin/env bash
# `bazel run -c opt //bench/offload -- --csv=$PWD/bench/results/offload.csv --json=$PWD/bench/results/offload.json`
exec /usr/bin/python3 bench/offload/offload_bench.py "$@"
