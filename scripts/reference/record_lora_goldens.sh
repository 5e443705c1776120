#!/usr/bin/env bash
# Records tests/data/golden/lora/smollm2.json from the reference (llama.cpp) for
# tests/capi/lora_test.cpp: two random LoRA adapters for SmolLM2 (scripts/synth_lora.py with the
# arguments stored in the JSON, so the test writes the same files) and the reference's logits
# with them applied (lora_recorder.cpp): adapter "a" alone at scale 1, and "a" at 0.5 with "b" at
# 1. Not part of the default test run; the committed JSON is. Builds the reference first if
# needed.
#
#   scripts/reference/record_lora_goldens.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$("$root/scripts/reference/build_llama_cpp.sh")"
src="$(ls -d "$(dirname "$build")"/sdist/llama_cpp_python-*/vendor/llama.cpp | head -n1)"
bin="$build/lora_recorder"
g++ -std=c++17 -O2 "$root/scripts/reference/lora_recorder.cpp" -I"$src/include" \
  -I"$src/ggml/include" -L"$build/bin" -lllama -Wl,-rpath,"$build/bin" -o "$bin"
model="$("$root/scripts/fetch_models.sh" smollm2)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The adapters: "a" F32 rank 8 on q, k, v, o, gate, up, down of every layer; "b" F16 rank 4 on
# q, v, down (another alpha, so the alpha / rank rule is checked with two ranks).
synth_a='["--seed", "1"]'
synth_b='["--seed", "2", "--type", "f16", "--rank", "4", "--alpha", "8", "--targets", "q,v,down"]'
python3 "$root/scripts/synth_lora.py" "$model" "$tmp/a.gguf" --seed 1 >/dev/null
python3 "$root/scripts/synth_lora.py" "$model" "$tmp/b.gguf" --seed 2 --type f16 --rank 4 --alpha 8 \
  --targets q,v,down >/dev/null
greedy=16
"$bin" "$model" "$greedy" "$tmp/a.gguf" 1.0 > "$tmp/case_a.json"
"$bin" "$model" "$greedy" "$tmp/a.gguf" 0.5 "$tmp/b.gguf" 1.0 > "$tmp/case_ab.json"
dest="$root/tests/data/golden/lora"
mkdir -p "$dest"
{
  printf '{"reference": "llama.cpp (llama-cpp-python 0.3.36 sdist)",\n "model": "%s",\n' "$(basename "$model")"
  printf ' "synth": {"a": %s, "b": %s},\n "cases": {\n "a": ' "$synth_a" "$synth_b"
  cat "$tmp/case_a.json"
  printf ', "ab": '
  cat "$tmp/case_ab.json"
  printf '}}\n'
} > "$dest/smollm2.json"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dest/smollm2.json"
du -sh "$dest/smollm2.json" >&2
