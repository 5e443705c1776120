#!/usr/bin/env bash
# Compiles mmproj_recorder.cpp against the llama.cpp reference build (build_llama_cpp.sh: it
# builds libmtmd beside libllama), writes the synthesized Gemma 3 projector files
# (tests/vision/make_models.sh, default build/tests/vision_models) and rewrites
# tests/data/golden/vision/gemma3-<type>.json: libmtmd's embeddings of the two Pattern images
# (see the recorder), with Gemma 3 270M (scripts/fetch_models.sh gemma3) as the text model, and
# gemma3-<type>-lm.json: the language model's logits and greedy tokens after a chat prompt with
# an image (the recorder's --lm; F16 and Q8_0 projectors); and idefics3-<type>.json (the
# recorder's --tiles: every tile's and overview's embeddings and pixels, the Pattern pictures
# and tests/data/vision/test-1.jpeg) and idefics3-<type>-lm.json (--lm-chatml) with the
# fixture's smollm2-vlm.gguf (SmolLM2 + SmolVLM's image tokens) as the text model.
#   scripts/reference/record_mmproj_goldens.sh [MODELS_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ref="${ZERFOO_REFERENCE:-$HOME/.cache/zerfoo/reference}"
build="$ref/build"
src="$ref/sdist/llama_cpp_python-0.3.36/vendor/llama.cpp"
[ -f "$build/bin/libmtmd.so" ] || "$here/build_llama_cpp.sh"
models="${1:-$root/build/tests/vision_models}"
"$root/tests/vision/make_models.sh" "$models"
bin="$build/mmproj_recorder"
if [ ! -x "$bin" ] || [ "$here/mmproj_recorder.cpp" -nt "$bin" ] || [ "$root/tests/vision/test_images.cpp" -nt "$bin" ]; then
  g++ -std=c++17 -O2 "$here/mmproj_recorder.cpp" "$root/tests/vision/test_images.cpp" -I"$root/tests/vision" \
    -I/usr/include/stb -I"$src/include" -I"$src/ggml/include" -I"$src/tools/mtmd" -L"$build/bin" -lmtmd -lllama -lggml -lggml-base \
    -Wl,-rpath,"$build/bin" -o "$bin"
fi
lm="$("$root/scripts/fetch_models.sh" gemma3)"
out="$root/tests/data/golden/vision"
mkdir -p "$out"
for t in f32 f16 q8_0; do
  f="$models/mmproj-gemma3-$t.gguf"
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  "$bin" "$f" "$lm" "$sha" > "$out/gemma3-$t.json.tmp"
  mv "$out/gemma3-$t.json.tmp" "$out/gemma3-$t.json"
  echo "$out/gemma3-$t.json"
  if [ "$t" != f32 ]; then
    "$bin" "$f" "$lm" "$sha" --lm > "$out/gemma3-$t-lm.json.tmp"
    mv "$out/gemma3-$t-lm.json.tmp" "$out/gemma3-$t-lm.json"
    echo "$out/gemma3-$t-lm.json"
  fi
done
for t in f16 q8_0; do
  f="$models/mmproj-idefics3-$t.gguf"
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  "$bin" "$f" "$models/smollm2-vlm.gguf" "$sha" --tiles "$root/tests/data/vision/test-1.jpeg" > "$out/idefics3-$t.json.tmp"
  mv "$out/idefics3-$t.json.tmp" "$out/idefics3-$t.json"
  "$bin" "$f" "$models/smollm2-vlm.gguf" "$sha" --lm-chatml > "$out/idefics3-$t-lm.json.tmp"
  mv "$out/idefics3-$t-lm.json.tmp" "$out/idefics3-$t-lm.json"
  echo "$out/idefics3-$t.json $out/idefics3-$t-lm.json"
done
# gemma4v (Gemma 4's vision tower) with the synthesized gemma4 model (tests/family's fixture,
# scripts/synth_families.py; its width 256 is the projector's): gemma4v-<type>.json (the Pattern
# pictures at their own sizes), gemma4v-<type>-lm.json (--lm-gemma4: Gemma 4's chat format) and
# gemma4v-<type>-tiles.json (--tiles: test-1.jpeg as libmtmd decodes it).
g4="${ZF_GEMMA4_LM:-$root/build-test/tests/family-models/gemma4-f32.gguf}"
for t in f32 f16 q8_0; do
  f="$models/mmproj-gemma4v-$t.gguf"
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  "$bin" "$f" "$g4" "$sha" > "$out/gemma4v-$t.json.tmp"
  mv "$out/gemma4v-$t.json.tmp" "$out/gemma4v-$t.json"
  echo "$out/gemma4v-$t.json"
  if [ "$t" != f32 ]; then
    "$bin" "$f" "$g4" "$sha" --lm-gemma4 > "$out/gemma4v-$t-lm.json.tmp"
    mv "$out/gemma4v-$t-lm.json.tmp" "$out/gemma4v-$t-lm.json"
    echo "$out/gemma4v-$t-lm.json"
  fi
done
# pixtral with the fixture's smollm2-pixtral.gguf (SmolLM2 + [IMG], [IMG_BREAK], [IMG_END]):
# pixtral-<type>.json (--tiles: the image's rows, its preprocessed pixels, then [IMG_END]; the
# Pattern pictures and test-1.jpeg) and pixtral-<type>-lm.json (--lm-chatml); and
# pixtral-<type>-lm-mistral3.json on mistral3-pixtral.gguf (the same model named mistral3).
for t in f32 f16 q8_0; do
  f="$models/mmproj-pixtral-$t.gguf"
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  "$bin" "$f" "$models/smollm2-pixtral.gguf" "$sha" --tiles "$root/tests/data/vision/test-1.jpeg" > "$out/pixtral-$t.json.tmp"
  mv "$out/pixtral-$t.json.tmp" "$out/pixtral-$t.json"
  echo "$out/pixtral-$t.json"
  if [ "$t" != f32 ]; then
    "$bin" "$f" "$models/smollm2-pixtral.gguf" "$sha" --lm-chatml > "$out/pixtral-$t-lm.json.tmp"
    mv "$out/pixtral-$t-lm.json.tmp" "$out/pixtral-$t-lm.json"
    "$bin" "$f" "$models/mistral3-pixtral.gguf" "$sha" --lm-chatml > "$out/pixtral-$t-lm-mistral3.json.tmp"
    mv "$out/pixtral-$t-lm-mistral3.json.tmp" "$out/pixtral-$t-lm-mistral3.json"
    echo "$out/pixtral-$t-lm.json $out/pixtral-$t-lm-mistral3.json"
  fi
done
# qwen2.5vl_merger (Qwen2.5-VL's vision encoder) with the synthesized qwen2vl model (tests/family's
# fixture, scripts/synth_families.py; its width 256 is the projector's): qwen25vl-<type>.json (the
# Pattern pictures at their own sizes, whole 28 px blocks) and qwen25vl-<type>-lm.json (--lm-chatml
# on the fixture's qwen2vl-vl.gguf, the synthesized qwen2vl with Qwen-VL's vision tokens: the
# image at M-RoPE positions; its chunk's n_pos, nx, ny recorded).
q2="${ZF_QWEN2VL_LM:-$root/build-test/tests/family-models/qwen2vl-f32.gguf}"
for t in f32 f16 q8_0; do
  f="$models/mmproj-qwen25vl-$t.gguf"
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  "$bin" "$f" "$q2" "$sha" > "$out/qwen25vl-$t.json.tmp"
  mv "$out/qwen25vl-$t.json.tmp" "$out/qwen25vl-$t.json"
  echo "$out/qwen25vl-$t.json"
  if [ "$t" != f32 ]; then
    "$bin" "$f" "$models/qwen2vl-vl.gguf" "$sha" --lm-chatml > "$out/qwen25vl-$t-lm.json.tmp"
    mv "$out/qwen25vl-$t-lm.json.tmp" "$out/qwen25vl-$t-lm.json"
    echo "$out/qwen25vl-$t-lm.json"
  fi
done
# qwen3vl_merger (Qwen3-VL's vision encoder, a deepstack merger) with the fixture's synthesized
# qwen3vl-q8_0.gguf (one deepstack layer: libmtmd's rows are 256 x (1 + 1) wide): qwen3vl-<type>.json
# (the Pattern pictures at their own sizes, whole 32 px blocks) and qwen3vl-<type>-lm.json
# (--lm-chatml on qwen3vl-vl.gguf, the model with Qwen-VL's vision tokens: the rows at M-RoPE
# positions, their deepstack slices added after layer 0).
for t in f32 f16 q8_0; do
  f="$models/mmproj-qwen3vl-$t.gguf"
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  "$bin" "$f" "$models/qwen3vl-q8_0.gguf" "$sha" > "$out/qwen3vl-$t.json.tmp"
  mv "$out/qwen3vl-$t.json.tmp" "$out/qwen3vl-$t.json"
  echo "$out/qwen3vl-$t.json"
  if [ "$t" != f32 ]; then
    "$bin" "$f" "$models/qwen3vl-vl.gguf" "$sha" --lm-chatml > "$out/qwen3vl-$t-lm.json.tmp"
    mv "$out/qwen3vl-$t-lm.json.tmp" "$out/qwen3vl-$t-lm.json"
    echo "$out/qwen3vl-$t-lm.json"
  fi
done
# qwen3vl_merger without deepstack (Qwen 3.5's projector) with the fixture's qwen35-vl.gguf (the
# synthesized qwen35: DeltaNet and gated attention layers, interleaved M-RoPE, width 128, with
# Qwen-VL's vision tokens): qwen35-<type>.json (the rows, with qwen35-q8_0.gguf) and
# qwen35-<type>-lm.json (--lm-chatml).
for t in f16 q8_0; do
  f="$models/mmproj-qwen35-$t.gguf"
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  "$bin" "$f" "$models/qwen35-q8_0.gguf" "$sha" > "$out/qwen35-$t.json.tmp"
  mv "$out/qwen35-$t.json.tmp" "$out/qwen35-$t.json"
  echo "$out/qwen35-$t.json"
  "$bin" "$f" "$models/qwen35-vl.gguf" "$sha" --lm-chatml > "$out/qwen35-$t-lm.json.tmp"
  mv "$out/qwen35-$t-lm.json.tmp" "$out/qwen35-$t-lm.json"
  echo "$out/qwen35-$t-lm.json"
done
for t in f16 q8_0; do  # and tools/mtmd/test-1.jpeg through libmtmd's own decoder (--tiles' chunks)
  f="$models/mmproj-gemma4v-$t.gguf"
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  "$bin" "$f" "$g4" "$sha" --tiles "$root/tests/data/vision/test-1.jpeg" > "$out/gemma4v-$t-tiles.json.tmp"
  mv "$out/gemma4v-$t-tiles.json.tmp" "$out/gemma4v-$t-tiles.json"
  echo "$out/gemma4v-$t-tiles.json"
done
# lfm2 (LFM2-VL) with the fixture's synthesized lfm2-f32.gguf (width 256): lfm2-<type>.json
# (--tiles: the marker's chunks, the image's rows and its preprocessed pixels; the Pattern
# pictures and test-1.jpeg, each one image (no tiles) under lfm2's budget), and
# lfm2-<type>-lm.json (--lm-chatml) on lfm2-vl.gguf (the same LFM2 with LFM2-VL's image tokens);
# lfm2-<type>-tiled.json (--tiles 1024x768: a Pattern picture over twice the budget, which
# libmtmd cuts into 3 x 2 tiles of 512 px and a thumbnail) and lfm2-<type>-lm-tiled.json (that
# picture in the --lm-chatml prompt).
for t in f32 f16 q8_0; do
  f="$models/mmproj-lfm2-$t.gguf"
  sha=$(sha256sum "$f" | cut -d' ' -f1)
  "$bin" "$f" "$models/lfm2-f32.gguf" "$sha" --tiles "$root/tests/data/vision/test-1.jpeg" > "$out/lfm2-$t.json.tmp"
  mv "$out/lfm2-$t.json.tmp" "$out/lfm2-$t.json"
  "$bin" "$f" "$models/lfm2-f32.gguf" "$sha" --tiles 1024x768 > "$out/lfm2-$t-tiled.json.tmp"
  mv "$out/lfm2-$t-tiled.json.tmp" "$out/lfm2-$t-tiled.json"
  echo "$out/lfm2-$t.json $out/lfm2-$t-tiled.json"
  if [ "$t" != f32 ]; then
    "$bin" "$f" "$models/lfm2-vl.gguf" "$sha" --lm-chatml > "$out/lfm2-$t-lm.json.tmp"
    mv "$out/lfm2-$t-lm.json.tmp" "$out/lfm2-$t-lm.json"
    "$bin" "$f" "$models/lfm2-vl.gguf" "$sha" --lm-chatml 1024x768 > "$out/lfm2-$t-lm-tiled.json.tmp"
    mv "$out/lfm2-$t-lm-tiled.json.tmp" "$out/lfm2-$t-lm-tiled.json"
    echo "$out/lfm2-$t-lm.json $out/lfm2-$t-lm-tiled.json"
  fi
done
