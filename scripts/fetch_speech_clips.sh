#!/usr/bin/env bash
# Fetches speech clips with reference texts for bench/whisper_wer.py (issue #47) into
# $ZERFOO_CACHE/speech-data (default ~/.cache/zerfoo/speech-data), never into git:
#   pocketsphinx 5.1.1 sdist      test/data/librivox/: 5 LibriVox clips (public domain), English
#   pytest-audioeval 0.1.3 wheel  samples/audio/<lang>/: 24 clips in 9 languages (MIT)
# Versions and sha256 pinned; re-running is cheap. Prints the data directory.
set -euo pipefail
dir="${ZERFOO_CACHE:-$HOME/.cache/zerfoo}/speech-data"
mkdir -p "$dir"
py="${PYTHON:-python3}"

fetch() {  # fetch FILE SHA256 PIP-ARGS...
  local file="$dir/$1" sha="$2"; shift 2
  if [ ! -f "$file" ] || [ "$(sha256sum "$file" | cut -d' ' -f1)" != "$sha" ]; then
    "$py" -m pip download --quiet --disable-pip-version-check --no-deps -d "$dir" "$@" >&2
    [ "$(sha256sum "$file" | cut -d' ' -f1)" = "$sha" ] || { echo "error: $1: sha256 mismatch" >&2; exit 1; }
  fi
}

fetch pocketsphinx-5.1.1.tar.gz 675778b309a22dfc9b7d37f7621976bba491d2a5f8c59696bd77fd6d07271355 \
  --no-binary :all: pocketsphinx==5.1.1
fetch pytest_audioeval-0.1.3-py3-none-any.whl 8b97369347232d43180dd9860189c547ccc8dedb42b7c21d511ddc5a05ef7ecc \
  pytest-audioeval==0.1.3
[ -d "$dir/pocketsphinx-5.1.1/test/data/librivox" ] ||
  tar -xzf "$dir/pocketsphinx-5.1.1.tar.gz" -C "$dir" pocketsphinx-5.1.1/test/data/librivox pocketsphinx-5.1.1/LICENSE
[ -d "$dir/audioeval/pytest_audioeval/samples" ] || { mkdir -p "$dir/audioeval" && unzip -q -o "$dir/pytest_audioeval-0.1.3-py3-none-any.whl" -d "$dir/audioeval"; }
echo "$dir"
