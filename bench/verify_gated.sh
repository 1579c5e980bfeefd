#!/usr/bin/env bash
# The GPU tests of every kernel path `topk_runtime::cuda::gpu_refusal` still holds back (16-bit
# scores, a row's prior and boundary output, the page table's row map) and of the call interface,
# all at once: the Rust GPU tests (which plan with `PlanRequest::allow_unverified`), the Python
# package's CUDA tests from a wheel built with the `gpu-unverified` feature, and
# compute-sanitizer's memcheck, racecheck and synccheck on their workloads. The jobs run side by
# side (NVRTC compiles on every core; the tests time nothing), each under LIMIT seconds; the
# sanitizer runs start once the test binaries are done, so their kernels come from the disk
# cache the tests filled. Run on
# the GPU machine from the repository root with .gpu/ (scripts/gpu-bundle.sh) and
# .wheel/unverified/ (TOPK_WHEEL_UNVERIFIED=1 scripts/python-wheel.sh):
#
#   OUT=./out LIMIT=500 bash bench/verify_gated.sh
#
# Logs go to $OUT/verify/<job>.log and a line per job to $OUT/verify/summary.txt. Exit status 1
# if a job failed or ran out of time, 2 if it could not start. A path passes when every job that
# covers it passed; then its line in `gpu_refusal` can go. ONLY=gpu_prior,python,racecheck-half
# (job names as in the summary) runs those jobs alone. The Python tests run in PYTEST_JOBS
# processes side by side (bench/pytest_parallel.py), since they spend their time in NVRTC.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-./out}
LIMIT=${LIMIT:-500}
ONLY=${ONLY:-}
PYTEST_JOBS=${PYTEST_JOBS:-12}
log=$OUT/verify
mkdir -p "$log"
: > "$log/summary.txt"
for binary in gpu_call gpu_half gpu_prior; do
  [[ -x .gpu/$binary ]] || { echo ".gpu/$binary not found: run scripts/gpu-bundle.sh first" >&2; exit 2; }
done
sanitizer=$(command -v compute-sanitizer \
  || ls "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" 2>/dev/null \
  || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)

# wanted NAME: whether ONLY (when set) names the job.
wanted() { [[ -z "$ONLY" || ",$ONLY," == *",$1,"* ]]; }

# job NAME COMMAND...: runs COMMAND in the background under the time limit (if wanted).
job() {
  local name=$1
  shift
  started=
  wanted "$name" || return 0
  (
    local start=$SECONDS
    timeout "$LIMIT" "$@" > "$log/$name.log" 2>&1
    local rc=$?
    local word=ok
    ((rc == 0)) || word=FAILED
    ((rc == 124)) && word="OUT OF TIME"
    echo "$word $name ($((SECONDS - start)) s)" >> "$log/summary.txt"
  ) &
  started=$!
}
# sanitize NAME TOOL MAPS BINARY TEST [quick]: TEST of BINARY under compute-sanitizer's TOOL.
sanitize() {
  local name=$1 tool=$2 maps=$3 binary=$4 test=$5 quick=${6:-}
  wanted "$name" || return 0
  if [[ -z "$sanitizer" ]]; then
    echo "FAILED $name (compute-sanitizer not found: install the CUDA toolkit or set CUDA_HOME)" >> "$log/summary.txt"
    return
  fi
  job "$name" env ${quick:+TOPK_SANITIZE_QUICK=1} TOPK_SANITIZE_MAPS="$maps" "$sanitizer" \
    --tool "$tool" --error-exitcode 1 ".gpu/$binary" --ignored --exact "$test" --test-threads=1
}

tests=()
# test_job NAME COMMAND...: a job the sanitizer runs wait for.
test_job() {
  job "$@"
  if [[ -n $started ]]; then tests+=("$started"); fi
}
test_job gpu_call .gpu/gpu_call --ignored --test-threads=4 --nocapture --skip warm_the_kernel_cache_for_sm90a
test_job gpu_half .gpu/gpu_half --ignored --test-threads=5 --nocapture
test_job gpu_prior .gpu/gpu_prior --ignored --test-threads=3 --nocapture
if ! wanted python; then
  :
elif [[ -f $(ls .wheel/unverified/topk-*.whl 2>/dev/null | head -1) ]]; then
  site=${TOPK_SITE:-/tmp/topk-site-unverified}
  if ! python3 -m pip install -q --no-index --no-deps --upgrade --target "$site" .wheel/unverified/topk-*.whl \
    || ! { python3 -c "import pytest" 2>/dev/null \
      || python3 -m pip install -q --no-index --no-deps --upgrade --target "$site" .wheel/deps/*.whl; }; then
    echo "FAILED python (installing the unverified wheel or pytest)" >> "$log/summary.txt"
  else
    job python env PYTHONPATH="$site" python3 bench/pytest_parallel.py -j "$PYTEST_JOBS" \
    topk-python/tests/test_gpu_call.py topk-python/tests/test_interface.py \
    topk-python/tests/test_cuda_call_marshalling.py topk-python/tests/test_gpu.py
  fi
else
  echo "FAILED python (.wheel/unverified not found: TOPK_WHEEL_UNVERIFIED=1 scripts/python-wheel.sh)" >> "$log/summary.txt"
fi
if ((${#tests[@]})); then wait "${tests[@]}"; fi
all=persistent,rowlocal,kvsplit,cluster,staged
sanitize memcheck-call memcheck $all gpu_call sanitizer_workload
sanitize memcheck-half memcheck $all gpu_half sanitizer_workload_sixteen_bit
sanitize memcheck-prior memcheck persistent,rowlocal,cluster gpu_prior sanitizer_workload_prior
for tool in racecheck synccheck; do
  sanitize "$tool-call" "$tool" persistent,cluster,rowlocal gpu_call sanitizer_workload quick
  sanitize "$tool-half" "$tool" persistent,cluster,rowlocal gpu_half sanitizer_workload_sixteen_bit
  sanitize "$tool-prior" "$tool" persistent,rowlocal,cluster gpu_prior sanitizer_workload_prior
done
wait
sort -k2 "$log/summary.txt"
! grep -qv "^ok " "$log/summary.txt"
