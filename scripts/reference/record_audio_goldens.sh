#!/usr/bin/env bash
# Compiles audio_recorder.cpp against the llama.cpp reference build (build_llama_cpp.sh builds
# libmtmd beside libllama), writes the synthesized audio projector files
# (tests/vision/make_audio_models.sh, default build/tests/vision_models/audio), the test clip
# tests/data/audio/test-2-4s.wav (the first 4 s of the sdist's tools/mtmd/test-2.mp3 as libmtmd
# decodes it, 16-bit) and rewrites tests/data/golden/audio/<type>-<ftype>.json (libmtmd's mel and
# embeddings of the clip) and <type>-<ftype>-lm.json (SmolLM2-135M's logits and greedy tokens
# after a ChatML prompt with the clip), with SmolLM2-135M (scripts/fetch_models.sh smollm2) as
# the text model. ~/.cache/zerfoo/speech-data/two-minutes.wav (if present) gives
# qwen2a-f16-long.json (five 30 s chunks). Gemma 4's audio tower: gemma4a-{f32,f16,q8_0}.json
# (the clip), gemma4a-f16-synth.json (a 31 s synthetic clip: two 30 s pieces) and
# gemma4a-{f16,q8_0}-lm.json (a Gemma 4 prompt with the clip), with the synthesized Gemma 4
# (tests/vision/make_models.sh's gemma4-f32.gguf in MODELS_DIR/..) as the text model.
#   scripts/reference/record_audio_goldens.sh [MODELS_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ref="${ZERFOO_REFERENCE:-$HOME/.cache/zerfoo/reference}"
build="$ref/build"
src="$ref/sdist/llama_cpp_python-0.3.36/vendor/llama.cpp"
[ -f "$build/bin/libmtmd.so" ] || "$here/build_llama_cpp.sh"
models="${1:-$root/build/tests/vision_models/audio}"
"$root/tests/vision/make_audio_models.sh" "$models"
bin="$build/audio_recorder"
if [ ! -x "$bin" ] || [ "$here/audio_recorder.cpp" -nt "$bin" ]; then
  g++ -std=c++17 -O2 "$here/audio_recorder.cpp" -I"$src/include" -I"$src/ggml/include" -I"$src/tools/mtmd" \
    -L"$build/bin" -lmtmd -lllama -lggml -lggml-base -Wl,-rpath,"$build/bin" -o "$bin"
fi
lm="$("$root/scripts/fetch_models.sh" smollm2)"
clip="$root/tests/data/audio/test-2-4s.wav"
[ -f "$clip" ] || "$bin" --decode "$models/mmproj-qwen2a-f16.gguf" "$lm" "$src/tools/mtmd/test-2.mp3" 4 "$clip"
out="$root/tests/data/golden/audio"
mkdir -p "$out"
long="$HOME/.cache/zerfoo/speech-data/two-minutes.wav"
for k in ultravox qwen2a voxtral; do
  for t in f16 q8_0; do
    f="$models/mmproj-$k-$t.gguf"
    sha=$(cat "$f.sha256")
    "$bin" "$f" "$lm" "$sha" "$clip" > "$out/$k-$t.json.tmp" && mv "$out/$k-$t.json.tmp" "$out/$k-$t.json"
    "$bin" "$f" "$lm" "$sha" "$clip" --lm > "$out/$k-$t-lm.json.tmp" && mv "$out/$k-$t-lm.json.tmp" "$out/$k-$t-lm.json"
    echo "$out/$k-$t.json $out/$k-$t-lm.json"
  done
  if [ "$k" = qwen2a ] && [ -f "$long" ]; then
    f="$models/mmproj-$k-f16.gguf"
    "$bin" "$f" "$lm" "$(cat "$f.sha256")" "$long" > "$out/$k-f16-long.json.tmp" && mv "$out/$k-f16-long.json.tmp" "$out/$k-f16-long.json"
  fi
done
# Gemma 4's audio tower with the synthesized Gemma 4 (the vision fixture writes it).
vm="$(dirname "$models")"
[ -f "$vm/gemma4-f32.gguf" ] || "$root/tests/vision/make_models.sh" "$vm"
synth="$build/gemma4a-synth.wav"
# The test's SyntheticClip (audio_projector_test.cpp): integers only, the same samples there.
python3 - "$synth" <<'PY'
import struct, sys
n, phase, x, s = 16000 * 31 + 321, 0, 12345, []
for i in range(n):
    phase = (phase + 300 + i // 1000) % 65536
    tri = abs(phase - 32768) - 16384
    x = (1103515245 * x + 12345) % 2147483648
    s.append(tri + (x >> 16) % 4096 - 2048)
data = struct.pack("<%dh" % n, *s)
hdr = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16)
open(sys.argv[1], "wb").write(hdr + b"data" + struct.pack("<I", len(data)) + data)
PY
for t in f32 f16 q8_0; do
  f="$models/mmproj-gemma4a-$t.gguf"
  sha=$(cat "$f.sha256")
  "$bin" "$f" "$vm/gemma4-f32.gguf" "$sha" "$clip" > "$out/gemma4a-$t.json.tmp" && mv "$out/gemma4a-$t.json.tmp" "$out/gemma4a-$t.json"
  if [ "$t" != f32 ]; then
    "$bin" "$f" "$vm/gemma4-f32.gguf" "$sha" "$clip" --lm-gemma4 > "$out/gemma4a-$t-lm.json.tmp" && mv "$out/gemma4a-$t-lm.json.tmp" "$out/gemma4a-$t-lm.json"
  fi
  echo "$out/gemma4a-$t.json"
done
f="$models/mmproj-gemma4a-f16.gguf"
"$bin" "$f" "$vm/gemma4-f32.gguf" "$(cat "$f.sha256")" "$synth" > "$out/gemma4a-f16-synth.json.tmp" && mv "$out/gemma4a-f16-synth.json.tmp" "$out/gemma4a-f16-synth.json"
