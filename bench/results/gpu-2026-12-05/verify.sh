#!/usr/bin/env bash
# The wheel in .wheel/open was built from this commit with gpu_refusal reduced to what code
# generation lacks (what the gpu-unverified feature does since: TOPK_WHEEL_UNVERIFIED=1
# scripts/python-wheel.sh builds it into .wheel/unverified; bench/verify_gated.sh is the
# maintained form of this script).
# GPU verification, every test binary at once (NVRTC compiles on all cores into one disk cache).
set -u
T0=$SECONDS
export TOPK_CACHE_DIR=/tmp/kc
LIMIT=${LIMIT:-370}
site=/tmp/site-open
python3 -m pip install -q --no-index --no-deps --target $site .wheel/open/topk-*.whl
python3 -c "import pytest" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --target $site .wheel/deps/*.whl
bg() { local name=$1; shift; ( local s=$SECONDS; timeout "$LIMIT" "$@" > "$OUT/$name.log" 2>&1; echo "$name rc=$? $((SECONDS-s)) s" >> "$OUT/summary.txt" ) & }
bg gpu_prior .gpu/gpu_prior --ignored --test-threads=3 --nocapture
bg gpu_half .gpu/gpu_half --ignored --test-threads=5
bg gpu_call .gpu/gpu_call --ignored --test-threads=7
bg py_gpu env PYTHONPATH=$site python3 -m pytest -p no:cacheprovider -ra -v \
  topk-python/tests/test_gpu_call.py topk-python/tests/test_interface.py topk-python/tests/test_cuda_call_marshalling.py
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
bg mem_prior env TOPK_SANITIZE_MAPS=persistent,rowlocal,cluster $san --tool memcheck --error-exitcode 1 .gpu/gpu_prior --ignored --exact sanitizer_workload_prior --test-threads=1
bg mem_half env TOPK_SANITIZE_MAPS=persistent,rowlocal,kvsplit,cluster,staged $san --tool memcheck --error-exitcode 1 .gpu/gpu_half --ignored --exact sanitizer_workload_sixteen_bit --test-threads=1
bg race_call env TOPK_SANITIZE_QUICK=1 TOPK_SANITIZE_MAPS=persistent,cluster,rowlocal $san --tool racecheck --error-exitcode 1 .gpu/gpu_call --ignored --exact sanitizer_workload --test-threads=1
wait
cat "$OUT/summary.txt"
for f in gpu_prior gpu_half gpu_call mem_prior mem_half race_call; do echo "== $f"; grep -E "^test |test result|panicked" "$OUT/$f.log" | grep -v " ok$" | head -20; grep -c " ok$" "$OUT/$f.log"; done
echo "== py"; grep -E "passed|failed|FAILED" "$OUT/py_gpu.log" | tail -15
du -sh /tmp/kc; tar czf "$OUT/kernel-cache.tgz" -C /tmp kc; ls -la "$OUT/kernel-cache.tgz"
echo "total $((SECONDS-T0)) s"
