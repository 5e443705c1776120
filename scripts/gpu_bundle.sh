#!/usr/bin/env bash
# Prepares gpu-bundle/ (git-ignored, small enough to carry to a GPU machine that has no network):
# the Release build's binaries with the CUDA kernel library, and the pure-Python packages that
# scripts/synth_models.py needs (gguf, pyyaml, tqdm). numpy is not bundled (~60 MiB): the GPU
# machine's python3 must have it (GPU images usually do).
# Usage: scripts/gpu_bundle.sh   then carry gpu-bundle and run scripts/gpu_test.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
nvcc="$(scripts/install_cuda_toolkit.sh)"
# -DZF_CLI_SERVE=OFF: the GPU machine may lack libcpp-httplib, which `zerfoo serve` links.
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DZF_BUILD_KERNELS=ON -DZF_NVCC="$nvcc" \
  -DZF_CLI_SERVE=OFF >/dev/null
cmake --build build-gpu -j2 --target zerfoo zerfoo_cli zerfoo_kernels zerfoo_gpu_tests
rm -rf gpu-bundle && mkdir -p gpu-bundle/bin gpu-bundle/py
cp -a build-gpu/libzerfoo.so* build-gpu/libzerfoo_kernels.so build-gpu/zerfoo build-gpu/tests/zerfoo_gpu_tests gpu-bundle/bin/
python3 -m pip install --no-deps --disable-pip-version-check -q --target gpu-bundle/py gguf pyyaml tqdm
find gpu-bundle -name __pycache__ -type d -prune -exec rm -rf {} +
du -sh gpu-bundle
