#!/usr/bin/env bash
# Writes the synthesized Gemma 3 projector files of the vision tests (scripts/synth_mmproj.py)
# into OUT_DIR with the pinned numpy/gguf of scripts/requirements-synth.txt (the cache
# tests/family/make_models.sh fills: pip --target, the system site-packages untouched). Run by
# ctest as the fixture vision.models; OUT_DIR/.stamp skips an unchanged generator; each file's
# sha256 is written beside it (FILE.sha256).
#   tests/vision/make_models.sh OUT_DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:?usage: make_models.sh OUT_DIR}"
py="${PYTHON:-python3}"
req="$root/scripts/requirements-synth.txt"
pydir="$HOME/.cache/zerfoo/synth-py/$(sha256sum "$req" | cut -c1-16)"
if [ ! -f "$pydir/.ok" ]; then
  "$py" -m pip --version >/dev/null 2>&1 || {
    echo "make_models: python3 -m pip is missing (apt-get install python3-pip)" >&2; exit 2; }
  flags=(--no-deps --disable-pip-version-check --quiet --only-binary :all: --target "$pydir.tmp")
  "$py" -m pip install --help | grep -q -- --break-system-packages && flags+=(--break-system-packages)
  rm -rf "$pydir.tmp"
  "$py" -m pip install "${flags[@]}" -r "$req" >&2
  rm -rf "$pydir" && mv "$pydir.tmp" "$pydir" && touch "$pydir/.ok"
fi
export PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}"
stamp="$( (cat "$root/scripts/synth_mmproj.py" "$req") | sha256sum | cut -c1-32)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ]; then
  echo "make_models: $out is up to date"
  exit 0
fi
rm -f "$out/.stamp"
"$py" "$root/scripts/synth_mmproj.py" "$out"
# Each file's sha256 beside it: the tests compare it with the golden's (a changed generator
# or package shows as a clear mismatch, not as drifting numbers).
for f in "$out"/*.gguf; do sha256sum "$f" | cut -d' ' -f1 > "$f.sha256"; done
echo "$stamp" > "$out/.stamp"
