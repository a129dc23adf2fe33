#!/usr/bin/env bash
# `bazel run -c opt //bench/pipeline -- --csv=$PWD/bench/results/pipeline.csv --json=$PWD/bench/results/pipeline.json`
exec /usr/bin/python3 bench/pipeline/pipeline_bench.py "$@"
