#!/usr/bin/env bash
# Runs mpi_comm_check under mpirun with 2 and 3 ranks: every collective
# against the reference and the in-process backend.
# Usage: mpi_comm_test.sh MPIRUN_FLAGS_SH MPI_COMM_CHECK
set -euo pipefail
source "$1"
binary=$2
export ZEROSBP_MPIRUN_TIMEOUT=120

for ranks in 2 3; do
  status=0
  output=$(zerosbp_mpirun -n "$ranks" "$binary" 2>&1) || status=$?
  echo "$output"
  if [[ $status -ne 0 ]]; then
    echo "FAIL: mpirun -n $ranks exited with status $status"
    exit 1
  fi
  if ! grep -q "^mpi_comm_check: OK ($ranks ranks" <<<"$output"; then
    echo "FAIL: mpirun -n $ranks did not print mpi_comm_check: OK"
    exit 1
  fi
done
echo "PASS"
