#!/usr/bin/env bash
# The aarch64 build, checked from an x86 machine under qemu-user:
#   1. cross-compiles the library, CLI and unit tests for aarch64 with -Werror (the x86 kernel
#      files drop out; the NEON kernels come in: *_neon.cpp with the dot product, *_asimd.cpp
#      without);
#   2. runs the unit tests under qemu's default CPU model, which has the ARMv8.2 dot product,
#      so the dispatched packed GEMV and prefill GEMM checked against the scalar reference are
#      the SDOT ones (the baseline NEON ones are called directly by the same tests);
#   3. runs the golden test of SmolLM2 there (tests/capi/golden_test.cpp: 3 prompts x 64
#      teacher-forced greedy tokens and top-5 logits against llama.cpp, the near-tie margin and
#      logit tolerance of the x86 runs; about a minute under qemu, Gemma 3 would take several);
#   4. runs a greedy generation on that CPU model and on a Cortex-A53 model (no dot product: the
#      baseline NEON kernels, so an ARMv8.2 instruction in them would stop it with SIGILL); each
#      must pick the kernels it should and reproduce llama.cpp's recorded greedy text for the
#      first golden prompt.
# Build: scripts/build_aarch64.sh (build-test-aarch64).
set -euo pipefail
cd "$(dirname "$0")/.."

qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
scripts/build_aarch64.sh zerfoo_cli zerfoo_unit_tests zerfoo_golden_tests

# The unit tests (two shards) run while the golden test does: emulated, each process keeps
# about one core busy.
# Kernels here; the real-model unit tests (generation, speculation, batching) run natively in the
# release stage and would take minutes under emulation (tests/common/test_models.h).
unit_log="$(mktemp)"
# ChatStream.CorpusEverySplitAndPolicy (the streaming parser fed every split of the chat corpus:
# a fifth of the unit tests' time under qemu) runs natively in ctest; ChatParse.CorpusRoundTrip
# keeps the corpus on aarch64's unsigned char here.
ZF_TEST_ONLY_MODELS=none scripts/gtest_shards.sh 2 "${qemu[@]}" build-test-aarch64/tests/zerfoo_unit_tests \
  --gtest_brief=1 --gtest_filter='-ChatStream.CorpusEverySplitAndPolicy' > "$unit_log" 2>&1 &
unit_pid=$!

model="$(scripts/fetch_models.sh smollm2)"
golden_rc=0
golden_out="$(ZERFOO_MODELS="$(dirname "$model")" "${qemu[@]}" build-test-aarch64/tests/zerfoo_golden_tests \
  --gtest_filter='RealModels/Golden.GreedyTokensAndLogitsMatchReference/1' 2>&1)" || golden_rc=$?
unit_rc=0
wait "$unit_pid" || unit_rc=$?
echo "aarch64 unit tests (qemu, dot-product CPU model):"
cat "$unit_log"
rm -f "$unit_log"
[ "$unit_rc" = 0 ] || { echo "FAIL: aarch64 unit tests"; exit 1; }
echo "aarch64 golden test, SmolLM2 (qemu, dot-product CPU model):"
[ "$golden_rc" = 0 ] || { echo "$golden_out"; exit 1; }
grep '^\[ golden' <<<"$golden_out" || { echo "$golden_out"; echo "FAIL: the aarch64 golden test did not run"; exit 1; }

golden=tests/data/golden/smollm2.json
# CPU model : kernels it must pick : golden prompt. Prompt 0's first 12 greedy tokens have no
# near-tie on either path (prompt 2 has one at token 6, which summation-order changes flip
# within the golden test's margin).
for run in max:neon-dotprod:0 cortex-a53:neon:0; do
  IFS=: read -r cpu isa idx <<<"$run"
  prompt="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["prompts"][int(sys.argv[2])]["text"] + "|", end="")' \
    "$golden" "$idx")"
  prompt="${prompt%|}"  # the | keeps a trailing newline of the prompt through $(...)
  log="$(mktemp)"
  out="$("${qemu[@]}" -cpu "$cpu" build-test-aarch64/zerfoo generate -m "$model" -p "$prompt" -n 12 --temp 0 -t 2 \
    -v 2>"$log")"
  if ! grep -q "CPU kernels: $isa;" "$log"; then
    cat "$log"
    echo "FAIL: on qemu's $cpu CPU model the engine did not pick the $isa kernels"; exit 1
  fi
  rm -f "$log"
  python3 - "$out" "$isa" "$golden" "$idx" <<'PY'
import json, sys
got, isa, golden, idx = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
want = json.load(open(golden))["prompts"][idx]["greedy_text"]
if not got or not want.startswith(got):
    sys.exit(f"FAIL: aarch64 ({isa}) greedy text {got!r} for prompt {idx} is not a prefix of llama.cpp's {want!r}")
print(f"aarch64 ({isa} kernels, qemu), prompt {idx}: greedy text matches llama.cpp: {got!r}")
PY
done
