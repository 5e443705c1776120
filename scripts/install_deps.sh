#!/usr/bin/env bash
# Installs the build and test dependencies on Debian/Ubuntu (idempotent; uses sudo if not root),
# or, given package names, just those. Every apt package any script or test stage needs goes
# through here, detected by its dpkg status (never by a file glob another package can satisfy).
#   scripts/install_deps.sh                       the base build/test packages below
#   scripts/install_deps.sh PKG...                those packages (a stage's own tools)
#   scripts/install_deps.sh --no-recommends PKG...  without Recommends (Mono pulls in a lot)
# Build: cmake, ninja, g++, pkg-config. Tests: GoogleTest, nlohmann-json (golden files),
# doctest, Google Benchmark, SIMDe (AVX-512 kernels emulated on AVX2 machines), Python 3 with
# pip (model fetch), Go (Go binding tests), cpp-httplib (`zerfoo serve`, linked into the CLI only),
# ccache (scripts/ccache_env.sh: a later test run recompiles only what changed), stb_image
# (libstb-dev: image decoding compiled into the library, src/vision/).
set -euo pipefail

pkgs=(cmake ninja-build g++ gcc make pkg-config libgtest-dev nlohmann-json3-dev doctest-dev
      libbenchmark-dev libsimde-dev python3 python3-pip unzip curl ca-certificates binutils
      libcpp-httplib-dev ccache libstb-dev)
recommends=()
if [ "${1:-}" = "--no-recommends" ]; then recommends=(--no-install-recommends); shift; fi
[ $# -gt 0 ] && pkgs=("$@")  # other scripts' extra packages: scripts/install_deps.sh PKG...
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${recommends[@]}" "${missing[@]}" >&2
fi
