# Shared by the GPU benchmarks that drive the Python package (bench/envelope.sh,
# bench/sixteen-bit.sh); sourced, after they set PY, SITE, KIT and define die and note.

# python_env PEERS: checks torch (with a GPU), cupy and numpy; installs .wheel/topk-*.whl into
# $SITE (else needs an importable topk) and the kit's tvm_ffi; PEERS names what a missing kit
# makes unavailable.
python_env() {
  "$PY" - <<'PYEOF' || die "python3 needs torch (with a visible GPU), cupy and numpy"
import sys
import torch, cupy, numpy
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA device")
print(f"python {sys.version.split()[0]} | torch {torch.__version__} (CUDA {torch.version.cuda}) "
      f"| cupy {cupy.__version__} | numpy {numpy.__version__} | {torch.cuda.get_device_name(0)}")
PYEOF
  shopt -s nullglob
  local wheels=(.wheel/topk-*.whl)
  if [ ${#wheels[@]} -gt 0 ]; then
    "$PY" -m pip install -q --no-index --no-deps --upgrade --target "$SITE" "${wheels[@]}" \
      || die "installing ${wheels[*]} failed"
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  else
    "$PY" -c "import topk" 2>/dev/null \
      || die "no .wheel/topk-*.whl and no importable topk: build it with scripts/python-wheel.sh"
  fi
  [ -f "$KIT/run_peers.py" ] || note "no $KIT/run_peers.py: $1 will be unavailable"
  if ! "$PY" -c "import tvm_ffi" 2>/dev/null; then
    local tvm=${TVM_FFI_TARGET:-/tmp/tvmffi}
    local tvm_wheels=("$KIT"/apache_tvm_ffi-*.whl)
    if [ ${#tvm_wheels[@]} -gt 0 ]; then
      "$PY" -m pip install -q --no-index --no-deps --target "$tvm" "${tvm_wheels[@]}" \
        || note "installing ${tvm_wheels[*]} failed"
    fi
    export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$tvm" TVM_FFI_TARGET="$tvm"
  fi
}

# generator_source DIR: the score generator's CUDA source into DIR/gen.cu (GEN_CU, .gpu/gen.cu
# or `.gpu/topk codegen --generator`).
generator_source() {
  if [ -n "${GEN_CU:-}" ]; then
    [ -f "$GEN_CU" ] || die "GEN_CU=$GEN_CU does not exist"
    cp "$GEN_CU" "$1/gen.cu"
  elif [ -f .gpu/gen.cu ]; then
    cp .gpu/gen.cu "$1/gen.cu"
  elif [ -x .gpu/topk ]; then
    .gpu/topk codegen --generator > "$1/gen.cu" || die "\`.gpu/topk codegen --generator\` failed"
  else
    die "no generator source: carry .gpu/gen.cu or .gpu/topk (scripts/gpu-bundle.sh), or set GEN_CU"
  fi
}
