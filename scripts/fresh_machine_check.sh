#!/usr/bin/env bash
# Rehearses CI's fresh machine (issue #26): purges every Debian package the project's scripts
# install that the base image does not ship, removes what they put under ~/.cache/zerfoo (but the
# models, unless --models), then runs the README's test command in a clean clone of HEAD and
# prints its time. Destructive for this machine's packages: meant for a throwaway machine or a
# session's sandbox. Usage: scripts/fresh_machine_check.sh [--models] [--dry-run]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# The base image (Debian 12 of the CI kind) ships cmake, ninja-build, g++, gcc, make, pkg-config,
# libgtest-dev/googletest, python3 with pip, curl, unzip, binutils, llvm-14 (not libclang), Go and
# Rust (rustup). Every
# other package below is installed by scripts/install_deps.sh for a stage that needs it.
purge=(nlohmann-json3-dev doctest-dev libbenchmark-dev libsimde-dev libcpp-httplib-dev ccache
       clang clang-14 libclang-dev libclang-14-dev libclang1-14 libclang-common-14-dev libclang-rt-14-dev
       abigail-tools doxygen nginx nginx-common
       mono-mcs mono-runtime nunit-console libnunit-cil-dev g++-aarch64-linux-gnu qemu-user
       flac vorbis-tools lame)
models=0; dry=0
for a in "$@"; do
  case "$a" in --models) models=1 ;; --dry-run) dry=1 ;; *) echo "unknown option $a" >&2; exit 2 ;; esac
done
installed=()
for p in "${purge[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" && installed+=("$p")
done
echo "purging: ${installed[*]:-(none installed)}"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ "$dry" = 0 ]; then
  if [ ${#installed[@]} -gt 0 ]; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get purge -y -q "${installed[@]}" >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get autoremove --purge -y -q >/dev/null
  fi
  # What the scripts cached: the pip-installed openai client, synthesized family models, nvcc
  # wheels, Go; the models too with --models.
  cache="$HOME/.cache/zerfoo"
  if [ -d "$cache" ]; then
    for d in "$cache"/*; do
      [ "$models" = 0 ] && [ "$(basename "$d")" = models ] && continue
      rm -rf "$d"
    done
  fi
  [ "$models" = 1 ] && rm -rf "${ZERFOO_MODELS:-$cache/models}"
fi
# The remaining libclang check: bindgen must not find a C libclang before the test installs one.
if ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/*/libclang.so.1* >/dev/null 2>&1; then
  echo "note: a C libclang is still present (not from a purged package):" /usr/lib/llvm-*/lib/libclang.so* 2>/dev/null
fi
[ "$dry" = 1 ] && exit 0
work="$(mktemp -d)"
git clone -q "$root" "$work/zerfoo"
cd "$work/zerfoo"
t0=$(date +%s)
rc=0
scripts/test.sh || rc=$?
echo "fresh_machine_check: scripts/test.sh exited $rc after $(( $(date +%s) - t0 )) s in $work/zerfoo"
exit "$rc"
