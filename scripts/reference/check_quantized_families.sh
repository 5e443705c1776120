#!/usr/bin/env bash
# Checks zerfoo on family files quantized by the reference's own tool (issue #41): each F32 family
# file (tests/family/make_models.sh) goes through llama.cpp's llama-quantize to each type; then, per
# quantized file, whether zerfoo loads it and how its logits agree with llama.cpp's on that same file
# (family_recorder.cpp with its full-logits dump, quant_compare.cpp through zerfoo's C API: the
# recorder's 32 tokens fed one at a time; per position the cosine of the mean-centred logits over
# the recorder's 512 sampled ids as tests/family measures it, the same over the whole vocabulary, the
# largest absolute logit difference, the spread and top-1 agreement). Not part of the test run.
#
#   scripts/reference/check_quantized_families.sh [MODELS_DIR [OUT_DIR]]
#     MODELS_DIR  the F32 family files (default build/tests/family-models, the ctest fixture's)
#     OUT_DIR     quantized files, recordings, logs and summary.txt (default build/quantized-families)
#   FAMILIES="qwen35moe lfm2"   default: every <family>-f32[-<layout>].gguf in MODELS_DIR
#   TYPES="Q8_0 Q4_K_M Q4_0"    llama-quantize type names (the default)
#   ZF_BUILD=build-test          the zerfoo build with libzerfoo.so (default build)
#   NICE=19                      niceness of the heavy steps (default 10)
#   GREEDY=32                    also compare 32 greedy steps after the 32 prompt tokens (the
#                                reference's argmax fed back; default 0)
#   PREFILL=32                   zerfoo takes the first 32 tokens in one call (its batched prompt
#                                path) and is compared from the last of them on (default 1: every
#                                token alone, every position compared); with GREEDY=32, a generation
#   KEEP_RAW=1                   keep the reference's full logits (OUT_DIR/<family>-<type>.raw)
#
# Prints one line per family and type; a quantization the reference tool refuses is
# "quantize=FAIL" (its log in OUT_DIR), a file the reference refuses to load "ref=REFUSED".
# Builds the reference (build_llama_cpp.sh) and its llama-quantize first if needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
models="${1:-$root/build/tests/family-models}"
out="${2:-$root/build/quantized-families}"
zfbuild="${ZF_BUILD:-$root/build}"
types="${TYPES:-Q8_0 Q4_K_M Q4_0}"
nice="nice -n ${NICE:-10}"
mkdir -p "$out"

build="$($nice "$root/scripts/reference/build_llama_cpp.sh")"
[ -x "$build/bin/llama-quantize" ] || $nice cmake --build "$build" -j"$(nproc)" --target llama-quantize >&2
src="$(ls -d "$(dirname "$build")"/sdist/llama_cpp_python-*/vendor/llama.cpp | head -n1)"
rec="$build/family_recorder"
$nice g++ -std=c++17 -O2 "$root/scripts/reference/family_recorder.cpp" -I"$src/include" -I"$src/ggml/include" \
  -L"$build/bin" -lllama -Wl,-rpath,"$build/bin" -o "$rec"
# The MoE router's logits per layer and position, for telling a near-tie from a real difference
# (not run here: router_recorder FILE.gguf OUT_DIR/<family>-<type>.json; README.md).
$nice g++ -std=c++17 -O2 "$root/scripts/reference/router_recorder.cpp" -I"$src/include" -I"$src/ggml/include" \
  -I"$src/vendor" -L"$build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$build/bin" -o "$build/router_recorder"
cmp="$out/quant_compare"
[ -f "$zfbuild/libzerfoo.so" ] || { echo "no $zfbuild/libzerfoo.so (set ZF_BUILD)" >&2; exit 2; }
json_inc="$src/vendor"  # nlohmann/json.hpp (the system's is used first when installed)
$nice g++ -std=c++17 -O2 "$root/scripts/reference/quant_compare.cpp" -I"$root/include" -I"$json_inc" \
  -L"$zfbuild" -lzerfoo -Wl,-rpath,"$zfbuild" -o "$cmp"

# Every F32 file: <family>-f32.gguf, and the layout copies <family>-f32-<layout>.gguf (checked as
# <family>-<layout>; llama-quantize rewrites their shapes as it writes any file).
if [ -z "${FAMILIES:-}" ]; then
  FAMILIES="$(cd "$models" && ls *-f32.gguf *-f32-*.gguf 2>/dev/null | sed 's/-f32//; s/\.gguf$//' | tr '\n' ' ')"
fi
summary="$out/summary.txt"
: > "$summary"
for fam in $FAMILIES; do
  f32="$models/$fam-f32.gguf"
  [ -f "$f32" ] || f32="$models/${fam%-*}-f32-${fam##*-}.gguf"
  [ -f "$f32" ] || { echo "$fam: no $f32" | tee -a "$summary" >&2; continue; }
  for type in $types; do
    q="$out/$fam-$type.gguf"
    line="$fam $type:"
    if ! $nice "$build/bin/llama-quantize" "$f32" "$q" "$type" 2 > "$out/$fam-$type.quantize.log" 2>&1; then
      echo "$line quantize=FAIL (reference tool; $out/$fam-$type.quantize.log)" | tee -a "$summary"
      rm -f "$q"
      continue
    fi
    rc=0
    FAMILY_RECORDER_GREEDY="${GREEDY:-0}" $nice "$rec" "$q" "$(sha256sum "$q" | cut -d' ' -f1)" "$out/$fam-$type.raw" > "$out/$fam-$type.json" \
      2> "$out/$fam-$type.recorder.log" || rc=$?
    if [ "$rc" = 3 ]; then
      echo "{\"reference_refused\": true}" > "$out/$fam-$type.json"
    elif [ "$rc" != 0 ]; then
      echo "$line recorder=FAIL ($rc; $out/$fam-$type.recorder.log)" | tee -a "$summary"
      continue
    fi
    raw=()
    [ -f "$out/$fam-$type.raw" ] && raw=("$out/$fam-$type.raw")
    res="$($nice "$cmp" "$q" "$out/$fam-$type.json" "${raw[@]}" --prefill "${PREFILL:-1}" 2>&1 | tr '\n' ' ' || true)"
    echo "$line $res" | tee -a "$summary"
    [ -n "${KEEP_RAW:-}" ] || rm -f "$out/$fam-$type.raw"  # 32 x n_vocab floats each
  done
done
echo "summary: $summary" >&2
