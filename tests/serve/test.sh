#!/bin/sh
# CI stage for `zerfoo serve`: runs each API's test file (test_serve.py: the `openai` PyPI client,
# curl, raw HTTP; test_hostile.py; test_anthropic/responses/ollama/infill.py, each with its official
# client) against the CLI on 127.0.0.1 with SmolLM2, three files at a time. Installs what is
# missing: curl (apt), the official clients (pip: openai, anthropic, ollama; into
# ~/.cache/zerfoo/serve-py/<versions>, reused across runs).
# Environment: ZERFOO_CLI (default build/zerfoo), ZERFOO_TEST_MODEL (default: SmolLM2 via
# scripts/fetch_models.sh), ZERFOO_WHISPER_MODEL (test_audio.py; default: tiny.en, fetched likewise),
# ZERFOO_GEMMA3_MODEL and ZERFOO_VISION_MODELS (test_vision.py, test_audio_chat.py; Gemma 3 270M, tests/vision's projectors).
set -eu
# shellcheck source=tests/serve/env.sh
. "$(dirname "$0")/env.sh"
"$root/scripts/install_deps.sh" curl python3-pip  # detected by package

py="${PYTHON:-python3}"
openai_version=3.54.0
anthropic_version=2.14.0
ollama_version=0.6.3
jsonschema_version=4.23.0  # validates the structured outputs
pydir="$HOME/.cache/zerfoo/serve-py/openai-$openai_version-anthropic-$anthropic_version-ollama-$ollama_version-jsonschema-$jsonschema_version"
if [ ! -f "$pydir/.ok" ]; then
  flags="--disable-pip-version-check --quiet --only-binary :all: --target $pydir.tmp"
  "$py" -m pip install --help | grep -q -- --break-system-packages && flags="$flags --break-system-packages"
  rm -rf "$pydir.tmp"
  # shellcheck disable=SC2086
  "$py" -m pip install $flags "openai==$openai_version" "anthropic==$anthropic_version" "ollama==$ollama_version" \
    "jsonschema==$jsonschema_version" >&2
  rm -rf "$pydir" && mv "$pydir.tmp" "$pydir" && touch "$pydir/.ok"
fi
ZERFOO_WHISPER_MODEL="${ZERFOO_WHISPER_MODEL:-$("$root/scripts/fetch_models.sh" whisper-tiny-en)}"
export ZERFOO_WHISPER_MODEL
# test_vision.py: Gemma 3 270M and tests/vision's synthesized projectors.
ZERFOO_GEMMA3_MODEL="${ZERFOO_GEMMA3_MODEL:-$("$root/scripts/fetch_models.sh" gemma3)}"
ZERFOO_VISION_MODELS="${ZERFOO_VISION_MODELS:-$HOME/.cache/zerfoo/vision_models}"
"$root/tests/vision/make_models.sh" "$ZERFOO_VISION_MODELS" >&2
"$root/tests/vision/make_audio_models.sh" "$ZERFOO_VISION_MODELS/audio" >&2  # test_audio_chat.py
export ZERFOO_GEMMA3_MODEL ZERFOO_VISION_MODELS
export PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}"
# Each file starts its own server (-t 1, a free port); the files run in three lanes at once on a
# 2-core machine: with two lanes the stage kept ~0.9 of the two cores busy (132 s of CPU in the
# rehearsal's 149 s), a file's server waiting on its client and the client on the server. Each
# lane stops at its first failure; the lanes' output is printed in order.
lane() {  # FILE:TIMEOUT...
  for spec in "$@"; do
    timeout "${spec#*:}" "$py" "$here/${spec%%:*}" || { echo "FAIL: tests/serve/${spec%%:*}"; return 1; }
  done
}
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
# Hostile requests (issue #41): inputs that crashed the server or got a 500 are 400s. The other
# front doors (issue #43), each with its official client.
# Three lanes of about equal length (their files' times in the 2026-11-29 rehearsal, loaded:
# 86 s, 86 s and 82 s).
lane test_serve.py:900 test_vision.py:600 test_hostile.py:300 > "$logs/1" 2>&1 &
lane1=$!
lane test_ollama.py:600 test_audio.py:300 > "$logs/2" 2>&1 &
lane2=$!
lane test_audio_chat.py:300 test_anthropic.py:600 test_responses.py:600 test_infill.py:600 test_lora.py:300 \
  test_router.py:300 > "$logs/3" 2>&1 &
lane3=$!
rc1=0; wait "$lane1" || rc1=$?
rc2=0; wait "$lane2" || rc2=$?
rc3=0; wait "$lane3" || rc3=$?
cat "$logs/1" "$logs/2" "$logs/3"
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] && [ "$rc3" = 0 ] || { echo "FAIL: serve tests (lane rc $rc1, $rc2, $rc3)"; exit 1; }
