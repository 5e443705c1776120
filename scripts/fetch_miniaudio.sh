#!/usr/bin/env bash
# Fetches miniaudio (single-header audio decoding: MP3, FLAC, WAV; public domain / MIT-0) and the
# stb_vorbis it uses for Ogg Vorbis, from the sdist of PyPI's `miniaudio` 1.71 (miniaudio 0.11.25),
# checksum-pinned, into a cache outside git, and prints the directory holding miniaudio.h and
# stb_vorbis.c. The CMake build calls it (cmake/audio_codecs.cmake) to decode those containers
# in the `zerfoo` CLI and server only: libzerfoo.so keeps WAV alone and gains no dependency.
# stb_vorbis is patched here (patch_stb_vorbis below: bounds on the comment header's counts and
# lengths, which its setup trusts; found by tests/fuzz/fuzz_audio_request.cpp).
# Cache: $ZF_CACHE_DIR or ~/.cache/zerfoo, under miniaudio/1.71-p1. Re-running is cheap.
set -euo pipefail
version=1.71
sha=ff51e2887bb673e2e757752b586b3dc924d59aa5fbcae9bbc45f4a111bd3262b
cache="${ZF_CACHE_DIR:-$HOME/.cache/zerfoo}/miniaudio/$version-p1"  # -pN: the patch's revision
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
# stb_vorbis 1.22 reads the vendor length, the comment count and each comment's length as
# signed 32-bit values and allocates from them unchecked: a negative length writes before its
# buffer, a count whose byte size overflows int allocates too little, and a failed allocation
# leaves vorbis_deinit walking a NULL list. Each is refused as an invalid setup instead.
patch_stb_vorbis() {
  local f="$1" n
  sed -i -e 's/^\( *\)len = get32_packet(f);$/\1len = get32_packet(f); if (len < 0 || len > (1 << 28)) return error(f, VORBIS_invalid_setup);/' \
    -e 's/^   f->comment_list_length = get32_packet(f);$/&\n   if (f->comment_list_length < 0 || f->comment_list_length > (1 << 20)) return error(f, VORBIS_invalid_setup);/' \
    -e 's/^      if (f->comment_list == NULL)                  return error(f, VORBIS_outofmem);$/&\n      memset(f->comment_list, 0, sizeof(char*) * f->comment_list_length);/' \
    -e 's/^   for (i=0; i < p->comment_list_length; ++i) {$/   for (i=0; p->comment_list \&\& i < p->comment_list_length; ++i) {/' "$f"
  n=$(grep -c 'return error(f, VORBIS_invalid_setup);$' "$f" || true)
  grep -q '(1 << 28)) return error' "$f" && grep -q '> (1 << 20)) return error' "$f" && \
    grep -q 'memset(f->comment_list, 0' "$f" && grep -q 'p->comment_list && i <' "$f" && \
    [ "$(grep -c '(1 << 28)) return error' "$f")" = 2 ] || { echo "error: stb_vorbis patch did not apply ($n)" >&2; exit 1; }
}
patch_stb_vorbis "$tmp/miniaudio-$version/miniaudio/stb_vorbis.c"
# Moved into place last, so an interrupted fetch leaves no half cache.
cp "$tmp/miniaudio-$version/LICENSE" "$cache/LICENSE"
cp "$tmp/miniaudio-$version/miniaudio/stb_vorbis.c" "$cache/stb_vorbis.c.tmp"
cp "$tmp/miniaudio-$version/miniaudio/miniaudio.h" "$cache/miniaudio.h.tmp"
mv "$cache/stb_vorbis.c.tmp" "$cache/stb_vorbis.c"
mv "$cache/miniaudio.h.tmp" "$cache/miniaudio.h"
echo "$cache"
