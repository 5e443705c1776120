#!/bin/sh
# CI stage for `zerfoo serve`: runs tests/serve/test_serve.py (the `openai` PyPI client, curl,
# raw HTTP), then tests/serve/test_hostile.py, against the CLI on 127.0.0.1 with SmolLM2. Installs what is missing: curl (apt), the
# official clients (pip: openai, anthropic, ollama; into ~/.cache/zerfoo/serve-py/<versions>,
# reused across runs), then each API's own test file.
# Environment: ZERFOO_CLI (default build/zerfoo), ZERFOO_TEST_MODEL (default: SmolLM2 via
# scripts/fetch_models.sh).
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
export PYTHONPATH="$pydir${PYTHONPATH:+:$PYTHONPATH}"
timeout 900 "$py" "$here/test_serve.py"
# Hostile requests (issue #41): inputs that crashed the server or got a 500 are 400s.
timeout 300 "$py" "$here/test_hostile.py"
# The other front doors (issue #43), each with its official client.
for api in anthropic responses ollama infill; do
  timeout 600 "$py" "$here/test_$api.py"
done
