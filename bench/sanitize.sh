#!/usr/bin/env bash
# compute-sanitizer over the call interface's kernels (docs/interface.md): memcheck on one spec
# of every kernel family with every part of the interface (row windows, decode rows, offset and
# page-table transforms, values, sorted output, lowest ties), then racecheck and synccheck on the
# persistent, cluster and row-local kernels with the same parts. The workload is the GPU test
# `sanitizer_workload` (topk-runtime/tests/gpu_call.rs): short rows, every output checked
# against the CPU backend; memcheck also runs `sanitizer_workload_sixteen_bit`
# (topk-runtime/tests/gpu_half.rs), the same with f16 and bf16 scores on every family, and
# every tool `sanitizer_workload_prior` (topk-runtime/tests/gpu_prior.rs), a row's prior and
# boundary output on the families that take them. Run on the GPU machine from the repository
# root with .gpu/ built by scripts/gpu-bundle.sh:
#
#   bash bench/sanitize.sh            # all three tools
#   TOOLS="memcheck" bash bench/sanitize.sh
#
# Needs compute-sanitizer (CUDA toolkit: $CUDA_HOME/bin, /usr/local/cuda/bin or on PATH).
# Exit status 1 when a tool reports an error or a check fails, 2 when it could not run.
# The first run compiles the workload's 27 kernels (NVRTC, then the on-disk kernel cache);
# racecheck and synccheck run the shorter workload (TOPK_SANITIZE_QUICK). Not measured yet:
# expected to take about four minutes in all on one H200.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

sanitizer=$(command -v compute-sanitizer \
  || ls "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" 2>/dev/null \
  || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -z "$sanitizer" ]]; then
  echo "compute-sanitizer not found: install the CUDA toolkit or set CUDA_HOME" >&2
  exit 2
fi
for binary in gpu_call gpu_half gpu_prior; do
  if [[ ! -x .gpu/$binary ]]; then
    echo ".gpu/$binary not found: run scripts/gpu-bundle.sh on the build machine first" >&2
    exit 2
  fi
done

failed=()
# run TOOL MAPS [quick] [BINARY TEST]: the workload on the families MAPS names under one tool
# (quick: two interfaces that use every part between them, one row family); by default
# gpu_call's sanitizer_workload.
run() {
  local tool=$1 maps=$2 quick=${3:-} binary=${4:-gpu_call} test=${5:-sanitizer_workload}
  local start=$SECONDS
  if env ${quick:+TOPK_SANITIZE_QUICK=1} TOPK_SANITIZE_MAPS="$maps" \
    "$sanitizer" --tool "$tool" --error-exitcode 1 \
    ".gpu/$binary" --ignored --exact "$test" --test-threads=1; then
    echo "ok     $tool on $maps, $test ($((SECONDS - start)) s)"
  else
    echo "FAILED $tool on $maps, $test ($((SECONDS - start)) s)"
    failed+=("$tool:$maps:$test")
  fi
}

for tool in ${TOOLS:-memcheck racecheck synccheck}; do
  case $tool in
    memcheck)
      run memcheck persistent,rowlocal,kvsplit,cluster,staged
      run memcheck persistent,rowlocal,kvsplit,cluster,staged "" gpu_half sanitizer_workload_sixteen_bit
      run memcheck persistent,rowlocal,cluster "" gpu_prior sanitizer_workload_prior
      ;;
    racecheck | synccheck)
      run "$tool" persistent,cluster,rowlocal quick
      run "$tool" persistent,rowlocal,cluster "" gpu_prior sanitizer_workload_prior
      ;;
    *) echo "unknown tool $tool (memcheck, racecheck, synccheck)" >&2; exit 2 ;;
  esac
done

if ((${#failed[@]})); then
  echo "failed: ${failed[*]}"
  exit 1
fi
echo "all sanitizer runs passed"
