#!/usr/bin/env bash
# Cross-builds the given targets for aarch64 (Release, -Werror, tests on) into
# build-test-aarch64, with qemu-user as the emulator for test discovery. Installs the cross
# compiler, qemu-user and googletest's sources (apt) when missing. Used by
# scripts/cross_check_aarch64.sh and bench/aarch64_insns.sh. Usage: build_aarch64.sh TARGET...
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh g++-aarch64-linux-gnu qemu-user googletest
cmake -S . -B build-test-aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_SYSTEM_NAME=Linux \
  -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc \
  -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DZF_BUILD_TESTS=ON -DZF_BUILD_KERNELS=OFF -DZF_WERROR=ON \
  "-DCMAKE_CROSSCOMPILING_EMULATOR=qemu-aarch64;-L;/usr/aarch64-linux-gnu" >/dev/null
cmake --build build-test-aarch64 -j"$(nproc)" --target "$@"
