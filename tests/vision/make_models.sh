#!/usr/bin/env bash
# Writes the synthesized projector files of the vision tests (scripts/synth_mmproj.py: Gemma 3,
# Idefics3) and, when SmolLM2-135M is at hand (scripts/fetch_models.sh smollm2; ZF_MODEL_SMOLLM2
# or ZERFOO_MODELS as the tests find it), smollm2-vlm.gguf (its vocabulary with SmolVLM's image
# tokens), and gemma4-f32.gguf (the family tests' synthesized Gemma 4, scripts/synth_families.py:
# the gemma4v projector's language model, width 256) and lfm2-f32.gguf (the synthesized LFM2:
# embedding rows through short-convolution layers, tests/capi/vision_recurrent_test.cpp) into
# OUT_DIR with the pinned numpy/gguf of scripts/requirements-synth.txt (scripts/synth_pyenv.sh).
# Run by ctest as the fixture vision.models; OUT_DIR/.stamp skips an unchanged generator; each
# file's sha256 is written beside it (FILE.sha256).
#   tests/vision/make_models.sh OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: make_models.sh OUT_DIR}"
pydir="$("$root/scripts/synth_pyenv.sh")"
export PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}"
smol="${ZF_MODEL_SMOLLM2:-${ZERFOO_MODELS:-$HOME/.cache/zerfoo/models}/smollm2-135m-instruct-q4_1.gguf}"
lm=()
[ -f "$smol" ] && lm=(--lm "$smol")
stamp="$( (cat "$0" "$root/scripts/synth_mmproj.py" "$root/scripts/synth_audio_mmproj.py" "$root/scripts/synth_families.py" "$root/scripts/requirements-synth.txt"; echo "${lm[*]}") | sha256sum | cut -c1-32)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  echo "make_models: $out is up to date"
  exit 0
fi
rm -f "$out/.stamp"
"${PYTHON:-python3}" "$root/scripts/synth_mmproj.py" "$out" ${lm[@]+"${lm[@]}"}
"${PYTHON:-python3}" "$root/scripts/synth_models.py" --families "$out" --only gemma4,lfm2 --quants f32 \
  --vocab-dir "$("$root/scripts/fetch_vocab.sh")"
# lfm2-vl.gguf: the synthesized LFM2 with LFM2-VL's image tokens (the lfm2 projector's LM).
"${PYTHON:-python3}" "$root/scripts/synth_mmproj.py" "$out" --lfm2-lm "$out/lfm2-f32.gguf"
# qwen2vl-q8_0.gguf / qwen3vl-q8_0.gguf: the qwen2.5vl_merger / qwen3vl_merger projectors' language
# models (width 256; qwen3vl with one deepstack layer).
"${PYTHON:-python3}" "$root/scripts/synth_models.py" --families "$out" --only qwen2vl,qwen3vl --quants q8_0 \
  --vocab-dir "$("$root/scripts/fetch_vocab.sh")"
# qwen2vl-vl.gguf / qwen3vl-vl.gguf: those models with Qwen-VL's vision tokens (<|vision_start|>,
# <|vision_end|>, ...), which libmtmd places around an image (the placement goldens' LMs).
"${PYTHON:-python3}" "$root/scripts/synth_mmproj.py" "$out" --qwen-vl-lm "$out/qwen2vl-q8_0.gguf" qwen2vl-vl.gguf
"${PYTHON:-python3}" "$root/scripts/synth_mmproj.py" "$out" --qwen-vl-lm "$out/qwen3vl-q8_0.gguf" qwen3vl-vl.gguf
# The sha256 beside each file: the tests compare it with the golden's (a changed generator or
# package shows as a clear mismatch, not as drifting numbers).
for f in "$out"/*.gguf; do sha256sum "$f" | cut -d' ' -f1 > "$f.sha256"; done
echo "$stamp" > "$out/.stamp"
