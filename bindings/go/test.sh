#!/bin/sh
# Checks the Go binding: vet, a cgo-free build and test run, then the race detector (which
# needs cgo). Library: $ZERFOO_LIBRARY (tests that need it skip when it is unset).
# Model: $ZERFOO_TEST_MODEL, default ~/.cache/zerfoo/models/smollm2-135m-instruct-q4_1.gguf;
# Whisper: $ZERFOO_WHISPER_MODEL, default scripts/fetch_models.sh whisper-tiny-en; vision:
# $ZERFOO_VISION_MODELS (tests/vision/make_models.sh writes it) and $ZERFOO_GEMMA3_MODEL.
set -eu
cd "$(dirname "$0")"
GO=${GO:-go}
command -v "$GO" >/dev/null 2>&1 || GO=/usr/local/go/bin/go
export GOFLAGS="${GOFLAGS:--mod=mod}"
# Speech (speech_test.go): Whisper tiny.en, fetched and cached like the chat model.
ZERFOO_WHISPER_MODEL="${ZERFOO_WHISPER_MODEL:-$(../../scripts/fetch_models.sh whisper-tiny-en)}"
export ZERFOO_WHISPER_MODEL
# Vision (vision_test.go): tests/vision's synthesized Gemma 3 projectors (written once, cached)
# bound to Gemma 3 270M.
ZERFOO_VISION_MODELS="${ZERFOO_VISION_MODELS:-$HOME/.cache/zerfoo/vision_models}"
../../tests/vision/make_models.sh "$ZERFOO_VISION_MODELS" >&2
# Audio (audio_test.go): the synthesized audio projectors, bound to SmolLM2.
../../tests/vision/make_audio_models.sh "$ZERFOO_VISION_MODELS/audio" >&2
ZERFOO_GEMMA3_MODEL="${ZERFOO_GEMMA3_MODEL:-$(../../scripts/fetch_models.sh gemma3)}"
export ZERFOO_VISION_MODELS ZERFOO_GEMMA3_MODEL
if [ -z "${ZERFOO_LIBRARY:-}" ]; then
  echo "test.sh: ZERFOO_LIBRARY is not set; tests needing libzerfoo will skip" >&2
fi

step() { echo "== $*"; "$@"; }
step "$GO" vet ./...
step env CGO_ENABLED=0 "$GO" build ./...
# The cgo-free run and the race detector's run at once, each output printed whole: each runs its
# tests one after another on about one core (40 s and 54 s here; the whole stage 64 s of CPU).
# The tests write only under t.TempDir().
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
step env CGO_ENABLED=0 "$GO" test -count=1 ./... > "$logs/plain" 2>&1 &
plain=$!
race_rc=0
if command -v "${CC:-gcc}" >/dev/null 2>&1; then
  step env CGO_ENABLED=1 "$GO" test -race -count=1 ./... > "$logs/race" 2>&1 || race_rc=$?
else
  echo "test.sh: no C compiler; skipping go test -race (it needs cgo)" > "$logs/race"
fi
plain_rc=0
wait "$plain" || plain_rc=$?
cat "$logs/plain" "$logs/race"
[ "$plain_rc" = 0 ] && [ "$race_rc" = 0 ] || { echo "FAIL: go test (cgo-free rc $plain_rc, race rc $race_rc)"; exit 1; }
