#!/usr/bin/env bash
# Images against llama.cpp's libmtmd (issue #46): the encode time of one image and the time to
# the first token of a turn holding one 896 x 896 image, zerfoo (bench/vision_bench.cpp through
# the C ABI) and llama-mtmd-cli on the same files and threads, alternating, RUNS times each.
# Files in real shapes, random weights (speed only; the math is checked by tests/vision), written
# by bench/synth_vision_bench.py into $ZERFOO_BENCH_VISION (default ~/.cache/zerfoo/bench/vision)
# and reused: the language models written F16 and quantized to Q4_K_M by the reference's own
# llama-quantize, the projectors F16 (as users get them):
#   gemma3   Gemma 3 4B (2560 wide, 34 layers) + SigLIP-so400m (27 x 1152, 896 px, 256 tokens)
#   qwen25vl Qwen2.5-VL-3B (2048 wide, 36 layers) + its ViT (qwen2.5vl_merger: 32 x 1280,
#            window attention, 1024 tokens for 896 x 896, placed at M-RoPE positions); where
#            zerfoo refuses a pair the table says so and llama.cpp's row still runs
# The picture: the sdist's tools/mtmd/test-1.jpeg resized to 896 x 896 (ImageMagick), else a
# synthetic 896 x 896 PNG. Timings exclude loading on both sides: zerfoo's from the bench's
# clocks; llama.cpp's encode from mtmd-cli's "mtmd batch encoding done in N ms" and its time to
# first token by bench/mtmd_ttft.py (from its "loaded" log line to its first generated text).
# Medians; ratio = llama.cpp / zerfoo (above 1: zerfoo is faster). Run as root it runs the timed
# commands at nice -n -15 (a shared machine).
#   bench/vision_bench.sh [-t THREADS (2)] [-r RUNS (3)] [--only gemma3|qwen25vl]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${ZERFOO_BENCH_VISION:-$HOME/.cache/zerfoo/bench/vision}"
refsrc="${ZERFOO_REFERENCE:-$HOME/.cache/zerfoo/reference}"
refbin="$refsrc/build/bin"
zbench="${ZF_VISION_BENCH:-$root/build-test/bench/zerfoo_vision_bench}"
threads=2 runs=3 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    -t) threads="$2"; shift 2 ;;
    -r) runs="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    *) echo "usage: bench/vision_bench.sh [-t THREADS] [-r RUNS] [--only gemma3|qwen25vl]" >&2; exit 2 ;;
  esac
done
for t in llama-quantize llama-mtmd-cli; do
  [ -x "$refbin/$t" ] || { echo "vision_bench: $refbin/$t is missing: cmake --build $refsrc/build --target $t" >&2; exit 2; }
done
[ -x "$zbench" ] || { echo "vision_bench: $zbench is missing: cmake --build build-test --target zerfoo_vision_bench" >&2; exit 2; }
nice=()
[ "$(id -u)" = 0 ] && nice=(nice -n -15)
mkdir -p "$out"
export PYTHONPATH="$("$root/scripts/synth_pyenv.sh")${PYTHONPATH:+:$PYTHONPATH}"
synth() { "${PYTHON:-python3}" "$root/bench/synth_vision_bench.py" "$@" >&2; }

# An F16 language model quantized to Q4_K_M by llama-quantize; the F16 file is removed.
lm() {  # lm WHAT OUT.gguf VOCAB
  [ -f "$2" ] && return 0
  local f16="${2%.gguf}-f16.gguf"
  [ -f "$f16" ] || synth "$1" "$f16" --vocab "$3"
  "$refbin/llama-quantize" "$f16" "$2.tmp" Q4_K_M "$threads" > "$out/quantize.log" 2>&1 ||
    { tail -5 "$out/quantize.log" >&2; exit 1; }
  mv "$2.tmp" "$2" && rm -f "$f16"
}

image="$out/test-1-896.jpg"
if [ ! -f "$image" ]; then
  src="$(find "$refsrc/sdist" -path '*tools/mtmd/test-1.jpeg' 2>/dev/null | head -1)"
  if [ -z "$src" ] || ! convert "$src" -resize '896x896!' -quality 92 "$image" 2> /dev/null ||
     [ ! -s "$image" ]; then
    rm -f "$image"
    image="$out/synthetic-896.png"
    [ -f "$image" ] || synth image "$image"
  fi
fi

rows=()
if [ "$only" != qwen25vl ]; then
  lm gemma3-4b-lm "$out/gemma3-4b-q4_k_m.gguf" "$("$root/scripts/fetch_models.sh" gemma3)"
  [ -f "$out/mmproj-gemma3-4b-f16.gguf" ] || synth gemma3-4b-mmproj "$out/mmproj-gemma3-4b-f16.gguf"
  rows+=(gemma3)
fi
if [ "$only" != gemma3 ]; then
  lm qwen25vl-3b-lm "$out/qwen25vl-3b-q4_k_m.gguf" "$("$root/scripts/fetch_vocab.sh")/ggml-vocab-qwen2.gguf"
  [ -f "$out/mmproj-qwen25vl-3b-f16.gguf" ] || synth qwen25vl-3b-mmproj "$out/mmproj-qwen25vl-3b-f16.gguf"
  rows+=(qwen25vl)
fi

text="Describe this image in one sentence."
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "nan" || b == "nan" || b == 0) print "-"; else printf "%.2fx", a / b}'; }

declare -A res
for row in "${rows[@]}"; do
  case "$row" in
    gemma3) lmf="$out/gemma3-4b-q4_k_m.gguf" mm="$out/mmproj-gemma3-4b-f16.gguf" tmpl=gemma
      prompt=$'<start_of_turn>user\n<__media__>'"$text"$'<end_of_turn>\n<start_of_turn>model\n'
      label="Gemma 3 4B shape (SigLIP 27 x 1152, 256 tokens)" ;;
    qwen25vl) lmf="$out/qwen25vl-3b-q4_k_m.gguf" mm="$out/mmproj-qwen25vl-3b-f16.gguf" tmpl=chatml
      prompt=$'<|im_start|>user\n<__media__>'"$text"$'<|im_end|>\n<|im_start|>assistant\n'
      label="Qwen2.5-VL-3B shape (ViT 32 x 1280, 1024 tokens)" ;;
  esac
  zf_ok=1
  : > "$out/zf-$row.runs"; : > "$out/ll-$row.runs"
  for i in $(seq "$runs"); do
    if [ "$zf_ok" = 1 ]; then
      if "${nice[@]}" "$zbench" -m "$lmf" --mmproj "$mm" --image "$image" -t "$threads" -p "$prompt" \
           > "$out/zf-$row.json" 2> "$out/zf-$row.err"; then
        python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["encode_ms"], j["ttft_ms"], j["prompt_tokens"])' \
          "$out/zf-$row.json" >> "$out/zf-$row.runs"
      else
        zf_ok=0
        res[$row.zf_why]="$(grep -m1 'zerfoo_vision_bench:' "$out/zf-$row.err" | cut -c1-200)"
        echo "vision_bench: zerfoo cannot run $row: ${res[$row.zf_why]}" >&2
      fi
    fi
    # encode ms, time to first token ms (bench/mtmd_ttft.py)
    "${nice[@]}" python3 "$root/bench/mtmd_ttft.py" "$out/ll-$row.log" -- "$refbin/llama-mtmd-cli" -m "$lmf" \
      --mmproj "$mm" --image "$image" -p "$text" --chat-template "$tmpl" -n 1 --temp 0 -t "$threads" -c 4096 \
      >> "$out/ll-$row.runs" || { tail -5 "$out/ll-$row.log" >&2; exit 1; }
    echo "vision_bench: $row run $i: zerfoo $(tail -1 "$out/zf-$row.runs" 2>/dev/null | cut -d' ' -f1-2)" \
      "| llama.cpp $(tail -1 "$out/ll-$row.runs") (encode, TTFT ms)" >&2
  done
  res[$row.label]="$label"
  res[$row.zf_enc]="$(cut -d' ' -f1 "$out/zf-$row.runs" | median)"
  res[$row.zf_ttft]="$(cut -d' ' -f2 "$out/zf-$row.runs" | median)"
  res[$row.ll_enc]="$(cut -d' ' -f1 "$out/ll-$row.runs" | median)"
  res[$row.ll_ttft]="$(cut -d' ' -f2 "$out/ll-$row.runs" | median)"
  res[$row.zf_ntok]="$(tail -1 "$out/zf-$row.runs" 2>/dev/null | cut -d' ' -f3)"
done

echo
echo "one 896 x 896 image, -t $threads, median of $runs alternating runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-50s | %-22s | %-22s | %-22s | %-8s | %-22s | %-22s | %-8s |\n' \
  "files (random weights, LM Q4_K_M, projector F16)" "prompt tokens (zf)" "zerfoo encode ms" "llama.cpp encode ms" \
  "ratio" "zerfoo TTFT ms" "llama.cpp TTFT ms" "ratio"
printf '|%s|%s|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..52})" "$(printf -- '-%.0s' {1..24})" \
  "$(printf -- '-%.0s' {1..24})" "$(printf -- '-%.0s' {1..24})" "$(printf -- '-%.0s' {1..10})" \
  "$(printf -- '-%.0s' {1..24})" "$(printf -- '-%.0s' {1..24})" "$(printf -- '-%.0s' {1..10})"
for row in "${rows[@]}"; do
  if [ -n "${res[$row.zf_why]:-}" ]; then
    printf '| %-50s | %-22s | %-22s | %-22s | %-8s | %-22s | %-22s | %-8s |\n' "${res[$row.label]}" \
      "-" "not run (see below)" "${res[$row.ll_enc]}" "-" "not run" "${res[$row.ll_ttft]}" "-"
  else
    printf '| %-50s | %-22s | %-22s | %-22s | %-8s | %-22s | %-22s | %-8s |\n' "${res[$row.label]}" \
      "${res[$row.zf_ntok]}" "${res[$row.zf_enc]}" "${res[$row.ll_enc]}" \
      "$(ratio "${res[$row.ll_enc]}" "${res[$row.zf_enc]}")" "${res[$row.zf_ttft]}" "${res[$row.ll_ttft]}" \
      "$(ratio "${res[$row.ll_ttft]}" "${res[$row.zf_ttft]}")"
  fi
done
for row in "${rows[@]}"; do
  [ -n "${res[$row.zf_why]:-}" ] && echo "$row: zerfoo did not run: ${res[$row.zf_why]}"
done
exit 0
