#!/usr/bin/env bash
# GPU decode benchmark for a GPU session (never run yet: written on a machine without a GPU).
# zerfoo (CUDA engine) vs llama.cpp (CUDA) on models synthesized with random weights in the
# Gemma-3-270M and Gemma-3-1B Q4_K_M shapes and quant mixes (decode speed does not depend on the
# weights' values), plus a device copy-bandwidth probe; prints one Markdown table.
#   bench/gpu_bench.sh [-n 128] [-p 512] [-r 5]
# Needs: the kernel library and CLI (build/ or gpu-bundle/bin from scripts/gpu_bundle.sh),
# python3 with numpy (+ gguf, bundled). llama.cpp with CUDA: $LLAMA_BENCH (a CUDA llama-bench)
# or, when nvcc and cuBLAS are installed and PyPI is reachable, built here from the
# llama-cpp-python sdist (as scripts/reference/build_llama_cpp.sh does for the CPU) with
# CMAKE_CUDA_ARCHITECTURES=90. Without either, the llama.cpp rows are left out (said so).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
n_gen=128; n_prompt=512; reps=5
while getopts "n:p:r:" o; do
  case "$o" in n) n_gen=$OPTARG ;; p) n_prompt=$OPTARG ;; r) reps=$OPTARG ;; *) exit 2 ;; esac
done
bin="$root/gpu-bundle/bin"; [ -d "$bin" ] || bin="$root/build"
export PYTHONPATH="$root/gpu-bundle/py${PYTHONPATH:+:$PYTHONPATH}" ZF_KERNELS_PATH="$bin" LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
models="${ZF_GPU_MODELS:-$root/gpu-models}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv || true
python3 "$root/scripts/synth_models.py" "$models" --models gemma3-270m,gemma3-1b

cc -O2 "$root/bench/gpu_membw.c" -I"$root/kernels" -ldl -o "$tmp/gpu_membw"
bw="$("$tmp/gpu_membw" "$bin/libzerfoo_kernels.so" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gbps_read_plus_write"])')"
echo "device copy bandwidth (read+write): $bw GB/s"

llama="${LLAMA_BENCH:-}"
if [ -z "$llama" ] && command -v nvcc >/dev/null; then
  ref="${ZERFOO_REFERENCE:-$HOME/.cache/zerfoo/reference}"
  version=0.3.36
  src="$ref/sdist/llama_cpp_python-$version/vendor/llama.cpp"
  if [ -d "$src" ] || python3 -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$ref/sdist"; then
    [ -d "$src" ] || tar xzf "$ref/sdist/llama_cpp_python-$version.tar.gz" -C "$ref/sdist"
    cmake -S "$src" -B "$ref/build-cuda" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_SERVER=OFF >/dev/null && cmake --build "$ref/build-cuda" --target llama-bench >/dev/null &&
      llama="$ref/build-cuda/bin/llama-bench"
  fi
fi
[ -n "$llama" ] || echo "llama.cpp CUDA llama-bench not available (set LLAMA_BENCH): its rows are left out"

: > "$tmp/rows.jsonl"
for m in "$models"/gemma3-270m-q4_k_m.synth.gguf "$models"/gemma3-1b-q4_k_m.synth.gguf; do
  for test in "-p $n_prompt -n 0" "-p 0 -n $n_gen"; do
    # shellcheck disable=SC2086
    "$bin/zerfoo" bench -m "$m" -dev cuda $test -r "$reps" -o json \
      | python3 -c 'import json,sys; [print(json.dumps({"tool":"zerfoo",**r})) for r in json.load(sys.stdin)]' >> "$tmp/rows.jsonl"
    if [ -n "$llama" ]; then
      # shellcheck disable=SC2086
      "$llama" -m "$m" -ngl 99 $test -r "$reps" -o json 2>/dev/null \
        | python3 -c 'import json,sys; [print(json.dumps({"tool":"llama.cpp",**r})) for r in json.load(sys.stdin)]' >> "$tmp/rows.jsonl"
    fi
  done
done

BW="$bw" python3 - "$tmp/rows.jsonl" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bw = float(os.environ["BW"]) / 2  # one direction: weights are only read
print("\n| model | test | tool | tok/s | ± | zerfoo / llama.cpp | % of read bandwidth |")
print("|---|---|---|---:|---:|---:|---:|")
by = {}
for r in rows:
    test = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
    by[(os.path.basename(r["model_filename"]), test, r["tool"])] = r
for (m, test, tool), r in sorted(by.items()):
    other = by.get((m, test, "llama.cpp"))
    ratio = f"{r['avg_ts'] / other['avg_ts']:.2f}" if tool == "zerfoo" and other else ""
    share = f"{100 * r['model_size'] * r['avg_ts'] / (bw * 1e9):.0f}%" if test.startswith("tg") else ""
    print(f"| {m} | {test} | {tool} | {r['avg_ts']:.1f} | {r['stddev_ts']:.1f} | {ratio} | {share} |")
PY
