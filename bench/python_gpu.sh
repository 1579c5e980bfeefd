#!/usr/bin/env bash
# The Python package on a GPU host: the GPU tests, the Python overhead benchmark and the peer
# benchmark with `topk` as one more selector. Run from the repository root with .wheel/ (built
# by scripts/python-wheel.sh) and, for the comparisons with the peers, .peers/ (the peer kit):
#
#   OUT=./out bash bench/python_gpu.sh
#
# Needs python3 with PyTorch (CUDA), NumPy and, for the DLPack test, CuPy; pytest comes from
# .wheel/deps when it is not installed. Logs and JSON go to $OUT/python/. Exit status 1 if a
# step failed. PYTEST_K="EXPR" runs the GPU tests that pytest -k EXPR selects.
set -uo pipefail
OUT=${OUT:-./out}
mkdir -p "$OUT/python"
site=${TOPK_SITE:-/tmp/topk-site}
failed=()
run() {
  local name=$1
  shift
  local start=$SECONDS
  if "$@" > "$OUT/python/$name.log" 2>&1; then
    echo "ok     $name ($((SECONDS - start)) s)"
  else
    echo "FAILED $name ($((SECONDS - start)) s): $OUT/python/$name.log"
    failed+=("$name")
  fi
}
python3 -m pip install -q --no-index --no-deps --upgrade --target "$site" .wheel/topk-*.whl || exit 2
if ! python3 -c "import pytest" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --upgrade --target "$site" .wheel/deps/*.whl || exit 2
fi
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
if [[ -d .peers ]]; then
  tvm=${TVM_FFI_TARGET:-/tmp/tvmffi}
  python3 -c "import tvm_ffi" 2>/dev/null ||
    python3 -m pip install -q --no-index --no-deps --target "$tvm" .peers/apache_tvm_ffi-*.whl
  export PYTHONPATH="$PYTHONPATH:$tvm" TOPK_PEERS_DIR="$PWD/.peers"
fi
# --durations: the slowest cases in the log (the suite compiles its kernels on this host unless
# TOPK_CACHE_DIR holds them). PYTEST_K selects cases, e.g. PYTEST_K="not every_option" (a part
# of the suite that fits a time limit).
run test_gpu python3 -m pytest -p no:cacheprovider -ra -v --durations=30 ${PYTEST_K:+-k "$PYTEST_K"} \
  topk-python/tests/test_gpu.py \
  topk-python/tests/test_torch_cpu.py topk-python/tests/test_eager_cuda_path.py \
  topk-python/tests/test_interface.py topk-python/tests/test_gpu_call.py \
  topk-python/tests/test_cuda_call_marshalling.py
run overhead python3 bench/python_overhead.py --json-out "$OUT/python/overhead.json"
# The peer benchmark scores come from the project's generator kernel (.gpu/gen.cu, or written by
# .gpu/topk, both from scripts/gpu-bundle.sh).
gen=.gpu/gen.cu
[[ -f $gen || ! -x .gpu/topk ]] || { gen="$OUT/python/gen.cu"; .gpu/topk codegen --generator > "$gen"; }
if [[ -d .peers && -f $gen ]]; then
  run peers python3 bench/peers/peers_bench.py --shapes "${PEER_SHAPES:-matrix}" --profile indexer \
    --gen-cu "$gen" --peers topk,sglang,flashinfer --kit .peers --json-out "$OUT/python/peers-topk.json"
else
  echo "skip   peers (needs .peers/ and .gpu/gen.cu or .gpu/topk)"
fi
cat "$OUT/python/overhead.log" 2>/dev/null
if ((${#failed[@]})); then
  echo "failed: ${failed[*]}"
  exit 1
fi
