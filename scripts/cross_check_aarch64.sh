#!/usr/bin/env bash
# The portable build, checked from an x86 machine: cross-compiles the library and CLI for
# aarch64 with -Werror (the x86 kernel files drop out; the scalar reference kernels and the
# run-time dispatch's fallbacks remain: no packed weights, per-row products, reference
# attention) and runs one greedy generation of SmolLM2 under qemu-user, which must reproduce
# llama.cpp's recorded greedy text (tests/data/golden/smollm2.json, first prompt).
# Installs g++-aarch64-linux-gnu and qemu-user (apt) when missing. Build dir: build-test-aarch64.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh g++-aarch64-linux-gnu qemu-user

cmake -S . -B build-test-aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_SYSTEM_NAME=Linux \
  -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc \
  -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DZF_BUILD_TESTS=OFF -DZF_BUILD_KERNELS=OFF -DZF_WERROR=ON >/dev/null
cmake --build build-test-aarch64 -j"$(nproc)" --target zerfoo_cli

model="$(scripts/fetch_models.sh smollm2)"
prompt="The capital of France is"
out="$(qemu-aarch64 -L /usr/aarch64-linux-gnu build-test-aarch64/zerfoo generate -m "$model" -p "$prompt" -n 12 \
  --temp 0 -t 2)"
python3 - "$out" <<'PY'
import json, sys
got = sys.argv[1]
want = json.load(open("tests/data/golden/smollm2.json"))["prompts"][0]["greedy_text"]
if not got or not want.startswith(got):
    sys.exit(f"FAIL: aarch64 greedy text {got!r} is not a prefix of llama.cpp's {want!r}")
print(f"aarch64 (scalar kernels, qemu): greedy text matches llama.cpp: {got!r}")
PY
