#!/usr/bin/env bash
# libzerfoo.so exports exactly the zf_* functions declared in include/zerfoo.h, and depends on
# no CUDA library and no libstdc++ (it is dlopen'd into other processes: a minimal surface).
# Usage: check_exports.sh LIB HEADER
set -euo pipefail
lib="$1"; header="$2"
bad=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sed 's/@.*//' | grep -v '^zf_' | grep -v '^ZERFOO_' || true)
if [ -n "$bad" ]; then
  echo "FAIL: non-zf_ symbols exported by $lib:"; echo "$bad" | head -20; exit 1
fi
declared=$(grep -oE '^ZF_API[^(]*\bzf_[a-z0-9_]+\(' "$header" | sed -E 's/.*\b(zf_[a-z0-9_]+)\($/\1/' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sed 's/@.*//' | grep '^zf_' | sort -u)
if [ "$declared" != "$exported" ]; then
  echo "FAIL: exported functions differ from the header's:"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
n=$(echo "$exported" | wc -l)
needed=$(readelf -d "$lib" | grep NEEDED || true)
if echo "$needed" | grep -Eqi 'cuda|cublas|nvrtc|libstdc\+\+'; then
  echo "FAIL: unwanted dependency:"; echo "$needed"; exit 1
fi
readelf -d "$lib" | grep -q 'SONAME.*\[libzerfoo\.so\.0\]' || { echo "FAIL: SONAME is not libzerfoo.so.0"; exit 1; }
echo "OK: $n zf_* functions exported, NEEDED: $(echo "$needed" | sed -E 's/.*\[(.*)\]/\1/' | tr '\n' ' ')"
