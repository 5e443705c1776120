#!/usr/bin/env bash
# Installs Debian's default clang and its compiler-rt (sanitizer runtimes and libFuzzer, package
# libclang-rt-N-dev, only a Recommends of clang) when missing. Used by the clang/fuzz/ABI scripts.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh clang  # by package (dpkg), like every other tool
v="$(clang++ -dumpversion | cut -d. -f1)"
scripts/install_deps.sh "libclang-rt-${v}-dev"
