#!/usr/bin/env bash
# Side-by-side CPU benchmark: llama.cpp's llama-bench and `zerfoo bench` on the same GGUF
# files, threads and prompt sizes, alternating tool by tool for each configuration, plus the
# machine's measured read bandwidth. Prints one Markdown table with ratios (zerfoo / llama.cpp)
# and, for decode, the share of the bandwidth limit reached (weights bytes/token x tok/s / BW).
#   bench/compare_llama_cpp.sh [-t 1,2] [-p 512] [-n 128] [-d 0] [-r 5] [-k 1] [-m FILE,FILE] [-c f16,q8_0] [-g 4096]
# -d LIST runs every test also at those depths (tokens already in the context; both tools' -d):
# prefill and decode at agent lengths, e.g. -p 512 -n 64 -d 4096,16384.
# -g LIST: the depths of the decode tests only (default: -d's), e.g. -p 4096,16384 -g 4096,16384
# for prefill from an empty context and decode at depth.
# -c LIST runs every test with each KV cache type (both tools' -ctk/-ctv; llama.cpp with -fa 1,
# which its quantized V cache needs), rows tagged with the type.
# -m benchmarks other GGUF files than the two real models (bench/family_bench.sh passes its
# 1B-class synthesized ones). Bytes per decoded token come from bench/decode_bytes.py (for MoE
# files, the experts' bytes times expert_used_count / expert_count).
# -k K repeats the whole alternation K times (rounds) and reports, per row, the median of the
# K per-round ratios and their range: on a shared host one tool's block of repetitions can land
# in a slow phase (2-core cloud VMs measured here swing 10-30% over tens of seconds), and a
# ratio taken within one round only cancels what both tools saw.
# Needs: a Release build in build/ (scripts/quickstart.sh makes one) and the reference, built on
# demand by scripts/reference/build_llama_cpp.sh (cached in ~/.cache/zerfoo/reference).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
threads=1,2; n_prompt=512; n_gen=128; depths=0; reps=5; rounds=1; models=""; kv_types=""; gen_depths=""
while getopts "t:p:n:d:r:k:m:c:g:" o; do
  case "$o" in t) threads=$OPTARG ;; p) n_prompt=$OPTARG ;; n) n_gen=$OPTARG ;; d) depths=$OPTARG ;; r) reps=$OPTARG ;;
    k) rounds=$OPTARG ;; m) models=$OPTARG ;; c) kv_types=$OPTARG ;;
    g) gen_depths=$OPTARG ;; *) exit 2 ;; esac
done
zf="${ZERFOO_BIN:-$root/build/zerfoo}"
[ -x "$zf" ] || { cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DZF_BUILD_TESTS=OFF >/dev/null; cmake --build "$root/build" --target zerfoo_cli >/dev/null; }
ref="$("$root/scripts/reference/build_llama_cpp.sh")"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cc -O3 -march=native -pthread "$root/bench/membw.c" -o "$tmp/membw"
eval "$("$root/scripts/fetch_models.sh" | sed 's/^/export model_/')"
if [ -n "$models" ]; then files=(${models//,/ }); else files=("$model_gemma3" "$model_smollm2"); fi
: > "$tmp/bytes.txt"
for m in "${files[@]}"; do echo "$(basename "$m") $(python3 "$root/bench/decode_bytes.py" "$m")" >> "$tmp/bytes.txt"; done

: > "$tmp/rows.jsonl"
tag='import json,sys; [print(json.dumps({"tool":sys.argv[1],"round":int(sys.argv[2]),"kv":sys.argv[3],**r})) for r in json.load(sys.stdin)]'
for round in $(seq 1 "$rounds"); do
  for m in "${files[@]}"; do
    for t in ${threads//,/ }; do
      kv_list=${kv_types:-default}
      for c in ${kv_list//,/ }; do
        kvargs=""; fa=""
        [ "$c" = default ] || { kvargs="-ctk $c -ctv $c"; fa="-fa 1"; }
        for test in "-p $n_prompt -n 0 -d $depths" "-p 0 -n $n_gen -d ${gen_depths:-$depths}"; do
          # shellcheck disable=SC2086
          "$ref/bin/llama-bench" -m "$m" -t "$t" $test $kvargs $fa -r "$reps" -o json 2>/dev/null \
            | python3 -c "$tag" llama.cpp "$round" "$c" >> "$tmp/rows.jsonl"
          # shellcheck disable=SC2086
          "$zf" bench -m "$m" -t "$t" $test $kvargs -r "$reps" -o json | python3 -c "$tag" zerfoo "$round" "$c" >> "$tmp/rows.jsonl"
        done
      done
    done
  done
done
bw1=$("$tmp/membw" 1); bw2=$("$tmp/membw" 2)
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
isa="$("$zf" info -m "$model_smollm2" -v 2>&1 | sed -n 's/.*CPU kernels: \([^;]*\);.*/\1/p' | head -n 1)"

# Load-to-first-token and peak RSS: each tool's CLI loads the file and generates one token.
: > "$tmp/rss.txt"
for m in "${files[@]}"; do
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
python3 - "$tmp/rows.jsonl" "$bw1" "$bw2" "$tmp/rss.txt" "$tmp/bytes.txt" <<'PY'
import json, os, sys
decode_bytes = {l.split()[0]: int(l.split()[1]) for l in open(sys.argv[5])}
rows = [json.loads(l) for l in open(sys.argv[1])]
bw = {1: float(sys.argv[2]), 2: float(sys.argv[3])}
key = lambda r: (os.path.basename(r["model_filename"]), r["n_threads"], r.get("kv", "default"), r.get("n_depth", 0), r["n_prompt"], r["n_gen"])
by = {}
for r in rows:
    by.setdefault(key(r), {}).setdefault(r["round"], {})[r["tool"]] = r
med = lambda v: sorted(v)[len(v) // 2] if len(v) % 2 else sum(sorted(v)[len(v) // 2 - 1:len(v) // 2 + 1]) / 2
print(f"Read bandwidth: {bw[1]:.1f} GB/s (1 thread), {bw[2]:.1f} GB/s (2 threads)\n")
kv_col = any(k[2] != "default" for k in by)
print("| model | threads |" + (" KV |" if kv_col else "") + " test | llama.cpp t/s | zerfoo t/s | ratio | zerfoo % of BW limit |")
print("| --- | ---: |" + (" --- |" if kv_col else "") + " ---: | ---: | ---: | ---: | ---: |")
print_bytes = {m: b for m, b in decode_bytes.items()}
for k in sorted(by):
    pairs = [(d["llama.cpp"], d["zerfoo"]) for _, d in sorted(by[k].items()) if "llama.cpp" in d and "zerfoo" in d]
    if not pairs:
        continue
    test = (f"pp{k[4]}" if k[4] else f"tg{k[5]}") + (f" @ d{k[3]}" if k[3] else "")
    ratios = [z["avg_ts"] / l["avg_ts"] for l, z in pairs]
    if len(pairs) == 1:  # one round: each tool's mean ± its spread over the repetitions
        (l, z), = pairs
        lt, zt = f"{l['avg_ts']:.2f} ± {l['stddev_ts']:.2f}", f"{z['avg_ts']:.2f} ± {z['stddev_ts']:.2f}"
        ratio = f"{ratios[0]:.2f}x"
    else:  # medians over the rounds, and the rounds' range of ratios
        lt, zt = f"{med([l['avg_ts'] for l, _ in pairs]):.2f}", f"{med([z['avg_ts'] for _, z in pairs]):.2f}"
        ratio = f"{med(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
    limit = ""
    if k[5] and not k[3] and k[1] in bw:  # decode at depth 0: weight bytes per token (bench/decode_bytes.py) x tok/s / BW
        z_ts = med([z["avg_ts"] for _, z in pairs])
        limit = f"{100 * decode_bytes.get(k[0], pairs[0][1]['model_size']) * z_ts / (bw[k[1]] * 1e9):.0f}%"
    kv = f" {k[2]} |" if kv_col else ""
    print(f"| {k[0]} | {k[1]} |{kv} {test} | {lt} | {zt} | {ratio} | {limit} |")
print("\nBytes read per decoded token: " + ", ".join(f"{m} {b / 1e6:.1f} MB" for m, b in sorted(print_bytes.items())))
if max(len(d) for d in by.values()) > 1:
    print(f"\nt/s: medians over {max(len(d) for d in by.values())} rounds; ratio: median of the per-round ratios (range).")

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
