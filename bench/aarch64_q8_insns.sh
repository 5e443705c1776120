#!/usr/bin/env bash
# aarch64 work per call of the Q8_0 / Q4_0 dot products and the Q8_0 GEMM (dot_q8_neon.inc),
# counted under qemu-user (no ARM machine has run this project: guest instructions executed,
# not time): bench/q8_dot_insns.cpp linked statically against the cross-built core, run with
# ITERS calls and with none; the difference / ITERS, for the scalar reference (ZF_NO_NEON=1),
# baseline NEON (qemu's cortex-a53 model, no dot product) and the dot-product kernels (its max
# model). Rows of k = 2048; the GEMM is 16 weight rows x 64 tokens.
# Usage: bench/aarch64_q8_insns.sh [ITERS (default 200)]
set -euo pipefail
cd "$(dirname "$0")/.."

iters="${1:-200}"
scripts/build_aarch64.sh zerfoo_core >/dev/null
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cc -shared -fPIC -O2 -Wall -Wextra bench/qemu_insn_plugin.c -o "$tmp/insn.so"
aarch64-linux-gnu-g++ -std=c++17 -O2 -static -Isrc -Iinclude bench/q8_dot_insns.cpp \
  build-test-aarch64/libzerfoo_core.a -lpthread -o "$tmp/drv"
insns() {  # CPU SCALAR(1: ZF_NO_NEON=1) OP ITERS
  local no_neon=(env -u ZF_NO_NEON)
  [ "$2" = 1 ] && no_neon=(env ZF_NO_NEON=1)
  "${no_neon[@]}" qemu-aarch64 -cpu "$1" -L /usr/aarch64-linux-gnu -plugin "$tmp/insn.so" -d plugin \
    "$tmp/drv" "$3" "$4" 2>&1 >/dev/null | sed -n 's/^insns: //p'
}
printf '| kernel | scalar reference | NEON (cortex-a53) | NEON dot product (max) |\n| --- | ---: | ---: | ---: |\n'
for op in vecdot_q8_0 vecdot_q4_0 gemm_q8_0; do
  row="| $op"
  for run in max:1 cortex-a53:0 max:0; do
    IFS=: read -r cpu scalar <<<"$run"
    base="$(insns "$cpu" "$scalar" "$op" 0)"
    full="$(insns "$cpu" "$scalar" "$op" "$iters")"
    row="$row | $(python3 -c "import sys; print(f'{(int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[3]):.0f}')" "$base" "$full" "$iters")"
  done
  echo "$row |"
done
