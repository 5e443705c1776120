#!/usr/bin/env bash
# ABI stability check of libzerfoo.so against the committed baseline in abi/ (doc/testing.md:
# "Reliability, fuzzing, ABI check and API reference"). Fails on an incompatible change: a removed or changed function, a struct field
# moved, resized or removed, a struct that shrank, a changed #define ZF_* constant. Appending a
# function, a constant or a params field at the end of a struct passes.
#   scripts/abi_check.sh [--update] [--lib LIB] [--header HEADER]
# LIB must carry debug info (DWARF) for abidiff's type comparison; without --lib the library is
# built as CI's clang stage builds it (scripts/clang_sanitize.sh build-test-clang --lib-only).
# --update rewrites the baseline (commit it together with the intentional append; the lead re-runs it after merging
# branches that append functions).
# abidiff (Debian's abigail-tools) compares the library's exported functions and the types they
# reach; the header's #define constants, declarations and struct layouts (offsetof/sizeof of every
# field, compiled and printed by a generated C program) are compared by scripts/abi_surface.py.
set -euo pipefail
cd "$(dirname "$0")/.."
update=0; lib=""; header="include/zerfoo.h"
while [ $# -gt 0 ]; do
  case "$1" in
    --update) update=1 ;;
    --lib) lib="$2"; shift ;;
    --header) header="$2"; shift ;;
    *) echo "usage: $0 [--update] [--lib LIB] [--header HEADER]"; exit 2 ;;
  esac
  shift
done
scripts/install_deps.sh abigail-tools  # abidw, abidiff (detected by package)
if [ -z "$lib" ]; then
  # The same build as CI's clang stage (the committed baseline comes from it: DWARF of one
  # compiler and configuration compares most cleanly with its own).
  scripts/clang_sanitize.sh build-test-clang --lib-only >/dev/null
  lib=build-test-clang/libzerfoo.so.0
fi
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
cc="${CC:-cc}"

# The current surface.
hdir="$(dirname "$header")"
# Only the exported zf_* functions and the types they reach; zf_model/zf_session are opaque.
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --headers-dir "$hdir" --drop-private-types \
  --drop-undefined-syms --exported-interfaces-only --suppressions abi/opaque.suppr "$lib" > "$tmp/libzerfoo.abi"
python3 scripts/abi_surface.py functions "$header" > "$tmp/functions.txt"
python3 scripts/abi_surface.py constants "$header" > "$tmp/constants.txt"
python3 scripts/abi_surface.py layout_c "$header" > "$tmp/layout.c"
"$cc" -std=c99 -I"$hdir" "$tmp/layout.c" -o "$tmp/layout"
"$tmp/layout" > "$tmp/layout.txt"

if [ "$update" = 1 ]; then
  cp "$tmp/libzerfoo.abi" "$tmp/functions.txt" "$tmp/constants.txt" "$tmp/layout.txt" abi/
  echo "abi/: baseline updated from $lib and $header ($(wc -l < abi/functions.txt) declarations, $(wc -l < abi/constants.txt) constants, $(grep -c '^field' abi/layout.txt) struct fields)"
  exit 0
fi

fail=0
echo "== abidiff abi/libzerfoo.abi $lib"
set +e
abidiff --suppressions abi/opaque.suppr abi/libzerfoo.abi "$tmp/libzerfoo.abi" > "$tmp/abidiff.txt" 2>&1
rc=$?
set -e
sed 's/^/  /' "$tmp/abidiff.txt" | head -60
# Bit 8: an incompatible change (e.g. a removed function); bits 1/2: abidiff itself failed.
# Bit 4 (a change) alone passes here: a params struct that grew at its end is one; changed
# parameter types and moved fields are caught exactly by the declaration and layout checks below.
if [ $((rc & 3)) -ne 0 ]; then echo "FAIL: abidiff could not compare (exit $rc)"; fail=1; fi
if [ $((rc & 8)) -ne 0 ]; then echo "FAIL: abidiff reports an incompatible change"; fail=1; fi
if grep -Eq 'Functions changes summary: [1-9][0-9]* Removed|Variables changes summary: [1-9][0-9]* Removed' "$tmp/abidiff.txt"; then
  echo "FAIL: functions or variables removed"; fail=1
fi
for kind in functions constants layout; do
  echo "== $kind (abi/$kind.txt)"
  python3 scripts/abi_surface.py compare "$kind" "abi/$kind.txt" "$tmp/$kind.txt" || fail=1
done
if [ "$fail" != 0 ]; then
  echo "ABI CHECK FAILED. An intentional append? Run scripts/abi_check.sh --update and commit abi/."
  exit 1
fi
echo "ABI check passed: no incompatible change against abi/"
