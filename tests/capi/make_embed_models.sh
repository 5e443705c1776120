#!/usr/bin/env bash
# Writes the generated model files of the C API tests into OUT_DIR: the random-weight embedding
# models of tests/capi/embed_test.cpp (scripts/synth_embed.py: BERT, Qwen3 embedder / reranker and
# EmbeddingGemma files in llama.cpp's layout with the real vocabularies: llama.cpp's bert-bge and
# qwen2 from scripts/fetch_vocab.sh, Gemma 3's from scripts/fetch_models.sh) and SmolLM2 split
# into three parts (split/, scripts/split_gguf.py; tests/capi/split_model_test.cpp), with the pinned numpy/gguf of
# scripts/requirements-synth.txt (the cache tests/family/make_models.sh uses). Run by ctest as the
# fixture embed.models; fails on a missing input.
#   tests/capi/make_embed_models.sh OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: make_embed_models.sh OUT_DIR}"
py="${PYTHON:-python3}"
req="$root/scripts/requirements-synth.txt"
pydir="$HOME/.cache/zerfoo/synth-py/$(sha256sum "$req" | cut -c1-16)"
if [ ! -f "$pydir/.ok" ]; then
  flags=(--no-deps --disable-pip-version-check --quiet --only-binary :all: --target "$pydir.tmp")
  "$py" -m pip install --help | grep -q -- --break-system-packages && flags+=(--break-system-packages)
  rm -rf "$pydir.tmp"
  "$py" -m pip install "${flags[@]}" -r "$req" >&2
  rm -rf "$pydir" && mv "$pydir.tmp" "$pydir" && touch "$pydir/.ok"
fi
export PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}"
stamp="$(cat "$0" "$root/scripts/synth_embed.py" "$root/scripts/synth_families.py" "$root/scripts/split_gguf.py" "$req" | sha256sum | cut -c1-32)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then exit 0; fi
# write_set DIR: the whole set into the empty DIR.
write_set() {
  local vocab gemma
  vocab="$("$root/scripts/fetch_vocab.sh")"
  gemma="$("$root/scripts/fetch_models.sh" gemma3)"
  "$py" "$root/scripts/synth_embed.py" "$1" --vocab-dir "$vocab" --gemma-vocab "$gemma"
  mkdir -p "$1/split"
  "$py" "$root/scripts/split_gguf.py" "$("$root/scripts/fetch_models.sh" smollm2)" "$1/split/smollm2" --max-tensors 100
}
# Written once per generator version into ~/.cache/zerfoo/embed-models/<stamp> (5 s of CPU,
# 441 MB) and hard-linked into OUT_DIR: the release, ASan and TSan builds each need the set.
# shellcheck source=scripts/cached_set.sh
. "$root/scripts/cached_set.sh"
cached_set embed-models "$stamp" "$out" write_set
