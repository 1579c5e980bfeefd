#!/usr/bin/env bash
# Builds the `topk` Python package as an abi3 wheel (CPython >= 3.9, Linux x86_64) into .wheel/
# (git-ignored), for a GPU host without a Rust toolchain: carry .wheel there and run
#   python3 -m pip install --no-deps --no-index .wheel/topk-*.whl
# The wheel is checked against manylinux_2_34 (glibc 2.34; the CLI built here needs 2.35, so
# any host that runs it takes the wheel). maturin comes from PyPI into .dev/maturin, once;
# .wheel/deps gets pytest's wheels for hosts without pytest. bench/python_gpu.sh runs the GPU
# tests and benchmarks there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

tools=.dev/maturin
if [[ ! -x "$tools/bin/maturin" ]]; then
  python3 -m venv "$tools"
  "$tools/bin/python" -m pip install --disable-pip-version-check -q "maturin>=1.7,<2"
fi
rm -rf .wheel
CARGO_TARGET_DIR="$PWD/topk-python/target" "$tools/bin/maturin" build --release \
  --manifest-path topk-python/Cargo.toml --compatibility manylinux_2_34 --out .wheel
# TOPK_WHEEL_UNVERIFIED=1: also a wheel whose GPU path runs the kernels still waiting for their
# GPU tests (feature gpu-unverified), into .wheel/unverified, for bench/verify_gated.sh.
if [[ "${TOPK_WHEEL_UNVERIFIED:-}" == 1 ]]; then
  CARGO_TARGET_DIR="$PWD/topk-python/target/unverified" "$tools/bin/maturin" build --release \
    --manifest-path topk-python/Cargo.toml --compatibility manylinux_2_34 \
    --features extension-module,gpu-unverified --out .wheel/unverified
fi
# pytest for hosts that lack it (pure-Python wheels; bench/python_gpu.sh installs them there).
"$tools/bin/python" -m pip download --disable-pip-version-check -q --only-binary=:all: \
  --python-version 3.12 --implementation py --platform any -d .wheel/deps \
  pytest iniconfig packaging pluggy pygments
ls -la .wheel .wheel/deps
