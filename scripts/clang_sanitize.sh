#!/usr/bin/env bash
# The clang build of the whole library with AddressSanitizer + UndefinedBehaviorSanitizer (and
# LeakSanitizer), -Werror, plus the libFuzzer targets' coverage instrumentation so that one build
# serves three CI stages: this one (unit and C API tests under the sanitizers, the soak tests in
# their short form), scripts/fuzz.sh and scripts/abi_check.sh (the library carries DWARF).
#   scripts/clang_sanitize.sh [BUILD_DIR] [--lib-only]     default build-test-clang
# --lib-only: configure and build only libzerfoo.so (what scripts/abi_check.sh compares).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-test-clang}"
lib_only="${2:-}"
scripts/ensure_clang.sh
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZF_BUILD_TESTS=ON \
  -DZF_WERROR=ON -DZF_SANITIZE="address;undefined" -DZF_BUILD_FUZZERS=ON -DZF_BUILD_KERNELS=OFF >/dev/null
if [ "$lib_only" = "--lib-only" ]; then
  cmake --build "$build" -j"$(nproc)" --target zerfoo
  exit 0
fi
cmake --build "$build" -j"$(nproc)" --target zerfoo zerfoo_unit_tests zerfoo_capi_tests \
  fuzz_gguf_load fuzz_tiny_decode fuzz_tokenizer fuzz_pretokenize fuzz_sampler fuzz_chat_template fuzz_chat_parse fuzz_constraint fuzz_chat_turn fuzz_serve_request
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# embed_test.cpp's synthesized BERT files (ctest's fixture embed.models writes them elsewhere).
tests/capi/make_embed_models.sh "$build/tests/embed-models"
# audio_test.cpp's synthesized audio projectors (ctest's fixture audio.models; same path): the
# mel, the encoder and the input_audio parts under the sanitizers.
tests/vision/make_audio_models.sh "$build/tests/vision_models/audio"
# The unit tests and the C API tests (two shards) run at once: under the sanitizers they use
# about one core each (scripts/gtest_shards.sh), so the three processes share the two cores.
unit_log="$(mktemp)"
# Left to the release stage (each one's code runs under these sanitizers elsewhere): Speculative.*
# (generation-heavy); ChatStream's corpus sweep (every template x every split x every policy,
# 45 s here: the stream parser's memory safety is fuzz_chat_parse's, arbitrary splits, and the
# other ChatStream tests'); ChatTurnUnit.ConstraintCompiledOncePerTurn (a compile count, 27 s:
# the compiles are the constraint tests' and fuzz_constraint's).
ZF_TEST_ONLY_MODELS=smollm2 "$build/tests/zerfoo_unit_tests" --gtest_brief=1 \
  --gtest_filter='-Speculative.*:ChatStream.CorpusEverySplitAndPolicy:ChatTurnUnit.ConstraintCompiledOncePerTurn' \
  > "$unit_log" 2>&1 &
unit_pid=$!
# The soak tests run in their short form here (scripts/soak.sh --long for the long one).
# Real-model tests on SmolLM2 only here (tests/common/test_models.h); the release run has both.
# The two longest prefix-cache tests (thousands of exact-prefill tokens), the sixteen batched
# generations (27 s here) and the three constrained tool-call generations of the literal argument
# syntaxes (~750 tokens) run in the release stage; their code paths are covered here by the
# shorter ones (Batching.EvalLogitsIdenticalToAloneSmolLM2; the grammar builder by
# fuzz_chat_parse). Likewise the next-heaviest generation tests whose paths shorter ones cover
# here (5-9 s each under ASan): pull across turns (the other CapiPull tests), the 32-session soak
# (the ThreadSanitizer stage runs it), harmony's constrained call (fuzz_chat_parse, the other
# control-token test), SmolLM2's pooled batch (DecoderEmbed.*) and the four concurrent sessions
# under the step-cost model (the same code as the forced-draft one run here, 13 s under ASan).
# Also SharedThreads.SessionsDoNotAddThreads (a thread count, 16 s: the ThreadSanitizer stage runs
# it) and Constraint.OffLeavesOutputUnchanged (11 s: unconstrained generation is every CapiModel
# test's). And the two longest Whisper goldens (128 s and 49 s here, half of the speech tests'
# time: five and three whole transcriptions): their paths run here in the shorter CapiSpeech
# tests (the concurrent calls' beam search, the callback, the defaults), a prompt, word
# timestamps and sampling only in the release stage. The audio rows placed in the language model
# as libmtmd places them once per projector kind, each weight type at least once (ultravox F16,
# qwen2a and voxtral Q8_0: 75 s here under ASan; the other three took 96 s), since all six
# files' encoders run here in Types/CapiAudio.InfoAndEmbeddingsMatchLibmtmd; and LoRA's
# two-adapter golden ("ab", 22 s: two adapters at once are Lora.BatchedMixedAdaptersEqualAlone's
# here). All of these run in the release stage.
capi_rc=0
ZF_TEST_ONLY_MODELS=smollm2 scripts/gtest_shards.sh 2 "$build/tests/zerfoo_capi_tests" --gtest_brief=1 \
  --gtest_filter='-PrefixCache.SharedPrefixHeldOnce:PrefixCache.ChunkingAndCacheAreExact*:Batching.SixteenGenerationsIdenticalToAlone:ChatParseControlTokens.LiteralArgumentSyntaxesFollowTheSchema:*CapiPull.GreedyPullEqualsGenerateAcrossTurns*:Soak.EightThreadsWithFourSessionsEachMatchTheSequentialRun:ChatParseControlTokens.HarmonyRequiredCallIsParsedBack:GenerativeEmbed.SmolLM2BatchEqualsOneAtATime:Batching.ConcurrentSessionsUnderTheStepCostModelIdenticalToAlone:ChatTurn.PlainAnswerIsWhatGenerateWritesForTheRenderedPrompt:ChatTurn.NamedToolChoiceCallsThatFunctionOnly:ChatTurn.AutoAndNoneGiveValidTurns:ChatTurn.NextTurnReusesTheConversationTheSessionHolds:ChatTurn.LogprobsCoverEveryGeneratedToken:SharedThreads.SessionsDoNotAddThreads:*Constraint.OffLeavesOutputUnchanged*:CapiSpeech.PromptBeamAndWordTimestampsAsWhisperCpp:CapiSpeech.SeededSamplingReproducible:Types/CapiAudio.EvalAudioMatchesLibmtmd/1:Types/CapiAudio.EvalAudioMatchesLibmtmd/2:Types/CapiAudio.EvalAudioMatchesLibmtmd/4:Golden/LoraReference.MatchesLlamaCpp/1' \
  || capi_rc=$?
unit_rc=0
wait "$unit_pid" || unit_rc=$?
echo "---- unit tests"
cat "$unit_log"
rm -f "$unit_log"
[ "$unit_rc" = 0 ] && [ "$capi_rc" = 0 ] || { echo "FAIL: sanitizer tests (unit rc $unit_rc, C API rc $capi_rc)"; exit 1; }
