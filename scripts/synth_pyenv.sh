#!/usr/bin/env bash
# Prints the folder holding the pinned Python packages of the model synthesizers
# (scripts/requirements-synth.txt: numpy, gguf, ...), installing them there first if needed
# (pip --target into ~/.cache/zerfoo/synth-py/<requirements hash>; the system site-packages
# untouched). For PYTHONPATH:
#   export PYTHONPATH="$(scripts/synth_pyenv.sh)${PYTHONPATH:+:$PYTHONPATH}"
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
py="${PYTHON:-python3}"
req="$root/scripts/requirements-synth.txt"
pydir="$HOME/.cache/zerfoo/synth-py/$(sha256sum "$req" | cut -c1-16)"
if [ ! -f "$pydir/.ok" ]; then
  "$py" -m pip --version >/dev/null 2>&1 || {
    echo "synth_pyenv: python3 -m pip is missing (apt-get install python3-pip)" >&2; exit 2; }
  flags=(--no-deps --disable-pip-version-check --quiet --only-binary :all: --target "$pydir.tmp")
  "$py" -m pip install --help | grep -q -- --break-system-packages && flags+=(--break-system-packages)
  rm -rf "$pydir.tmp"
  "$py" -m pip install "${flags[@]}" -r "$req" >&2
  rm -rf "$pydir" && mv "$pydir.tmp" "$pydir" && touch "$pydir/.ok"
fi
echo "$pydir"
