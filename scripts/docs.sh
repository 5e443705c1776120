#!/usr/bin/env bash
# Builds the C ABI reference with Doxygen (doc/Doxyfile): HTML in build-docs/html/index.html.
# Fails on any warning (an undocumented public symbol or parameter, a broken reference).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh doxygen  # detected by package
rm -rf build-docs
doxygen doc/Doxyfile
echo "OK: ABI reference in $PWD/build-docs/html/index.html"
