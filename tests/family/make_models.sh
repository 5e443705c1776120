#!/usr/bin/env bash
# Writes the model-family files of the golden tests (scripts/synth_models.py --families) into
# OUT_DIR, from a fresh Debian machine: the pinned numpy/gguf of scripts/requirements-synth.txt
# (pip --target into a cache, the system site-packages untouched), llama.cpp's vocabulary files
# (models/ggml-vocab-*.gguf from the llama-cpp-python 0.3.36 sdist on PyPI, sha256-checked) and
# Gemma 3's tokenizer (scripts/fetch_models.sh). Run by ctest as the fixture family.models;
# fails (non-zero) on any missing input, never skips.
#
#   tests/family/make_models.sh OUT_DIR [--only NAMES --quants QUANTS]
# (the extra arguments go to synth_models.py: bench/family_bench.sh writes its 1B-class files so)
#
# Caches: ~/.cache/zerfoo/synth-py/<requirements hash> (Python packages),
# $ZERFOO_REFERENCE (default ~/.cache/zerfoo/reference)/sdist (the sdist tarball, shared with
# scripts/reference/build_llama_cpp.sh) and .../vocab-0.3.36 (the extracted vocab files).
# OUT_DIR/.stamp holds the hash of the inputs: an unchanged generator is not re-run. The default
# set is written once into ~/.cache/zerfoo/family-models/<hash> and OUT_DIR links there.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: make_models.sh OUT_DIR [synth_models.py args]}"
shift
py="${PYTHON:-python3}"
req="$root/scripts/requirements-synth.txt"
start=$(date +%s)

# 1. Pinned Python packages.
pydir="$HOME/.cache/zerfoo/synth-py/$(sha256sum "$req" | cut -c1-16)"
if [ ! -f "$pydir/.ok" ]; then
  "$py" -m pip --version >/dev/null 2>&1 || {
    echo "make_models: python3 -m pip is missing (apt-get install python3-pip)" >&2; exit 2; }
  flags=(--no-deps --disable-pip-version-check --quiet --only-binary :all: --target "$pydir.tmp")
  "$py" -m pip install --help | grep -q -- --break-system-packages && flags+=(--break-system-packages)
  rm -rf "$pydir.tmp"
  "$py" -m pip install "${flags[@]}" -r "$req" >&2
  rm -rf "$pydir" && mv "$pydir.tmp" "$pydir" && touch "$pydir/.ok"
fi
export PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}"

# 2. llama.cpp's vocabulary files (with their tokenizer test vectors, *.inp / *.out).
vocab="$("$root/scripts/fetch_vocab.sh")"

# 3. Gemma's tokenizer (the Gemma 3 270M file).
gemma="$("$root/scripts/fetch_models.sh" gemma3)"

# 4. The files (skipped when the generator and its inputs are unchanged and every file exists).
stamp="$( (cat "$root/scripts/synth_models.py" "$root/scripts/synth_families.py" "$req"; echo "$@") | sha256sum | cut -c1-32)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  echo "make_models: $out is up to date"
  exit 0
fi
if [ $# -gt 0 ]; then  # a subset for a benchmark: written in place
  rm -f "$out/.stamp"
  "$py" "$root/scripts/synth_models.py" --families "$out" --vocab-dir "$vocab" --gemma-vocab "$gemma" "$@"
  echo "$stamp" > "$out/.stamp"
  echo "make_models: wrote $out in $(( $(date +%s) - start )) s"
  exit 0
fi
# The default set (4 GiB, ~30 s to write) is kept once per generator version in
# ~/.cache/zerfoo/family-models/<stamp> and OUT_DIR links to it, so a fresh build directory (a CI
# clone) does not write it again. Other versions are removed; flock keeps concurrent builds apart.
cache_root="${ZF_FAMILY_MODELS_CACHE:-$HOME/.cache/zerfoo/family-models}"
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
flock 9
cached="$cache_root/$stamp"
if ! { [ -f "$cached/.stamp" ] && [ "$(cat "$cached/.stamp")" = "$stamp" ]; }; then
  rm -rf "$cached.tmp"
  mkdir -p "$cached.tmp"
  "$py" "$root/scripts/synth_models.py" --families "$cached.tmp" --vocab-dir "$vocab" --gemma-vocab "$gemma"
  echo "$stamp" > "$cached.tmp/.stamp"
  rm -rf "$cached" && mv "$cached.tmp" "$cached"
  find "$cache_root" -mindepth 1 -maxdepth 1 -type d ! -name "$stamp" -exec rm -rf {} +
  echo "make_models: wrote $cached in $(( $(date +%s) - start )) s"
fi
rm -rf "$out"
mkdir -p "$(dirname "$out")"
ln -sfn "$cached" "$out"
echo "make_models: $out -> $cached"
