#!/usr/bin/env bash
# aarch64 work per token, counted under qemu-user (no ARM machine has run this project, so this
# compares by guest instructions executed, not by time): SmolLM2 greedy generation, one thread,
#   zerfoo on qemu's default CPU model (ARMv8.2 dot product: the SDOT matmul kernels) and on a
#     Cortex-A53 model (no dot product: the same kernels on baseline NEON);
#   llama.cpp (llama-completion from the pinned llama-cpp-python sdist, cross-built static by
#     scripts/reference/build_llama_cpp.sh aarch64 [ARCH], ~8 min each the first time) for
#     armv8.2-a+dotprod on the default CPU model and for armv8-a on the Cortex-A53 model, same
#     file, prompts and token counts.
#   decode:  instructions of a 36-token generation minus a 4-token one, / 32
#   prefill: instructions of a 70-token prompt minus a 1-token prompt (1 token generated), / 69
# Usage: bench/aarch64_insns.sh [MODEL.gguf]   (default: SmolLM2 from scripts/fetch_models.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build_aarch64.sh zerfoo_cli >/dev/null
model="${1:-$(scripts/fetch_models.sh smollm2)}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cc -shared -fPIC -O2 -Wall -Wextra bench/qemu_insn_plugin.c -o "$tmp/insn.so"

long="$(python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog.'] * 7), end='')")"
insns() {  # ENGINE CPU KERNELS PROMPT N_GEN (llama.cpp's KERNELS: the -march it was built for)
  local cmd
  if [ "$1" = zerfoo ]; then
    cmd=(build-test-aarch64/zerfoo generate -m "$model" -p "$4" -n "$5" --temp 0 --ignore-eos -t 1)
  else
    cmd=("$(scripts/reference/build_llama_cpp.sh aarch64 "$3")/bin/llama-completion" -m "$model" -p "$4" -n "$5"
      --temp 0 --ignore-eos -t 1 -no-cnv --no-warmup)
  fi
  qemu-aarch64 -cpu "$2" -L /usr/aarch64-linux-gnu -plugin "$tmp/insn.so" -d plugin "${cmd[@]}" 2>&1 >/dev/null |
    sed -n 's/^insns: //p'
}
printf '| engine | qemu CPU model | kernels | decode M insns/token | prefill M insns/token |\n'
printf '| --- | --- | --- | ---: | ---: |\n'
for run in zerfoo:max:neon-dotprod llama.cpp:max:armv8.2-a+dotprod zerfoo:cortex-a53:neon \
  llama.cpp:cortex-a53:armv8-a; do
  IFS=: read -r engine cpu kernels <<<"$run"
  d4="$(insns "$engine" "$cpu" "$kernels" "The capital of France is" 4)"
  d36="$(insns "$engine" "$cpu" "$kernels" "The capital of France is" 36)"
  p1="$(insns "$engine" "$cpu" "$kernels" "Hi" 1)"
  p70="$(insns "$engine" "$cpu" "$kernels" "$long" 1)"
  python3 -c "import sys; a=sys.argv; d4,d36,p1,p70=map(int,a[4:]); print(f'| {a[1]} | {a[2]} | {a[3]} | {(d36-d4)/32e6:.1f} | {(p70-p1)/69e6:.1f} |')" \
    "$engine" "$cpu" "$kernels" "$d4" "$d36" "$p1" "$p70"
done
