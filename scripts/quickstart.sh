#!/usr/bin/env bash
# One command from a fresh Debian machine to generated text: installs the build dependencies,
# builds zerfoo (Release), fetches the default model (Gemma 3 270M, Q4_K_M) and generates.
# Usage: scripts/quickstart.sh ["prompt"]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DZF_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target zerfoo_cli
model=$(scripts/fetch_models.sh gemma3)
prompt="${1:-The three most important inventions of the 20th century are}"
exec build/zerfoo generate -m "$model" -p "$prompt" -n 96 --temp 0
