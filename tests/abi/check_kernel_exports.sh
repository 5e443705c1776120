#!/usr/bin/env bash
# libzerfoo_kernels.so exports exactly the zfk_* functions declared in kernels/zfk.h and needs
# no CUDA shared library (the runtime is linked statically: a GPU host needs only the driver).
# Usage: check_kernel_exports.sh LIB HEADER
set -euo pipefail
lib="$1"; header="$2"
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sed 's/@.*//' | sort -u)
bad=$(echo "$exported" | grep -v '^zfk_' || true)
if [ -n "$bad" ]; then
  echo "FAIL: non-zfk_ symbols exported by $lib:"; echo "$bad" | head -20; exit 1
fi
declared=$(grep -oE '^(int32_t|const char\*) zfk_[a-z0-9_]+\(' "$header" | sed -E 's/.*(zfk_[a-z0-9_]+)\($/\1/' | sort -u)
if [ "$declared" != "$exported" ]; then
  echo "FAIL: exported functions differ from zfk.h's:"; diff <(echo "$declared") <(echo "$exported") || true; exit 1
fi
needed=$(readelf -d "$lib" | grep NEEDED || true)
if echo "$needed" | grep -Eqi 'cuda|cublas|nvrtc|libstdc\+\+'; then
  echo "FAIL: unwanted dependency:"; echo "$needed"; exit 1
fi
archs=$(readelf -S "$lib" | grep -c nv_fatbin || true)
[ "$archs" -ge 1 ] || { echo "FAIL: no .nv_fatbin section (no device code)"; exit 1; }
echo "OK: $(echo "$exported" | wc -l) zfk_* functions, device code present, NEEDED: $(echo "$needed" | sed -E 's/.*\[(.*)\]/\1/' | tr '\n' ' ')"
