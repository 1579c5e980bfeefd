#!/usr/bin/env bash
# Installs libnvrtc from PyPI into .dev/nvrtc (git-ignored), so NVRTC can compile the generated
# CUDA on a machine without the CUDA toolkit or a GPU. Does nothing when this version is already
# there. Prints the folder to put on LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

version=13.0.88
target=.dev/nvrtc
lib="$PWD/$target/nvidia/cu13/lib"

if [[ ! -d "$target/nvidia_cuda_nvrtc-$version.dist-info" || ! -e "$lib/libnvrtc.so.13" ]]; then
  # Progress goes to stderr: stdout carries only the library folder.
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --disable-pip-version-check --upgrade \
    --target "$target" "nvidia-cuda-nvrtc==$version" >&2
fi
[[ -e "$lib/libnvrtc.so.13" ]] || {
  echo "error: $lib/libnvrtc.so.13 is missing after installing nvidia-cuda-nvrtc==$version" >&2
  exit 1
}
echo "$lib"
