#!/usr/bin/env bash
# `bazel run -c opt //bench/offload:host_update -- --csv=$PWD/bench/results/host_update.csv --json=$PWD/bench/results/host_update.json`
exec /usr/bin/python3 bench/offload/host_update_bench.py "$@"
