#!/usr/bin/env bash
# Installs the CUDA compiler (nvcc) and the static CUDA runtime from PyPI into a cache outside
# git and prints the path of nvcc. Works on a fresh Debian machine with python3 + pip; no GPU or
# driver is needed to compile.
#
# Why CUDA 13 and not the nvidia-*-cu12 wheels: the cu12 wheels of nvidia-cuda-nvcc (every
# version from 12.0 to 12.9) ship only ptxas and libnvvm, not the nvcc driver, cicc, fatbinary
# or nvlink. The CUDA 13 wheels (nvidia-cuda-nvcc, nvidia-nvvm, nvidia-cuda-crt,
# nvidia-cuda-runtime, nvidia-cuda-cccl) install one merged tree, nvidia/cu13/{bin,include,lib,
# nvvm}, that nvcc can use as its toolkit root after one symlink (lib64 -> lib, the directory
# nvcc.profile passes to the linker). A library built with it needs an NVIDIA driver >= 580.
#
# Usage: scripts/install_cuda_toolkit.sh   -> prints .../nvidia/cu13/bin/nvcc
# Env: ZF_CUDA_CACHE (default ~/.cache/zerfoo/cuda), ZF_CUDA_PIP_VERSION (a pinned release).
set -euo pipefail
cache="${ZF_CUDA_CACHE:-$HOME/.cache/zerfoo/cuda}"
ver="${ZF_CUDA_PIP_VERSION:-13.0.88}"
dest="$cache/$ver"
root="$dest/nvidia/cu13"
nvcc="$root/bin/nvcc"

if [ ! -x "$nvcc" ] || [ ! -f "$root/lib/libcudart_static.a" ] || [ ! -x "$root/nvvm/bin/cicc" ]; then
  python3 -m pip --version >/dev/null 2>&1 || {
    echo "install_cuda_toolkit: python3 -m pip is missing (apt-get install python3-pip)" >&2; exit 2; }
  rm -rf "$dest.tmp"
  # Versions of one CUDA release (the runtime and cccl wheels have their own patch numbers).
  # --break-system-packages is harmless with --target and needed by Debian's pip (PEP 668).
  pip_flags=(--no-deps --disable-pip-version-check --quiet --target "$dest.tmp")
  python3 -m pip install --help | grep -q -- --break-system-packages && pip_flags+=(--break-system-packages)
  python3 -m pip install "${pip_flags[@]}" \
    "nvidia-cuda-nvcc==$ver" "nvidia-nvvm==$ver" "nvidia-cuda-crt==$ver" \
    "nvidia-cuda-runtime==13.0.96" "nvidia-cuda-cccl==13.0.85" >&2
  rm -rf "$dest"
  mv "$dest.tmp" "$dest"
fi
ln -sfn lib "$root/lib64"  # nvcc.profile links with -L$(TOP)/lib64
"$nvcc" --version >/dev/null
echo "$nvcc"
