#!/usr/bin/env bash
# Prints the path of a Go toolchain >= 1.25 (the Go binding needs it): the one on PATH or in
# /usr/local/go, else one fetched from the Go module proxy (golang.org/toolchain) into
# ~/.cache/zerfoo/go. Exits 1 with a message if none can be had.
set -euo pipefail
want_minor=25
ok() { "$1" version 2>/dev/null | grep -Eq 'go1\.(2[5-9]|[3-9][0-9])'; }
for g in "$(command -v go || true)" /usr/local/go/bin/go "$HOME/.cache/zerfoo/go/bin/go"; do
  if [ -n "$g" ] && [ -x "$g" ] && ok "$g"; then echo "$g"; exit 0; fi
done
ver=v0.0.1-go1.$want_minor.5.linux-amd64
dir="$HOME/.cache/zerfoo"
mkdir -p "$dir"
echo "fetching Go toolchain $ver from proxy.golang.org..." >&2
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
curl -fsSL "https://proxy.golang.org/golang.org/toolchain/@v/$ver.zip" -o "$tmp/go.zip" >&2
unzip -q "$tmp/go.zip" -d "$tmp"
rm -rf "$dir/go"
mv "$tmp/golang.org/toolchain@$ver" "$dir/go"
chmod +x "$dir/go/bin/"* "$dir/go/pkg/tool/"*/* 2>/dev/null || true
ok "$dir/go/bin/go" || { echo "error: fetched Go toolchain does not run" >&2; exit 1; }
echo "$dir/go/bin/go"
