#!/usr/bin/env bash
# Codegen version 31 (pool workers claim a row ahead and send its exact-route scores to L2)
# against version 27: A/B on short-row prefill shapes, decode batches and the operator matrix;
# a 256-thread pool on the short rows; phase probe; then gpu_exact in full, memcheck and
# racecheck on the persistent pool, and the Python GPU tests, all on version 31.
set -uo pipefail
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
export TOPK_CACHE_DIR=/tmp/kcache; mkdir -p $TOPK_CACHE_DIR
tar xJf .gpu/kcache-v27.tar.xz -C $TOPK_CACHE_DIR; tar xJf .gpu/kcache-v31.tar.xz -C $TOPK_CACHE_DIR
start=$SECONDS
OUT=$R/ab VARIANTS="v27 next-row-prefetch" ROUNDS=2 \
  SHAPES="16384x16384,16384x8192,16384x32768,4096x8192,2048x12288,1024x8192 64x131072,256x131072,1x262144,8x1048576 matrix" \
  timeout 220 bash bench/ab.sh > $R/ab.txt 2>&1
echo "ab rc=$? $((SECONDS-start)) s"; tail -40 $R/ab.txt; pack
for p in indexer iid; do
  timeout 40 .gpu/operator-matrix $p "16384x16384,16384x8192,16384x32768,4096x8192" \
    "k=2048,map=persistent,propose=sampled(stride=128,rho=1.5,rescue=2,exact_below=24576),threads=256" 2>&1 | grep '^{' >> $R/t256.jsonl
done
python3 - $R/t256.jsonl <<'PY2' | tee $R/t256.txt
import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l)
    print(f'{r["profile"]:8} {r["rows"]:>6}x{r["width"]:<6} {r["median_ms"]:8.4f} ms x{r["median_ms"]/r["floor_ms"]:5.2f} exact={r["exact"]} grid={r["grid"]}x{r["ctas_per_sm"]} {r["spec"][:90]}')
PY2
for s in 16384x16384 16384x32768; do
  TOPK_PHASE_PROBE=1 timeout 30 .gpu/operator-matrix indexer $s 2>&1 | grep -E '^\{"phases' | sed "s/^/v31 $s /" >> $R/probe.txt
done
cat $R/probe.txt; echo "bench $((SECONDS-start)) s"; pack
timeout 200 .gpu/gpu_exact --ignored --test-threads=2 > $R/gpu_exact.txt 2>&1; echo "gpu_exact rc=$?" >> $R/gpu_exact.txt
grep -E "^test |test result|panicked|rc=" $R/gpu_exact.txt; echo "gpu_exact $((SECONDS-start)) s"; pack
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck racecheck; do
  q=; [[ $tool == racecheck ]] && q=1
  env ${q:+TOPK_SANITIZE_QUICK=1} TOPK_SANITIZE_MAPS=persistent timeout 120 $san --tool $tool --error-exitcode 1 \
    .gpu/gpu_call --ignored --exact sanitizer_workload --test-threads=1 > $R/san-$tool.txt 2>&1
  echo "sanitizer $tool persistent rc=$? $((SECONDS-start)) s" | tee -a $R/san-$tool.txt
  tail -4 $R/san-$tool.txt
done
pack
if (( SECONDS - start < 480 )); then
  site=/tmp/topk-site
  python3 -m pip install -q --no-index --no-deps --upgrade --target $site .wheel/topk-*.whl
  python3 -c "import pytest" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --upgrade --target $site .wheel/deps/*.whl
  PYTHONPATH=$site timeout $((570 - (SECONDS - start))) python3 -m pytest -p no:cacheprovider -ra -q topk-python/tests/test_gpu.py \
    topk-python/tests/test_torch_cpu.py topk-python/tests/test_eager_cuda_path.py topk-python/tests/test_interface.py \
    topk-python/tests/test_gpu_call.py topk-python/tests/test_cuda_call_marshalling.py > $R/pytest.txt 2>&1
  echo "pytest rc=$? $((SECONDS-start)) s" | tee -a $R/pytest.txt; tail -15 $R/pytest.txt
fi
echo "end $((SECONDS-start)) s"; pack
