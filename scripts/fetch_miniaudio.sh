#!/usr/bin/env bash
# Fetches miniaudio (single-header audio decoding: MP3, FLAC, WAV; public domain / MIT-0) and the
# stb_vorbis it uses for Ogg Vorbis, from the sdist of PyPI's `miniaudio` 1.71 (miniaudio 0.11.25),
# checksum-pinned, into a cache outside git, and prints the directory holding miniaudio.h and
# stb_vorbis.c. The CMake build calls it (cmake/audio_codecs.cmake) to decode those containers
# in the `zerfoo` CLI and server only: libzerfoo.so keeps WAV alone and gains no dependency.
# Cache: $ZF_CACHE_DIR or ~/.cache/zerfoo, under miniaudio/1.71. Re-running is cheap.
set -euo pipefail
version=1.71
sha=ff51e2887bb673e2e757752b586b3dc924d59aa5fbcae9bbc45f4a111bd3262b
cache="${ZF_CACHE_DIR:-$HOME/.cache/zerfoo}/miniaudio/$version"
py="${PYTHON:-python3}"
if [ -f "$cache/miniaudio.h" ] && [ -f "$cache/stb_vorbis.c" ]; then
  echo "$cache"
  exit 0
fi
mkdir -p "$cache"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
"$py" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: -d "$tmp" \
  "miniaudio==$version" >&2
sdist="$tmp/miniaudio-$version.tar.gz"
[ "$(sha256sum "$sdist" | cut -d' ' -f1)" = "$sha" ] || { echo "error: miniaudio-$version.tar.gz sha256 mismatch" >&2; exit 1; }
tar -xzf "$sdist" -C "$tmp" "miniaudio-$version/miniaudio/miniaudio.h" "miniaudio-$version/miniaudio/stb_vorbis.c" \
  "miniaudio-$version/LICENSE"
# Moved into place last, so an interrupted fetch leaves no half cache.
cp "$tmp/miniaudio-$version/LICENSE" "$cache/LICENSE"
cp "$tmp/miniaudio-$version/miniaudio/stb_vorbis.c" "$cache/stb_vorbis.c.tmp"
cp "$tmp/miniaudio-$version/miniaudio/miniaudio.h" "$cache/miniaudio.h.tmp"
mv "$cache/stb_vorbis.c.tmp" "$cache/stb_vorbis.c"
mv "$cache/miniaudio.h.tmp" "$cache/miniaudio.h"
echo "$cache"
