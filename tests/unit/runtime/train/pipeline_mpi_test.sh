#!/usr/bin/env bash
# Runs pipeline_mpi_check under mpirun with one process per pipeline stage.
# Usage: pipeline_mpi_test.sh MPIRUN_FLAGS_SH PIPELINE_MPI_CHECK
set -euo pipefail
source "$1"
binary=$2
export ZEROSBP_MPIRUN_TIMEOUT=120

status=0
output=$(zerosbp_mpirun -n 2 "$binary" 2>&1) || status=$?
echo "$output"
if [[ $status -ne 0 ]]; then
  echo "FAIL: mpirun -n 2 exited with status $status"
  exit 1
fi
if ! grep -q "^pipeline_mpi_check: OK" <<<"$output"; then
  echo "FAIL: mpirun -n 2 did not print pipeline_mpi_check: OK"
  exit 1
fi
echo "PASS"
