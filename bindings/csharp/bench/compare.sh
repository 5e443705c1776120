#!/bin/sh
# Throughput through C# (bench/Bench.cs under Mono) vs the C CLI, alternating, ROUNDS rounds:
#   zerfoo generate -m MODEL -p PROMPT -n 128 --temp 0 --ignore-eos -t 2
#   mono Bench.exe MODEL PROMPT 128 2          (Session.Generate)
#   mono Bench.exe MODEL PROMPT 128 2 stream   (Session.Stream)
# Prints each run's summary line (the library's own prefill/decode timings).
# usage: bench/compare.sh [ROUNDS]   (after test.sh built build-csharp/Bench.exe)
set -eu
root="$(cd "$(dirname "$0")/../../.." && pwd)"
rounds="${1:-3}"
model="${ZERFOO_TEST_MODEL:-$("$root/scripts/fetch_models.sh" smollm2)}"
cli="${ZERFOO_CLI:-$root/build/zerfoo}"
bench="${ZERFOO_CSHARP_OUT:-$root/build-csharp}/Bench.exe"
export ZERFOO_LIBRARY="${ZERFOO_LIBRARY:-$root/build/libzerfoo.so.0}"
prompt="Write a short story about a robot who learns to paint."
i=1
while [ "$i" -le "$rounds" ]; do
  printf 'round %d  C CLI     : ' "$i"
  "$cli" generate -m "$model" -p "$prompt" -n 128 --temp 0 --ignore-eos -t 2 2>&1 >/dev/null | tail -1
  printf 'round %d  C# Generate: ' "$i"
  mono "$bench" "$model" "$prompt" 128 2
  printf 'round %d  C# Stream  : ' "$i"
  mono "$bench" "$model" "$prompt" 128 2 stream
  i=$((i + 1))
done
