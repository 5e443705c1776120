#!/usr/bin/env bash
# libzerfoo.so exports only zf_* and depends on no CUDA library and no libstdc++ (the library
# is dlopen'd into other processes: a minimal, predictable surface).
set -euo pipefail
lib="$1"
bad=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -v '^zf_' | grep -v '^ZERFOO_' || true)
if [ -n "$bad" ]; then
  echo "FAIL: non-zf_ symbols exported by $lib:"; echo "$bad" | head -20; exit 1
fi
n=$(nm -D --defined-only "$lib" | grep -c ' T zf_' || true)
[ "$n" -ge 30 ] || { echo "FAIL: only $n zf_ functions exported"; exit 1; }
needed=$(readelf -d "$lib" | grep NEEDED || true)
if echo "$needed" | grep -Eqi 'cuda|cublas|nvrtc|libstdc\+\+'; then
  echo "FAIL: unwanted dependency:"; echo "$needed"; exit 1
fi
readelf -d "$lib" | grep -q 'SONAME.*\[libzerfoo\.so\.0\]' || { echo "FAIL: SONAME is not libzerfoo.so.0"; exit 1; }
echo "OK: $n zf_* functions exported, NEEDED: $(echo "$needed" | sed -E 's/.*\[(.*)\]/\1/' | tr '\n' ' ')"
