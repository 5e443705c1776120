#!/usr/bin/env bash
# Where zerfoo's aarch64 decode instructions go, under qemu-user: guest instructions per decoded
# token charged to the function they ran in (bench/qemu_insn_plugin.c with symbols=on), SmolLM2,
# one thread, a 36-token minus a 4-token greedy generation, / 32 (as bench/aarch64_insns.sh).
# qemu names only the symbols of the executable it loaded, so this links the CLI statically
# against the cross-built core instead of using libzerfoo.so.
# Usage: bench/aarch64_profile.sh [CPU_MODEL (default max; cortex-a53: no dot product)] [MODEL.gguf]
set -euo pipefail
cd "$(dirname "$0")/.."

cpu="${1:-max}"
model="${2:-$(scripts/fetch_models.sh smollm2)}"
scripts/build_aarch64.sh zerfoo_core >/dev/null
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cc -shared -fPIC -O2 -Wall -Wextra bench/qemu_insn_plugin.c -o "$tmp/insn.so"
# glibc warns that a static binary's dlopen (the CUDA probe) needs its own glibc at run time.
aarch64-linux-gnu-g++ -std=c++17 -O2 -static -DZF_BUILDING_LIBRARY -Iinclude -Isrc -Ikernels src/cli/*.cpp \
  src/capi/*.cpp build-test-aarch64/libzerfoo_core.a -lpthread -ldl -o "$tmp/zerfoo" 2>/dev/null
for n in 4 36; do
  qemu-aarch64 -cpu "$cpu" -L /usr/aarch64-linux-gnu -plugin "$tmp/insn.so,symbols=on" -d plugin "$tmp/zerfoo" \
    generate -m "$model" -p "The capital of France is" -n "$n" --temp 0 --ignore-eos -t 1 2>&1 >/dev/null |
    grep -E '^(insns|sym):' >"$tmp/$n.txt"
done
python3 - "$tmp/4.txt" "$tmp/36.txt" "$cpu" <<'PY'
import subprocess, sys
def load(path):
    counts = {}
    for line in open(path):
        kind, n, *name = line.split(maxsplit=2)
        counts[name[0].strip() if name else "(total)"] = int(n)
    return counts
short, long_ = load(sys.argv[1]), load(sys.argv[2])
per_token = {k: (long_[k] - short.get(k, 0)) / 32 for k in long_}
total = per_token.pop("(total)")
print(f"qemu CPU model {sys.argv[3]}: {total / 1e6:.1f} M guest instructions per decoded token\n")
print("| function | M insns/token | share |\n| --- | ---: | ---: |")
names = sorted(per_token, key=per_token.get, reverse=True)[:15]
demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
for name, pretty in zip(names, demangled):
    pretty = pretty.replace("(anonymous namespace)::", "").split("(")[0]  # the name without its parameters
    print(f"| `{pretty}` | {per_token[name] / 1e6:.2f} | {100 * per_token[name] / total:.1f}% |")
PY
