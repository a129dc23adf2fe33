#!/usr/bin/env bash
# A failing rank ends the whole MPI run: mpirun exits non-zero well within
# 60 s, its output names the failed rank, and no rank is left running.
# Usage: mpi_comm_fault_test.sh MPIRUN_FLAGS_SH MPI_COMM_CHECK
set -euo pipefail
source "$1"
binary=$2
export ZEROSBP_MPIRUN_TIMEOUT=60

failures=0

# expect_failure NAME RANKS EXPECTED_TEXT BINARY_FLAGS [UNEXPECTED_TEXT]
expect_failure() {
  local name=$1 ranks=$2 expected=$3 flags=$4 unexpected=${5:-}
  local tag="fault-$name-$$-$RANDOM"
  local start status output elapsed
  start=$(date +%s)
  status=0
  output=$(zerosbp_mpirun -n "$ranks" "$binary" $flags "--tag=$tag" 2>&1) ||
    status=$?
  elapsed=$(($(date +%s) - start))
  echo "--- $name ($ranks ranks): status $status after ${elapsed}s"
  echo "$output"
  if [[ $status -eq 0 ]]; then
    echo "FAIL: $name: mpirun exited 0"
    failures=$((failures + 1))
  elif [[ $status -eq 124 || $elapsed -ge 60 ]]; then
    echo "FAIL: $name: mpirun did not end within 60 s"
    failures=$((failures + 1))
  fi
  if ! grep -qF -- "$expected" <<<"$output"; then
    echo "FAIL: $name: output does not contain '$expected'"
    failures=$((failures + 1))
  fi
  if [[ -n $unexpected ]] && grep -qF -- "$unexpected" <<<"$output"; then
    echo "FAIL: $name: output contains '$unexpected'"
    failures=$((failures + 1))
  fi
  # mpirun reaps its ranks before it exits; allow a moment all the same.
  local waited=0
  while pgrep -f -- "--tag=$tag" >/dev/null && [[ $waited -lt 10 ]]; do
    sleep 0.5
    waited=$((waited + 1))
  done
  if pgrep -f -- "--tag=$tag" >/dev/null; then
    echo "FAIL: $name: processes left running:"
    pgrep -af -- "--tag=$tag" || true
    pkill -KILL -f -- "--tag=$tag" || true
    failures=$((failures + 1))
  fi
}

expect_failure abort 3 "zero-run: rank 1 failed: injected failure" \
  --abort-rank=1
expect_failure abort 2 "zero-run: rank 1 failed: injected failure" \
  --abort-rank=1
expect_failure kill 3 "process rank 1 with PID" --kill-rank=1
expect_failure kill 2 "process rank 0 with PID" --kill-rank=0
# Rank 2 waits on another communicator: the roll call names it.
expect_failure timeout 3 \
  "failed: timed out after 500 ms waiting for rank 2 in all_reduce on group [0, 1, 2]" \
  --timeout-rank=2
# Ranks 0 and 1 wait for a message from rank 2, which never sends.
expect_failure recv-timeout 3 \
  "failed: timed out after 500 ms waiting for rank 2 in send_recv on group [0, 1, 2]" \
  --recv-timeout-rank=2
# Ranks 0 and 1 send rank 2 a large message it never receives: the sends
# return, and waiting for them to complete names rank 2.
expect_failure send-timeout 3 \
  "failed: timed out after 500 ms waiting for rank 2 in send_recv on group [0, 1, 2]" \
  --send-timeout-rank=2 "the send waited for its receiver"
# Rank 1 stops; rank 0 waits in the records gather, rank 2 in a collective.
# They answer each other's roll call whichever they wait in, so whichever
# prints names rank 1 alone.
expect_failure stopped 3 "failed: timed out after 500 ms waiting for rank 1 in" \
  "--stop-rank=1 --gather-rank=0" "waiting for ranks"

if [[ $failures -ne 0 ]]; then
  echo "FAIL: $failures checks failed"
  exit 1
fi
echo "PASS"
