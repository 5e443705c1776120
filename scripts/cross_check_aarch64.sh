#!/usr/bin/env bash
# The aarch64 build, checked from an x86 machine under qemu-user:
#   1. cross-compiles the library, CLI and unit tests for aarch64 with -Werror (the x86 kernel
#      files drop out; the NEON dot-product decode kernels, packed_neon.cpp, come in);
#   2. runs the unit tests under qemu's default CPU model, which has the ARMv8.2 dot product,
#      so the dispatched packed GEMV checked against the scalar reference is the NEON one;
#   3. runs one greedy generation of SmolLM2 twice, on that CPU model (NEON decode) and on a
#      Cortex-A53 model (no dot product: the scalar path); each must pick the kernels it should
#      and reproduce llama.cpp's recorded greedy text (tests/data/golden/smollm2.json).
# Installs g++-aarch64-linux-gnu, qemu-user and googletest's sources (apt) when missing.
# Build dir: build-test-aarch64.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh g++-aarch64-linux-gnu qemu-user googletest

qemu=(qemu-aarch64 -L /usr/aarch64-linux-gnu)
cmake -S . -B build-test-aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_SYSTEM_NAME=Linux \
  -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc \
  -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DZF_BUILD_TESTS=ON -DZF_BUILD_KERNELS=OFF -DZF_WERROR=ON \
  "-DCMAKE_CROSSCOMPILING_EMULATOR=$(IFS=';'; echo "${qemu[*]}")" >/dev/null
cmake --build build-test-aarch64 -j"$(nproc)" --target zerfoo_cli zerfoo_unit_tests

echo "aarch64 unit tests (qemu, dot-product CPU model):"
"${qemu[@]}" build-test-aarch64/tests/zerfoo_unit_tests --gtest_brief=1

model="$(scripts/fetch_models.sh smollm2)"
prompt="The capital of France is"
for cpu in max:neon-dotprod cortex-a53:scalar; do
  log="$(mktemp)"
  out="$("${qemu[@]}" -cpu "${cpu%%:*}" build-test-aarch64/zerfoo generate -m "$model" -p "$prompt" -n 12 \
    --temp 0 -t 2 -v 2>"$log")"
  if ! grep -q "CPU kernels: ${cpu#*:};" "$log"; then
    cat "$log"
    echo "FAIL: on qemu's ${cpu%%:*} CPU model the engine did not pick the ${cpu#*:} kernels"; exit 1
  fi
  rm -f "$log"
  python3 - "$out" "${cpu#*:}" <<'PY'
import json, sys
got, isa = sys.argv[1], sys.argv[2]
want = json.load(open("tests/data/golden/smollm2.json"))["prompts"][0]["greedy_text"]
if not got or not want.startswith(got):
    sys.exit(f"FAIL: aarch64 ({isa}) greedy text {got!r} is not a prefix of llama.cpp's {want!r}")
print(f"aarch64 ({isa} kernels, qemu): greedy text matches llama.cpp: {got!r}")
PY
done
