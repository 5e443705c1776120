#!/usr/bin/env bash
# Records tests/data/golden/families/<model>-<quant>.json from the reference (llama.cpp) on the
# synthesized family files (tests/family/make_models.sh), one per file: the file's sha256, the
# tokens fed and the logits' statistics at every position (family_recorder.cpp). A file the
# reference refuses gets {"file", "sha256", "reference_refused": true}. Not part of the default
# test run; the committed JSON files are (tests/family/family_test.cpp). Builds the reference
# first if needed.
#
#   scripts/reference/record_family_goldens.sh [MODELS_DIR]   (default build/tests/family-models,
#   where the ctest fixture family.models writes them)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
models="${1:-$root/build/tests/family-models}"
build="$("$root/scripts/reference/build_llama_cpp.sh")"
src="$(ls -d "$(dirname "$build")"/sdist/llama_cpp_python-*/vendor/llama.cpp | head -n1)"
bin="$build/family_recorder"
g++ -std=c++17 -O2 "$root/scripts/reference/family_recorder.cpp" -I"$src/include" \
  -I"$src/ggml/include" -L"$build/bin" -lllama -Wl,-rpath,"$build/bin" -o "$bin"
"$root/tests/family/make_models.sh" "$models"
dest="$root/tests/data/golden/families"
mkdir -p "$dest"
for f in "$models"/*-*.gguf; do
  name="$(basename "$f" .gguf)"
  case "$name" in vocab-*) continue ;; esac
  sha="$(sha256sum "$f" | cut -d' ' -f1)"
  rc=0
  "$bin" "$f" "$sha" > "$dest/$name.json.tmp" || rc=$?
  if [ "$rc" = 3 ]; then
    printf '{"file": "%s", "sha256": "%s", "reference_refused": true}\n' "$name.gguf" "$sha" > "$dest/$name.json.tmp"
    echo "$name: refused by the reference" >&2
  elif [ "$rc" != 0 ]; then
    echo "$name: recorder failed ($rc)" >&2; exit 1
  fi
  mv "$dest/$name.json.tmp" "$dest/$name.json"
  echo "$name: recorded" >&2
done
du -sh "$dest" >&2
