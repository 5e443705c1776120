#!/usr/bin/env bash
# Soak and concurrency tests (tests/capi/soak_test.cpp) on SmolLM2: load/free and session
# create/free cycles with RSS printed, 8 threads x 4 sessions, cancel within one token.
#   scripts/soak.sh [--long] [BUILD_DIR]
# --long: 1000 load/free cycles, 10,000 session create/free cycles (the issue's counts); the
# default is the short CI form. Use a sanitizer build (build-test-clang) for leak checking.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--long" ]; then
  export ZF_SOAK_LOADS=1000 ZF_SOAK_SESSIONS=10000 ZF_SOAK_TOKENS=16
  shift
fi
build="${1:-build}"
cmake --build "$build" -j"$(nproc)" --target zerfoo_capi_tests >/dev/null
export ZF_MODEL_SMOLLM2="${ZF_MODEL_SMOLLM2:-$(scripts/fetch_models.sh smollm2)}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
"$build/tests/zerfoo_capi_tests" --gtest_filter='Soak.*'
