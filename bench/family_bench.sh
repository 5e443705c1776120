#!/usr/bin/env bash
# Speed on 1B-class synthesized models of three families, side by side with llama.cpp
# (bench/compare_llama_cpp.sh): a dense Qwen3 in Qwen3-1.7B's shape and a Qwen3-MoE with 8
# experts of which 2 are used per token, and a Qwen 3.5 (gated DeltaNet hybrid) in
# Qwen3.5-0.8B's shape, all in the Q4_K_M mix (scripts/synth_families.py,
# BENCH). Random weights: speed only, the math is checked by tests/family.
#   bench/family_bench.sh [compare_llama_cpp.sh options]
#   bench/family_bench.sh --gpt-oss [compare_llama_cpp.sh options]
#   bench/family_bench.sh --hybrid [compare_llama_cpp.sh options]
# --gpt-oss benchmarks a gpt-oss in gpt-oss-20b's shape instead (MXFP4 experts, the rest Q8_0;
# ~11.6 GB on disk: needs that much free space and, for zerfoo's packed copies, RAM).
# --hybrid benchmarks the recurrent hybrids instead: Qwen 3.5 files in Qwen3.5-0.8B's and
# Qwen3.5-4B's shapes (gated DeltaNet; the 4B one ~2.6 GB) and a Granite 4.0 H in a 1B-class
# shape (Mamba-2), all Q4_K_M.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${ZERFOO_BENCH_MODELS:-$HOME/.cache/zerfoo/bench-models}"
if [ "${1:-}" = "--gpt-oss" ]; then
  shift
  "$root/tests/family/make_models.sh" "$out" --only bench-gpt-oss-20b --quants q4 >&2
  exec "$root/bench/compare_llama_cpp.sh" -m "$out/bench-gpt-oss-20b-mxfp4.gguf" "$@"
fi
if [ "${1:-}" = "--hybrid" ]; then
  shift
  "$root/tests/family/make_models.sh" "$out" --only bench-qwen35-0.8b,bench-granitehybrid-1b,bench-qwen35-4b --quants q4 >&2
  exec "$root/bench/compare_llama_cpp.sh" \
    -m "$out/bench-qwen35-0.8b-q4.gguf,$out/bench-granitehybrid-1b-q4.gguf,$out/bench-qwen35-4b-q4.gguf" "$@"
fi
"$root/tests/family/make_models.sh" "$out" --only bench-qwen3-1.7b,bench-qwen3moe-8x2,bench-qwen35-0.8b --quants q4 >&2
exec "$root/bench/compare_llama_cpp.sh" \
  -m "$out/bench-qwen3-1.7b-q4.gguf,$out/bench-qwen3moe-8x2-q4.gguf,$out/bench-qwen35-0.8b-q4.gguf" "$@"
