#!/usr/bin/env bash
# Builds the reference (llama.cpp, vendored by llama-cpp-python's source distribution on PyPI)
# with cmake into a cache outside git: libllama plus llama-bench / llama-completion. Used only to
# record goldens and to benchmark side by side; none of its code enters zerfoo.
# Prints the build directory.
#
# AMX is off: this machine kind reports AMX in /proc/cpuinfo but traps tile instructions
# (SIGILL in tilezero), so a -march=native build crashes. Everything else is native.
set -euo pipefail
ref="${ZERFOO_REFERENCE:-$HOME/.cache/zerfoo/reference}"
version=0.3.36
mkdir -p "$ref/sdist"
if [ ! -f "$ref/sdist/llama_cpp_python-$version.tar.gz" ]; then
  python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    "llama-cpp-python==$version" -d "$ref/sdist" >&2
fi
src="$ref/sdist/llama_cpp_python-$version/vendor/llama.cpp"
[ -d "$src" ] || tar xzf "$ref/sdist/llama_cpp_python-$version.tar.gz" -C "$ref/sdist"
build="$ref/build"
noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
if [ ! -x "$build/bin/llama-bench" ]; then
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DBUILD_SHARED_LIBS=ON -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" >&2
  cmake --build "$build" -j"$(nproc)" --target llama llama-bench llama-completion >&2
fi
echo "$build"
