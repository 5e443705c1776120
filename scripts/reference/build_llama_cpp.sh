#!/usr/bin/env bash
# Builds the reference (llama.cpp, vendored by llama-cpp-python's source distribution on PyPI)
# with cmake into a cache outside git: libllama plus llama-bench / llama-completion. Used only to
# record goldens and to benchmark side by side; none of its code enters zerfoo.
# Prints the build directory.
#
# `build_llama_cpp.sh aarch64 [ARCH]` cross-builds llama-completion for aarch64 instead (static,
# -march=ARCH: armv8.2-a+dotprod by default, into build-aarch64/; armv8-a, the level of
# Cortex-A53/A72 CPUs without the dot product, into build-aarch64-armv8-a/), for
# bench/aarch64_insns.sh under qemu-user.
#
# `build_llama_cpp.sh embedding` builds only libllama and llama-embedding (pooled vectors for
# tests/data/golden/embeddings; scripts/reference/record_embedding_goldens.sh).
#
# `build_llama_cpp.sh speculative` also builds llama-speculative and llama-lookup (examples) in the
# same build directory, for bench/lookup_bench.py --llama-speculative / --llama-lookup.
#
# `build_llama_cpp.sh server` also builds llama-server in the same build directory (only the
# server and its libraries compile; no web UI, no download: LLAMA_USE_PREBUILT_UI=OFF, no curl),
# at nice 10 as it takes a while on two cores, for bench/serve_bench.py --llama-server.
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
if [ "${1:-}" = aarch64 ]; then
  arch="${2:-armv8.2-a+dotprod}"
  build="$ref/build-aarch64"
  [ "$arch" = armv8.2-a+dotprod ] || build="$ref/build-aarch64-$arch"
  if [ ! -x "$build/bin/llama-completion" ]; then
    "$(dirname "$0")/../install_deps.sh" g++-aarch64-linux-gnu >&2
    cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_SYSTEM_NAME=Linux \
      -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc \
      -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH="$arch" \
      -DGGML_OPENMP=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_SERVER=OFF -DBUILD_SHARED_LIBS=OFF >&2
    cmake --build "$build" -j"$(nproc)" --target llama-completion >&2
  fi
  echo "$build"
  exit 0
fi
build="$ref/build"
noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
if [ "${1:-}" = embedding ]; then
  # Only libllama and llama-embedding (the examples are configured, just that one is built).
  if [ ! -x "$build/bin/llama-embedding" ]; then
    cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
      -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=OFF \
      -DBUILD_SHARED_LIBS=ON -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" >&2
    nice -n 10 cmake --build "$build" -j"${ZF_REF_JOBS:-$(nproc)}" --target llama-embedding >&2
  fi
  echo "$build"
  exit 0
fi
if [ ! -x "$build/bin/llama-bench" ]; then
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DBUILD_SHARED_LIBS=ON -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" >&2
  cmake --build "$build" -j"$(nproc)" --target llama llama-bench llama-completion >&2
fi
if [ "${1:-}" = speculative ] && [ ! -x "$build/bin/llama-speculative" ]; then
  # llama.cpp's speculative examples, for bench/lookup_bench.py side by side: llama-speculative
  # (a draft model) and llama-lookup (prompt lookup / n-gram drafting).
  cmake "$build" -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_COMMON=ON >&2
  nice -n 10 cmake --build "$build" -j"$(nproc)" --target llama-speculative llama-lookup >&2
fi
if [ "${1:-}" = server ] && [ ! -x "$build/bin/llama-server" ]; then
  cmake "$build" -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_CURL=OFF >&2
  nice -n 10 cmake --build "$build" -j"$(nproc)" --target llama-server >&2
fi
echo "$build"
