#!/usr/bin/env bash
# Prints the path of a fetched real model (gemma3|smollm2), same rules as test_models.h;
# exits 1 with a message when it is absent.
name="$1"
var="ZF_MODEL_$(echo "$name" | tr a-z A-Z)"
if [ -n "${!var:-}" ]; then echo "${!var}"; exit 0; fi
dir="${ZERFOO_MODELS:-$HOME/.cache/zerfoo/models}"
case "$name" in
  gemma3) f="$dir/gemma-3-270m-q4_k_m.gguf" ;;
  smollm2) f="$dir/smollm2-135m-instruct-q4_1.gguf" ;;
  *) echo "unknown model $name" >&2; exit 2 ;;
esac
[ -f "$f" ] || { echo "SKIP: model '$name' not found: run scripts/fetch_models.sh" >&2; exit 1; }
echo "$f"
