#!/bin/sh
# Checks the Rust binding: the committed bindgen output against include/zerfoo.h, rustfmt,
# clippy (-D warnings), the tests (linked, with the tokio feature; then the dynamic feature),
# rustdoc (-D warnings), the build script's and loader's error messages, and pkg-config discovery.
# Library: $ZERFOO_LIB_DIR (directory of libzerfoo.so.0), or derived from $ZERFOO_LIBRARY.
# Model: $ZERFOO_TEST_MODEL (SmolLM2); CLI for the parity test: $ZERFOO_CLI; Whisper:
# $ZERFOO_WHISPER_MODEL (default: scripts/fetch_models.sh whisper-tiny-en); vision:
# $ZERFOO_VISION_MODELS (tests/vision/make_models.sh writes it), $ZERFOO_GEMMA3_MODEL.
# Installs what is missing: Rust (rustup), bindgen-cli 0.73.2 (cargo, into
# ~/.cache/zerfoo/tools, linked from target/tools/bin),
# libclang-dev (apt, through scripts/install_deps.sh) unless LIBCLANG_PATH is set.
set -eu
cd "$(dirname "$0")"
here=$PWD

if [ -z "${ZERFOO_LIB_DIR:-}" ] && [ -n "${ZERFOO_LIBRARY:-}" ]; then
  ZERFOO_LIB_DIR=$(dirname "$ZERFOO_LIBRARY")
fi
: "${ZERFOO_LIB_DIR:?set ZERFOO_LIB_DIR to the directory holding libzerfoo.so.0}"
ZERFOO_LIB_DIR=$(cd "$ZERFOO_LIB_DIR" && pwd)
export ZERFOO_LIB_DIR
export ZERFOO_LIBRARY="${ZERFOO_LIBRARY:-$ZERFOO_LIB_DIR/libzerfoo.so.0}"
export CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
# Speech (tests/speech.rs): Whisper tiny.en, fetched and cached like the chat model.
ZERFOO_WHISPER_MODEL="${ZERFOO_WHISPER_MODEL:-$("$here/../../scripts/fetch_models.sh" whisper-tiny-en)}"
export ZERFOO_WHISPER_MODEL
# Vision (tests/vision.rs): tests/vision's synthesized Gemma 3 projectors (written once, cached)
# bound to Gemma 3 270M.
ZERFOO_VISION_MODELS="${ZERFOO_VISION_MODELS:-$HOME/.cache/zerfoo/vision_models}"
"$here/../../tests/vision/make_models.sh" "$ZERFOO_VISION_MODELS" >&2
# Audio (tests/audio.rs): the synthesized audio projectors, bound to SmolLM2.
"$here/../../tests/vision/make_audio_models.sh" "$ZERFOO_VISION_MODELS/audio" >&2
ZERFOO_GEMMA3_MODEL="${ZERFOO_GEMMA3_MODEL:-$("$here/../../scripts/fetch_models.sh" gemma3)}"
export ZERFOO_VISION_MODELS ZERFOO_GEMMA3_MODEL

# Rust: the machine's toolchain, else rustup.
if ! command -v cargo >/dev/null 2>&1; then
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "test.sh: cargo not found; installing Rust with rustup" >&2
  curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal -c clippy -c rustfmt
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
for c in cargo-clippy rustfmt; do
  command -v "$c" >/dev/null 2>&1 || rustup component add "${c#cargo-}"
done

step() { echo "== $*"; "$@"; }
t0=$(date +%s)

# 1. The committed bindings match the header (bindgen is pinned: its output format varies).
BINDGEN_VERSION=0.73.2
BINDGEN=bindgen
if [ "$(bindgen --version 2>/dev/null || true)" != "bindgen $BINDGEN_VERSION" ]; then
  # Installed once per machine, outside the checkout: a CI clone's target/ starts empty and the
  # install was ~57 s of this stage each run. target/tools/bin/bindgen links to it.
  tools="$HOME/.cache/zerfoo/tools/bindgen-$BINDGEN_VERSION"
  BINDGEN=$tools/bin/bindgen
  if [ "$("$BINDGEN" --version 2>/dev/null || true)" != "bindgen $BINDGEN_VERSION" ]; then
    # A debug build compiles in a third of the time and is fast enough for one header.
    step cargo install --quiet bindgen-cli --version "$BINDGEN_VERSION" --locked --debug --root "$tools"
  fi
  mkdir -p "$here/target/tools/bin" && ln -sfn "$BINDGEN" "$here/target/tools/bin/bindgen"
fi
# bindgen loads libclang's C library (libclang1-N, through libclang-dev). Detected by its
# package, not by a file glob: libclang-cpp (the C++ interface, in the base image) matches
# libclang*.so* but is not what bindgen loads. LIBCLANG_PATH set by the user wins.
if [ -z "${LIBCLANG_PATH:-}" ]; then
  "$here/../../scripts/install_deps.sh" libclang-dev
fi
step env BINDGEN="$BINDGEN" zerfoo-sys/generate.sh --check

# 2. Style and lints.
step cargo fmt --all --check
step cargo clippy --quiet --workspace --all-targets --features zerfoo/tokio -- -D warnings

# 3. Tests, linked (LD_LIBRARY_PATH finds the library at run time).
LD_LIBRARY_PATH="$ZERFOO_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  step cargo test --workspace --features zerfoo/tokio

# 4. The dynamic feature: nothing linked, libzerfoo.so.0 opened from $ZERFOO_LIBRARY.
step env -u LD_LIBRARY_PATH cargo test -p zerfoo --features dynamic --test model --test errors
out=$(env -u LD_LIBRARY_PATH ZERFOO_LIBRARY=/nonexistent/libzerfoo.so.0 \
  cargo run --quiet -p zerfoo --features dynamic --example stream -- model.gguf 2>&1 || true)
echo "$out" | grep -q "cannot load /nonexistent/libzerfoo.so.0" ||
  { echo "FAIL: dynamic load error not reported: $out"; exit 1; }
echo "OK: dynamic feature reports a missing library"

# 5. Docs.
RUSTDOCFLAGS="-D warnings" step cargo doc --quiet --no-deps --workspace --features zerfoo/tokio

# 6. The build script's errors say what to set (a separate target dir keeps the cache).
out=$(ZERFOO_LIB_DIR=/nonexistent cargo check --quiet -p zerfoo-sys --target-dir target/buildcheck 2>&1 || true)
echo "$out" | grep -q "ZERFOO_LIB_DIR=/nonexistent contains neither libzerfoo.so nor libzerfoo.so.0" ||
  { echo "FAIL: build script error for a bad ZERFOO_LIB_DIR: $out"; exit 1; }
if ! ls /usr/lib/libzerfoo.so* /usr/local/lib/libzerfoo.so* /usr/lib/*/libzerfoo.so* >/dev/null 2>&1; then
  pc=$(mktemp -d)
  printf 'Name: zerfoo\nDescription: old\nVersion: 0.1.0\nLibs: -lzerfoo\n' >"$pc/zerfoo.pc"
  out=$(env -u ZERFOO_LIB_DIR PKG_CONFIG_PATH="$pc" cargo check --quiet -p zerfoo-sys --target-dir target/buildcheck 2>&1 || true)
  rm -rf "$pc"
  echo "$out" | grep -q "Set ZERFOO_LIB_DIR to the directory containing libzerfoo.so" &&
    echo "$out" | grep -q "0.1.0" ||
    { echo "FAIL: build script accepted or misreported an old zerfoo.pc: $out"; exit 1; }
fi
echo "OK: build script errors name what to set"

# 7. Discovery through pkg-config: an installed zerfoo (from the CMake build dir), no ZERFOO_LIB_DIR.
if [ -f "$ZERFOO_LIB_DIR/cmake_install.cmake" ]; then
  prefix=$(mktemp -d)
  cmake --install "$ZERFOO_LIB_DIR" --prefix "$prefix" >/dev/null
  step env -u ZERFOO_LIB_DIR PKG_CONFIG_PATH="$prefix/lib/pkgconfig" LD_LIBRARY_PATH="$prefix/lib" \
    cargo test --quiet -p zerfoo --test model
  rm -rf "$prefix"
fi
echo "Rust binding checks passed in $(($(date +%s) - t0)) s"
