#!/usr/bin/env bash
# On a GPU machine: which model families run on the CUDA engine and which it refuses (naming the
# missing op; --device auto then runs them on the CPU). Writes the family files
# (scripts/synth_models.py --families, one quant variant) from llama.cpp's vocabulary files, then
# per file prints one line:
#   FAMILY  engine=cuda|cpu  same|differs  [the refusal's reason]
# same/differs compares 24 greedy tokens with the CPU engine's. It is information, not the
# verdict: random-weight family files have flat logits with near-ties (on the CPU alone an F32
# instead of F16 KV cache moves them by 1.5-3% of their range and can flip a token), so greedy
# texts may part. The verdict on correctness is zerfoo_gpu_tests' op-by-op check over the same
# files (ZF_GPU_FAMILY_MODELS=OUT_DIR; scripts/gpu_test.sh runs both).
#   scripts/gpu_families.sh VOCAB_DIR OUT_DIR [--quants q4] [--only a,b,...]
# VOCAB_DIR holds ggml-vocab-*.gguf (or a vocab.tar.xz of them). gemma2 is left out unless its
# tokenizer source (--gemma-vocab of synth_models.py) is given through ZF_GEMMA_VOCAB.
# Exit status: 1 when a family failed to load or generate.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
vocab="${1:?usage: gpu_families.sh VOCAB_DIR OUT_DIR [--quants Q] [--only NAMES]}"
out="${2:?usage: gpu_families.sh VOCAB_DIR OUT_DIR [--quants Q] [--only NAMES]}"
shift 2
quants=q4
only=llama,llama31,mixtral,qwen2,qwen3,qwen3moe,phi3,smollm3,granite,gemma4,gemma4moe,olmo2,gpt-oss,lfm2,lfm2moe,granitehybrid,granitehybridmoe,qwen35,qwen35moe
while [ $# -gt 0 ]; do
  case "$1" in
    --quants) quants="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    *) echo "gpu_families.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin="$root/gpu-bundle/bin"; [ -d "$bin" ] || bin="$root/build"
export PYTHONPATH="$root/gpu-bundle/py${PYTHONPATH:+:$PYTHONPATH}" ZF_KERNELS_PATH="$bin"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -f "$vocab/vocab.tar.xz" ]; then
  mkdir -p "$out/vocab" && tar xJf "$vocab/vocab.tar.xz" -C "$out/vocab" && vocab="$out/vocab"
fi
gemma=()
[ -n "${ZF_GEMMA_VOCAB:-}" ] && gemma=(--gemma-vocab "$ZF_GEMMA_VOCAB")
python3 "$root/scripts/synth_models.py" --families "$out" --only "$only" --quants "$quants" \
  --vocab-dir "$vocab" "${gemma[@]}" >/dev/null

answer() {  # answer FILE DEVICE -> the greedy text as JSON on stdout, the log in $out/log
  "$bin/zerfoo" generate -m "$1" -p "The capital of France is" -n 24 --temp 0 --ignore-eos \
    --device "$2" --json -v 2>"$out/log" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["text"]))'
}
bad=0
for f in "$out"/*-"$quants"*.gguf; do
  name="$(basename "$f" .gguf)"
  cpu="$(answer "$f" cpu)"
  gpu="$(answer "$f" auto)" || { echo "$name  FAILED: $(tail -3 "$out/log" | tr '\n' ' ')"; bad=1; continue; }
  engine=cpu; grep -q "using the CUDA engine" "$out/log" && engine=cuda
  why="$(grep -o "cannot run .*" "$out/log" | head -1 || true)"
  if [ "$cpu" = "$gpu" ]; then same=same; else same=differs; fi
  printf '%-22s engine=%-4s %-9s %s\n' "$name" "$engine" "$same" "$why"
  [ "$same" = same ] || printf '    cpu:  %s\n    cuda: %s\n' "$cpu" "$gpu"
done
exit "$bad"
