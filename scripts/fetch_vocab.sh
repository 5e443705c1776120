#!/usr/bin/env bash
# Extracts llama.cpp's vocabulary files (models/ggml-vocab-*.gguf with their tokenizer test
# vectors *.inp / *.out) from the llama-cpp-python 0.3.36 sdist on PyPI (sha256-checked) into
# $ZERFOO_REFERENCE (default ~/.cache/zerfoo/reference)/vocab-0.3.36 and prints that folder.
# Used by tests/family/make_models.sh and as the ctest fixture vocab.reference (the tokenizer
# tests of the vocabularies too large to copy into tests/data: qwen35, gemma-4).
set -euo pipefail
py="${PYTHON:-python3}"
version=0.3.36
sdist_sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
ref="${ZERFOO_REFERENCE:-$HOME/.cache/zerfoo/reference}"
vocab="$ref/vocab-$version"
if [ ! -f "$vocab/.ok2" ]; then
  tarball="$ref/sdist/llama_cpp_python-$version.tar.gz"
  if [ ! -f "$tarball" ]; then
    "$py" -m pip --version >/dev/null 2>&1 || {
      echo "fetch_vocab: python3 -m pip is missing (apt-get install python3-pip)" >&2; exit 2; }
    mkdir -p "$ref/sdist"
    tmp="$(mktemp -d)"
    "$py" -m pip download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
      "llama-cpp-python==$version" -d "$tmp" >&2
    mv -n "$tmp/llama_cpp_python-$version.tar.gz" "$tarball" 2>/dev/null || true
    rm -rf "$tmp"
  fi
  [ "$(sha256sum "$tarball" | cut -d' ' -f1)" = "$sdist_sha" ] || {
    echo "fetch_vocab: $tarball: sha256 mismatch (expected $sdist_sha)" >&2; exit 1; }
  tmp="$(mktemp -d)"
  tar xzf "$tarball" -C "$tmp" --wildcards "llama_cpp_python-$version/vendor/llama.cpp/models/ggml-vocab-*"
  rm -rf "$vocab" && mkdir -p "$vocab"
  mv "$tmp/llama_cpp_python-$version/vendor/llama.cpp/models/"ggml-vocab-* "$vocab/"
  rm -rf "$tmp"
  touch "$vocab/.ok2"
fi
echo "$vocab"
