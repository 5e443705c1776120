#!/usr/bin/env bash
# Installed-package test: cmake --install the build into a temporary prefix, then build and run
# tests/install/consumer.c against it via find_package(zerfoo) and via pkg-config, and the
# doctest consumer tests (tests/install/consumer_test.cpp).
# Usage: run.sh BUILD_DIR MODEL.gguf
set -euo pipefail
build="$1"; model="$2"
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir="$(dirname "$(find "$tmp/prefix" -name 'libzerfoo.so' | head -n1)")"

cmake -S "$here" -B "$tmp/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/cmake/consumer" "$model" | tee "$tmp/out1"
LD_LIBRARY_PATH="$libdir" ZF_CONSUMER_MODEL="$model" "$tmp/cmake/consumer_test"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c99 -Wall -Wextra -pedantic -Werror "$here/consumer.c" -o "$tmp/consumer_pc" \
  $(pkg-config --cflags --libs zerfoo)
LD_LIBRARY_PATH="$libdir" "$tmp/consumer_pc" "$model" | tee "$tmp/out2"
cmp "$tmp/out1" "$tmp/out2"
echo "OK: find_package and pkg-config consumers generated the same text"
