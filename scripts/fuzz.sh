#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan+UBSan, coverage) and runs each for a
# given time, two at a time (doc/testing.md: "Reliability, fuzzing, ABI check and API reference").
#   scripts/fuzz.sh [SECONDS] [TARGET...]    default 60 s each, every target
# Env: ZF_FUZZ_BUILD (build dir, default build-fuzz; CI passes its clang build), ZF_FUZZ_JOBS
# (parallel fuzzers, default 2), ZF_FUZZ_RUNS (stop each after that many executions, before
# SECONDS if sooner), ZF_FUZZ_ARGS (more libFuzzer flags, e.g. -entropic=0: the entropic
# scheduler's bookkeeping is a third of tiny_decode's time once its coverage is saturated), ZF_FUZZ_NO_BUILD=1 (use the binaries as they are), ZF_FUZZ_WORK (corpus dir, default $ZF_FUZZ_BUILD/fuzz-corpus:
# the committed seeds of tests/fuzz/corpus/ plus what the runs found, kept between runs so long
# campaigns accumulate). scripts/fuzz.sh --seeds regenerates the committed seeds.
# Exec counts of each run are printed ("#N DONE" / "stat::number_of_executed_units") and added
# up in $ZF_FUZZ_WORK/exec_counts.txt. A crash leaves its input in $ZF_FUZZ_WORK/crashes/ and
# fails the script: turn it into a regression test (tests/capi/reliability_test.cpp or a unit
# test) and keep the input as tests/fuzz/corpus/TARGET/NAME-input.
set -euo pipefail
cd "$(dirname "$0")/.."
targets_all=(gguf_load tiny_decode tokenizer pretokenize sampler chat_template chat_parse constraint chat_turn serve_request whisper_load image_decode audio_request image_request)
build="${ZF_FUZZ_BUILD:-build-fuzz}"
scripts/ensure_clang.sh
configure() {
  if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZF_BUILD_TESTS=ON \
      -DZF_SANITIZE="address;undefined" -DZF_BUILD_FUZZERS=ON -DZF_BUILD_KERNELS=OFF >/dev/null
  fi
}
if [ "${1:-}" = "--seeds" ]; then
  configure
  cmake --build "$build" -j"$(nproc)" --target fuzz_make_seeds
  # Inputs kept from findings (*-input) stay; the generated seeds are rewritten.
  find tests/fuzz/corpus -type f ! -name '*-input' -delete 2>/dev/null || true
  "$build/fuzz/fuzz_make_seeds" tests/fuzz/corpus tests/data
  du -sh tests/fuzz/corpus
  exit 0
fi
secs="${1:-60}"; [ $# -gt 0 ] && shift
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=("${targets_all[@]}")
if [ "${ZF_FUZZ_NO_BUILD:-0}" != 1 ]; then
  configure
  cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}")
fi
work="${ZF_FUZZ_WORK:-$build/fuzz-corpus}"
mkdir -p "$work/crashes"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
run_one() {
  local t="$1" dir="$work/$t" log="$work/$t.log"
  mkdir -p "$dir"
  cp -n tests/fuzz/corpus/"$t"/* "$dir"/ 2>/dev/null || true
  # Longest input per format: a GGUF with a vocabulary; the template engine's input limit; the
  # sampler's 33 bytes of parameters + 200 logits + a history; text (and records of weight
  # patches) of 1 KiB. Longer inputs only cost time per execution.
  local max_len=1024 extra=()
  case "$t" in
    gguf_load|whisper_load|image_decode|audio_request) max_len=65536 ;;
    chat_template) max_len=4096 ;;
    chat_turn) max_len=2048 ;;  # a request JSON and, after a NUL, a template
    serve_request) max_len=4096 ;;  # an API byte and a request body
  esac
  [ -f "tests/fuzz/$t.dict" ] && extra+=(-dict="tests/fuzz/$t.dict")
  [ -n "${ZF_FUZZ_RUNS:-}" ] && extra+=(-runs="$ZF_FUZZ_RUNS")
  # shellcheck disable=SC2206  # word splitting wanted: a list of flags
  [ -n "${ZF_FUZZ_ARGS:-}" ] && extra+=(${ZF_FUZZ_ARGS})
  local t0=$SECONDS
  set +e
  "$build/fuzz/fuzz_$t" -max_total_time="$secs" -max_len="$max_len" -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$work/crashes/$t-" "${extra[@]}" "$dir" > "$log" 2>&1
  local rc=$?
  set -e
  local execs
  execs=$(grep -aoE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo 0)
  echo "$t $execs" >> "$work/exec_counts.txt"
  local total
  total=$(awk -v t="$t" '$1 == t {s += $2} END {print s}' "$work/exec_counts.txt")
  if [ $rc -eq 72 ]; then  # libFuzzer's exit code after SIGINT: stopped by hand, not a finding
    echo "fuzz_$t interrupted after $execs executions"
    return 0
  fi
  if [ $rc -ne 0 ]; then
    echo "FAIL: fuzz_$t (exit $rc) after $execs executions; log: $log"
    grep -aE 'ERROR|SUMMARY|invariant|runtime error' "$log" | head -10
    return 1
  fi
  printf 'fuzz_%-14s %10s execs in %ss (%s in total in %s), corpus %s files\n' "$t" "$execs" "$((SECONDS - t0))" "$total" \
    "$work" "$(ls "$dir" | wc -l)"
}
jobs="${ZF_FUZZ_JOBS:-2}"
fail=0
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" & pids+=($!); names+=("$t")
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || fail=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
[ "$fail" = 0 ] || { echo "fuzzing found problems: inputs in $work/crashes/"; exit 1; }
echo "all fuzzers ran ${secs}s without a finding"
