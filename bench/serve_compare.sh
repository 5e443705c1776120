#!/usr/bin/env bash
# `zerfoo serve` against llama-server (built from the same llama-cpp-python sdist as the other
# reference tools, by scripts/reference/build_llama_cpp.sh server) on the real models: for each
# model, bench/serve_bench.py runs the same streaming load (greedy, ignore_eos, fixed max_tokens)
# on both servers at 1, 4, 8, 16 concurrent streams, alternating the servers --rounds times and
# keeping the best run per level, and prints the tables with the zerfoo / llama-server ratios.
#
#   bench/serve_compare.sh                       # -t 2, SmolLM2 and Gemma 3, 2 rounds
#   bench/serve_compare.sh -t 1 -r 3 smollm2
#   ZERFOO_CLI=build/zerfoo SERVE_BENCH_ARGS="--tokens 64 --requests 2" bench/serve_compare.sh
#
# Results (JSON) go to build/serve_bench/<model>-t<threads>.json; `bench/serve_bench.py --compare
# FILE...` reprints them, keeping the best run per level over several files. Needs a Release
# build of the CLI (build/zerfoo). Not a test: minutes per model on two cores, and a shared or
# loaded machine moves the numbers a lot (llama.cpp's 2-thread decode collapses when another
# process holds a core: check `uptime` first).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
threads=2 rounds=2
while getopts "t:r:" opt; do
  case "$opt" in
    t) threads="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(smollm2 gemma3)
cli="${ZERFOO_CLI:-$root/build/zerfoo}"
[ -x "$cli" ] || { echo "no $cli: build the CLI first (cmake --build build --target zerfoo)" >&2; exit 1; }
llama_server="$("$root/scripts/reference/build_llama_cpp.sh" server)/bin/llama-server"
out="$root/build/serve_bench"
mkdir -p "$out"
echo "# $(lscpu | grep 'Model name' | sed 's/.*: *//'), $(nproc) CPUs; $(uptime)"
for m in "${models[@]}"; do
  model="$("$root/scripts/fetch_models.sh" "$m")"
  echo "## $m, threads $threads"
  # shellcheck disable=SC2086
  python3 "$root/bench/serve_bench.py" --zerfoo "$cli" --llama-server "$llama_server" -m "$model" \
    --threads "$threads" --rounds "$rounds" --json-out "$out/$m-t$threads.json" ${SERVE_BENCH_ARGS:-}
done
