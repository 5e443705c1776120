#!/usr/bin/env bash
# Installs Debian's default clang and its compiler-rt (sanitizer runtimes and libFuzzer, package
# libclang-rt-N-dev, only a Recommends of clang) when missing. Used by the clang/fuzz/ABI scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang++ >/dev/null || scripts/install_deps.sh clang
v="$(clang++ -dumpversion | cut -d. -f1)"
scripts/install_deps.sh "libclang-rt-${v}-dev"
