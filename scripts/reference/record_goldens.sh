#!/usr/bin/env bash
# Records tests/data/golden/{gemma3,smollm2}.json from the reference (llama.cpp). Not part of
# the default test run; the committed JSON files are. Builds the reference first if needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$("$root/scripts/reference/build_llama_cpp.sh")"
src="$(ls -d "$(dirname "$build")"/sdist/llama_cpp_python-*/vendor/llama.cpp | head -n1)"
bin="$build/golden_recorder"
g++ -std=c++17 -O2 "$root/scripts/reference/golden_recorder.cpp" -I"$src/include" \
  -I"$src/ggml/include" -L"$build/bin" -lllama -Wl,-rpath,"$build/bin" -o "$bin"
eval "$("$root/scripts/fetch_models.sh" | sed 's/^/export model_/')"
"$bin" "$model_gemma3" gemma > "$root/tests/data/golden/gemma3.json"
"$bin" "$model_smollm2" chatml > "$root/tests/data/golden/smollm2.json"
echo "wrote $root/tests/data/golden/{gemma3,smollm2}.json" >&2
