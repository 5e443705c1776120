#!/usr/bin/env bash
# Writes the synthesized audio projector files of the audio tests (scripts/synth_audio_mmproj.py:
# ultravox, qwen2a, voxtral in F16 and Q8_0) into OUT_DIR with the pinned numpy/gguf of
# scripts/requirements-synth.txt (scripts/synth_pyenv.sh). Run by ctest as the fixture
# audio.models (with vision.models: the fixtures vision_models and capi_models); OUT_DIR/.stamp
# skips an unchanged generator; each file's sha256 is written beside it (FILE.sha256).
#   tests/vision/make_audio_models.sh OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: make_audio_models.sh OUT_DIR}"
pydir="$("$root/scripts/synth_pyenv.sh")"
export PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}"
stamp="$( (cat "$root/scripts/synth_audio_mmproj.py" "$root/scripts/requirements-synth.txt") | sha256sum | cut -c1-32)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  echo "make_audio_models: $out is up to date"
  exit 0
fi
rm -f "$out/.stamp"
"${PYTHON:-python3}" "$root/scripts/synth_audio_mmproj.py" "$out"
# The sha256 beside each file: the tests compare it with the golden's.
for f in "$out"/*.gguf; do sha256sum "$f" | cut -d' ' -f1 > "$f.sha256"; done
echo "$stamp" > "$out/.stamp"
