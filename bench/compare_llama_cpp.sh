#!/usr/bin/env bash
# Side-by-side CPU benchmark: llama.cpp's llama-bench and `zerfoo bench` on the same GGUF
# files, threads and prompt sizes, alternating tool by tool for each configuration, plus the
# machine's measured read bandwidth. Prints one Markdown table with ratios (zerfoo / llama.cpp)
# and, for decode, the share of the bandwidth limit reached (weights bytes/token x tok/s / BW).
#   bench/compare_llama_cpp.sh [-t 1,2] [-p 512] [-n 128] [-r 5]
# Needs: a Release build in build/ (scripts/quickstart.sh makes one) and the reference, built on
# demand by scripts/reference/build_llama_cpp.sh (cached in ~/.cache/zerfoo/reference).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
threads=1,2; n_prompt=512; n_gen=128; reps=5
while getopts "t:p:n:r:" o; do
  case "$o" in t) threads=$OPTARG ;; p) n_prompt=$OPTARG ;; n) n_gen=$OPTARG ;; r) reps=$OPTARG ;; *) exit 2 ;; esac
done
zf="${ZERFOO_BIN:-$root/build/zerfoo}"
[ -x "$zf" ] || { cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DZF_BUILD_TESTS=OFF >/dev/null; cmake --build "$root/build" --target zerfoo_cli >/dev/null; }
ref="$("$root/scripts/reference/build_llama_cpp.sh")"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cc -O3 -march=native -pthread "$root/bench/membw.c" -o "$tmp/membw"
eval "$("$root/scripts/fetch_models.sh" | sed 's/^/export model_/')"

: > "$tmp/rows.jsonl"
for m in "$model_gemma3" "$model_smollm2"; do
  for t in ${threads//,/ }; do
    for test in "-p $n_prompt -n 0" "-p 0 -n $n_gen"; do
      # shellcheck disable=SC2086
      "$ref/bin/llama-bench" -m "$m" -t "$t" $test -r "$reps" -o json 2>/dev/null \
        | python3 -c 'import json,sys; [print(json.dumps({"tool":"llama.cpp",**r})) for r in json.load(sys.stdin)]' >> "$tmp/rows.jsonl"
      # shellcheck disable=SC2086
      "$zf" bench -m "$m" -t "$t" $test -r "$reps" -o json \
        | python3 -c 'import json,sys; [print(json.dumps({"tool":"zerfoo",**r})) for r in json.load(sys.stdin)]' >> "$tmp/rows.jsonl"
    done
  done
done
bw1=$("$tmp/membw" 1); bw2=$("$tmp/membw" 2)
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
isa="$("$zf" info -m "$model_smollm2" -v 2>&1 | sed -n 's/.*CPU kernels: \([^;]*\);.*/\1/p' | head -n 1)"

# Load-to-first-token and peak RSS: each tool's CLI loads the file and generates one token.
: > "$tmp/rss.txt"
for m in "$model_gemma3" "$model_smollm2"; do
  for r in 1 2 3; do
    /usr/bin/time -f "llama.cpp $(basename "$m") %e %M" "$ref/bin/llama-completion" -m "$m" \
      -p "The capital of France is" -n 1 -t 2 -c 512 --temp 0 -no-cnv >/dev/null 2>>"$tmp/rss.err" || true
    tail -n 1 "$tmp/rss.err" >> "$tmp/rss.txt"
    /usr/bin/time -f "zerfoo $(basename "$m") %e %M" "$zf" generate -m "$m" \
      -p "The capital of France is" -n 1 -t 2 -c 512 --temp 0 >/dev/null 2>>"$tmp/rss.err" || true
    tail -n 1 "$tmp/rss.err" >> "$tmp/rss.txt"
  done
done

echo "CPU: $cpu, $(nproc) cores; zerfoo's kernels: ${isa:-unknown}"
python3 - "$tmp/rows.jsonl" "$bw1" "$bw2" "$tmp/rss.txt" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bw = {1: float(sys.argv[2]), 2: float(sys.argv[3])}
key = lambda r: (os.path.basename(r["model_filename"]), r["n_threads"], r["n_prompt"], r["n_gen"])
by = {}
for r in rows:
    by.setdefault(key(r), {})[r["tool"]] = r
print(f"Read bandwidth: {bw[1]:.1f} GB/s (1 thread), {bw[2]:.1f} GB/s (2 threads)\n")
print("| model | threads | test | llama.cpp t/s | zerfoo t/s | ratio | zerfoo % of BW limit |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for k in sorted(by):
    d = by[k]
    if "llama.cpp" not in d or "zerfoo" not in d:
        continue
    l, z = d["llama.cpp"], d["zerfoo"]
    test = f"pp{k[2]}" if k[2] else f"tg{k[3]}"
    limit = ""
    if k[3] and k[1] in bw:  # decode: weight bytes per token ~ file size
        limit = f"{100 * z['model_size'] * z['avg_ts'] / (bw[k[1]] * 1e9):.0f}%"
    print(f"| {k[0]} | {k[1]} | {test} | {l['avg_ts']:.2f} ± {l['stddev_ts']:.2f} | "
          f"{z['avg_ts']:.2f} ± {z['stddev_ts']:.2f} | {z['avg_ts'] / l['avg_ts']:.2f}x | {limit} |")

# Best of 3 runs: wall seconds to load + first token, peak RSS.
best = {}
for line in open(sys.argv[4]):
    f = line.split()
    if len(f) != 4:
        continue
    tool, model, secs, rss = f[0], f[1], float(f[2]), int(f[3])
    b = best.setdefault((model, tool), [secs, rss])
    b[0], b[1] = min(b[0], secs), min(b[1], rss)
print("\n| model | load + 1 token: llama.cpp | zerfoo | peak RSS: llama.cpp | zerfoo |")
print("| --- | ---: | ---: | ---: | ---: |")
for model in sorted({m for m, _ in best}):
    l, z = best.get((model, "llama.cpp")), best.get((model, "zerfoo"))
    if l and z:
        print(f"| {model} | {l[0]:.2f} s | {z[0]:.2f} s | {l[1] / 1024:.0f} MiB | {z[1] / 1024:.0f} MiB |")
PY
