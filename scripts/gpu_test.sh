#!/usr/bin/env bash
# The GPU checks, on a machine with an NVIDIA GPU (driver >= 580) and no network:
#   1. synthesizes random-weight models in the real shapes/quant mixes (scripts/synth_models.py);
#   2. with ZF_GPU_VOCAB=DIR (llama.cpp's ggml-vocab-*.gguf, or a vocab.tar.xz of them): the
#      model-family files too, and which of them the CUDA engine runs (scripts/gpu_families.sh);
#   3. runs tests/gpu: every CUDA op vs the CPU engine on random inputs, every op of a forward
#      pass of each model (families included) vs the CPU engine on the same inputs, whole-model
#      parity GPU vs CPU;
#   4. a short greedy generation on the GPU with ZF_DEBUG_GPU=1 (graph capture coverage).
# Uses gpu-bundle/ (scripts/gpu_bundle.sh, made on the dev machine) when present, else build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=gpu-bundle/bin
[ -d "$bin" ] || bin=build
models="${ZF_GPU_MODELS:-$PWD/gpu-models}"
export PYTHONPATH="$PWD/gpu-bundle/py${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
python3 scripts/synth_models.py "$models" --models "${ZF_GPU_TEST_MODELS:-gemma3-270m,smollm2-135m}"
export ZF_KERNELS_PATH="$PWD/$bin" ZF_GPU_MODELS="$models" LD_LIBRARY_PATH="$PWD/$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -n "${ZF_GPU_VOCAB:-}" ]; then
  export ZF_GPU_FAMILY_MODELS="${ZF_GPU_FAMILY_MODELS:-$PWD/gpu-models/families}"
  scripts/gpu_families.sh "$ZF_GPU_VOCAB" "$ZF_GPU_FAMILY_MODELS"
fi
"$bin/zerfoo_gpu_tests" --gtest_brief=0 && rc=0 || rc=$?
[ "$rc" = 77 ] && { echo "GPU tests skipped: see the reason above"; exit 77; }
for m in "$models"/*.synth.gguf; do
  ZF_DEBUG_GPU=1 "$bin/zerfoo" generate -m "$m" --device cuda -n 32 --temp 0 -p "Hello" -v 2>&1 | grep -v "capture op" | tail -4
done
exit "$rc"
