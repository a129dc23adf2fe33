#!/usr/bin/env bash
# `bazel run -c opt //bench/tensor_parallel -- --csv=$PWD/bench/results/tensor_parallel.csv --json=$PWD/bench/results/tensor_parallel.json`
exec /usr/bin/python3 bench/tensor_parallel/tensor_parallel_bench.py "$@"
