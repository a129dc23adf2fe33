#!/usr/bin/env bash
# Runs the IR fuzzer for a short, bounded time from a copy of the seed corpus
# and fails when it reports a crash, an assertion or round-trip failure, a
# leak, a timeout or running out of memory.
#
# Usage: fuzz_smoke_test.sh FUZZER DICT CORPUS_DIR [SECONDS]
set -euo pipefail

fuzzer="$1"
dict="$2"
seeds="$3"
seconds="${4:-20}"

work="${TEST_TMPDIR:-$(mktemp -d)}/$(basename "$fuzzer")_smoke"
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"

# libMLIR.so is not instrumented: see __asan_default_options in ir_fuzzer.cpp.
export ASAN_OPTIONS="detect_leaks=1:detect_container_overflow=0:allow_user_poisoning=0"

status=0
"$fuzzer" \
  -dict="$dict" \
  -max_total_time="$seconds" \
  -timeout=5 \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" \
  "$work/corpus" >"$work/fuzz.log" 2>&1 || status=$?

artifacts=$(ls "$work/artifacts")
if [[ $status -ne 0 || -n "$artifacts" ]]; then
  echo "FAIL: $(basename "$fuzzer") exited with status $status" >&2
  grep -E "ERROR: |ir_fuzzer: |SUMMARY: " "$work/fuzz.log" >&2 || true
  tail -n 60 "$work/fuzz.log" >&2
  for artifact in $artifacts; do
    echo "--- reproducer $artifact ---" >&2
    cat -v "$work/artifacts/$artifact" >&2
    echo >&2
  done
  if [[ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]]; then
    cp "$work/fuzz.log" "$work"/artifacts/* "$TEST_UNDECLARED_OUTPUTS_DIR/" \
      2>/dev/null || true
  fi
  exit 1
fi

grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" \
  "$work/fuzz.log" || true
echo "PASS: no crash, leak, timeout or round-trip failure in ${seconds}s"
