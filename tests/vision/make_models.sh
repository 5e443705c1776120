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
# gemma4-f32, lfm2-f32, qwen2vl-q8_0 and qwen3vl-q8_0 are the family fixture's files (the same
# generator, seeded by file name: byte-identical): hard-linked (or copied) from FAMILY_DIR
# (tests/family/make_models.sh's OUT_DIR) or the family fixture's cache when a file there has the
# sha256 of its golden (tests/data/golden/families/NAME.json), else synthesized here.
#   tests/vision/make_models.sh OUT_DIR [FAMILY_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: make_models.sh OUT_DIR [FAMILY_DIR]}"
family="${2:-}"
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
# take_family NAME: links (or copies) NAME.gguf from the family fixture's files when one has its
# golden's sha256; false when none does. A shared lock waits for a family set being written.
family_cache="${ZF_FAMILY_MODELS_CACHE:-$HOME/.cache/zerfoo/family-models}"
take_family() {
  local want src
  want="$(sed -n 's/^ *"sha256": "\([0-9a-f]*\)".*/\1/p' "$root/tests/data/golden/families/$1.json")"
  [ -n "$want" ] || return 1
  for src in ${family:+"$family/$1.gguf"} "$family_cache"/*/"$1.gguf"; do
    [ -f "$src" ] || continue
    [ "$(sha256sum "$src" | cut -d' ' -f1)" = "$want" ] || continue
    ln -f "$src" "$fresh/$1.gguf" 2>/dev/null || cp "$src" "$fresh/$1.gguf"
    echo "$want" > "$fresh/$1.gguf.sha256"
    echo "make_models: $1.gguf from $src"
    return 0
  done
  return 1
}
# synth_family QUANT NAME...: the family fixture's NAME-QUANT.gguf files, taken or synthesized.
synth_family() {
  local quant="$1" name missing=()
  shift
  for name in "$@"; do
    rm -f "$fresh/$name-$quant.gguf"  # never write through a link into the family's files
    if [ -d "$family_cache" ]; then
      { flock -s 8; take_family "$name-$quant"; } 8>"$family_cache/.lock" && continue
    elif [ -n "$family" ]; then
      take_family "$name-$quant" && continue
    fi
    missing+=("$name")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  "${PYTHON:-python3}" "$root/scripts/synth_models.py" --families "$fresh" --only "$(IFS=,; echo "${missing[*]}")" \
    --quants "$quant" --vocab-dir "$("$root/scripts/fetch_vocab.sh")"
}
# write_set DIR: the whole set into the empty DIR.
write_set() {
  fresh="$1"
  "${PYTHON:-python3}" "$root/scripts/synth_mmproj.py" "$fresh" ${lm[@]+"${lm[@]}"}
  synth_family f32 gemma4 lfm2
  # lfm2-vl.gguf: the synthesized LFM2 with LFM2-VL's image tokens (the lfm2 projector's LM).
  "${PYTHON:-python3}" "$root/scripts/synth_mmproj.py" "$fresh" --lfm2-lm "$fresh/lfm2-f32.gguf"
  # qwen2vl-q8_0.gguf / qwen3vl-q8_0.gguf: the qwen2.5vl_merger / qwen3vl_merger projectors'
  # language models (width 256; qwen3vl with one deepstack layer).
  synth_family q8_0 qwen2vl qwen3vl
  # qwen2vl-vl.gguf / qwen3vl-vl.gguf: those models with Qwen-VL's vision tokens
  # (<|vision_start|>, <|vision_end|>, ...), which libmtmd places around an image (the placement
  # goldens' LMs).
  "${PYTHON:-python3}" "$root/scripts/synth_mmproj.py" "$fresh" --qwen-vl-lm "$fresh/qwen2vl-q8_0.gguf" qwen2vl-vl.gguf
  "${PYTHON:-python3}" "$root/scripts/synth_mmproj.py" "$fresh" --qwen-vl-lm "$fresh/qwen3vl-q8_0.gguf" qwen3vl-vl.gguf
  # qwen35-vl.gguf: the synthesized qwen35 (DeltaNet and gated attention layers, interleaved
  # M-RoPE sections, width 128) with those tokens: the language model of mmproj-qwen35-* (Qwen
  # 3.5's images).
  synth_family q8_0 qwen35
  "${PYTHON:-python3}" "$root/scripts/synth_mmproj.py" "$fresh" --qwen-vl-lm "$fresh/qwen35-q8_0.gguf" qwen35-vl.gguf
  # The sha256 beside each file: the tests compare it with the golden's (a changed generator or
  # package shows as a clear mismatch, not as drifting numbers).
  # (A file taken from the family fixture has its sha256 already.)
  for f in "$fresh"/*.gguf; do [ -f "$f.sha256" ] || sha256sum "$f" | cut -d' ' -f1 > "$f.sha256"; done
}
# The set (~45 s of CPU, 1.3 GB) is written once per generator version into
# ~/.cache/zerfoo/vision-models/<stamp> and hard-linked into OUT_DIR (scripts/cached_set.sh).
# shellcheck source=scripts/cached_set.sh
. "$root/scripts/cached_set.sh"
cached_set vision-models "$stamp" "$out" write_set
