#!/usr/bin/env bash
# The Python package's tests: builds and installs `pip install ./topk-python` into a fresh
# virtualenv (.dev/pytest-venv, git-ignored), with NumPy, pytest and PyTorch from PyPI, then runs
# pytest on bench/peers and topk-python/tests. PyTorch is pinned to the version of the GPU host the CUDA path is
# measured on (TOPK_TEST_TORCH_VERSION picks another); PyPI's build is the CUDA one (about 5 GB
# installed; it runs on the CPU too); TOPK_TEST_TORCH=0 leaves it out, and its tests then skip.
# The GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv=.dev/pytest-venv
rm -rf "$venv"
python3 -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
"${pip[@]}" install -q --upgrade pip
"${pip[@]}" install -q numpy pytest
if [[ "${TOPK_TEST_TORCH:-1}" != 0 ]]; then
  "${pip[@]}" install -q "torch==${TOPK_TEST_TORCH_VERSION:-2.11.0}"
fi
"${pip[@]}" install ./topk-python
# The benchmark harness's own tests (bench/peers: call lists, reports, the per-call flow with
# torch on the CPU and CUDA stand-ins); they need no GPU.
"$venv"/bin/python -m pytest -p no:cacheprovider -q bench/peers
# From outside the source tree, so the installed package is the one imported.
cd topk-python/tests
../../"$venv"/bin/python -m pytest -p no:cacheprovider -ra .
