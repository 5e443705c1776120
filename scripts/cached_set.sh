# Sourced by the scripts that synthesize test files (tests/vision/make_models.sh,
# tests/capi/make_embed_models.sh):
#   cached_set NAME STAMP OUT_DIR WRITER
# keeps the files WRITER (a function or command, given an empty directory) writes once per
# generator version in ~/.cache/zerfoo/NAME/STAMP (ZF_SET_CACHE instead of ~/.cache/zerfoo) and
# hard-links them into OUT_DIR (copies across file systems), so a fresh build directory (a CI
# clone) does not write them again. Other versions are removed; flock keeps concurrent builds
# apart. Files of OUT_DIR are replaced, never written through (they may be links into the cache);
# others stay (audio.models writes audio/ beside vision.models' files at the same time).
# OUT_DIR/.stamp holds STAMP afterwards.
cached_set() {
  local name="$1" stamp="$2" out="$3" writer="$4" cache
  cache="${ZF_SET_CACHE:-$HOME/.cache/zerfoo}/$name"
  mkdir -p "$cache" "$out"
  (
    flock 9
    # Another caller may have linked the set into OUT_DIR while this one waited.
    [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$stamp" ] && exit 0
    rm -f "$out/.stamp"
    local dir="$cache/$stamp"
    if ! { [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$stamp" ]; }; then
      rm -rf "$dir.tmp"
      mkdir -p "$dir.tmp"
      "$writer" "$dir.tmp"
      echo "$stamp" > "$dir.tmp/.stamp"
      rm -rf "$dir" && mv "$dir.tmp" "$dir"
      find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$stamp" -exec rm -rf {} +
    fi
    cp -al --remove-destination "$dir/." "$out/" 2>/dev/null || cp -a --remove-destination "$dir/." "$out/"
    rm -f "$out/.stamp"  # a link into the cache: written afresh
    echo "$stamp" > "$out/.stamp"
  ) 9>"$cache/.lock"
}
