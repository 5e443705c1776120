#!/usr/bin/env bash
# aarch64 work per token, counted under qemu-user (no ARM machine has run this project, so this
# compares the kernels by guest instructions executed, not by time): SmolLM2 greedy generation
# on qemu's default CPU model (ARMv8.2 dot product: the NEON matmul kernels) and on a Cortex-A53
# model (no dot product: the scalar matmuls), one thread.
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
insns() {  # CPU PROMPT N_GEN
  qemu-aarch64 -cpu "$1" -L /usr/aarch64-linux-gnu -plugin "$tmp/insn.so" -d plugin build-test-aarch64/zerfoo \
    generate -m "$model" -p "$2" -n "$3" --temp 0 --ignore-eos -t 1 2>&1 >/dev/null | sed -n 's/^insns: //p'
}
printf '| qemu CPU model | kernels | decode M insns/token | prefill M insns/token |\n| --- | --- | ---: | ---: |\n'
for run in max:neon-dotprod cortex-a53:neon; do
  cpu="${run%%:*}"
  d4="$(insns "$cpu" "The capital of France is" 4)"
  d36="$(insns "$cpu" "The capital of France is" 36)"
  p1="$(insns "$cpu" "Hi" 1)"
  p70="$(insns "$cpu" "$long" 1)"
  python3 -c "import sys; d4,d36,p1,p70=map(int,sys.argv[3:]); print(f'| {sys.argv[1]} | {sys.argv[2]} | {(d36-d4)/32e6:.1f} | {(p70-p1)/69e6:.1f} |')" \
    "$cpu" "${run#*:}" "$d4" "$d36" "$p1" "$p70"
done
