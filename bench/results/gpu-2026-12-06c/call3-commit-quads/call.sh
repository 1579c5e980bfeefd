#!/usr/bin/env bash
# Codegen version 37 (branch commit-quads, with the row stream's fix): the exact routes' commit
# pass by vectors, one shared atomic per vector, against main (33): A/B on short-row prefill
# calls, decode batches and three matrix shapes; then, side by side, gpu_exact in full,
# gpu_half, gpu_prior and the Python GPU suite (wheel of the same revision); memcheck and
# racecheck on the persistent and row-local kernels; Nsight Compute on 37 at 16384 x 16K.
set -uo pipefail
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
export TOPK_CACHE_DIR=/tmp/kcache; mkdir -p $TOPK_CACHE_DIR
tar xJf .gpu/kcache-v37.tar.xz -C $TOPK_CACHE_DIR
start=$SECONDS
OUT=$R/ab VARIANTS="v33 commit-quads" ROUNDS=3 \
  SHAPES="16384x16384,16384x32768,16384x8192,4096x8192,1024x8192,2048x12288,8192x24576 1x262144,8x1048576,64x131072 512x131072,2048x262144,4096x1048576" \
  timeout 150 bash bench/ab.sh > $R/ab.txt 2>&1
echo "ab rc=$? $((SECONDS-start)) s"; tail -30 $R/ab.txt; pack
(timeout 200 .gpu/v37/gpu_exact --ignored --test-threads=4 > $R/gpu_exact.txt 2>&1; echo "gpu_exact rc=$?" >> $R/gpu_exact.txt) &
(timeout 150 .gpu/v37/gpu_half --ignored --test-threads=3 > $R/gpu_half.txt 2>&1; echo "gpu_half rc=$?" >> $R/gpu_half.txt) &
(timeout 150 .gpu/v37/gpu_prior --ignored --test-threads=3 > $R/gpu_prior.txt 2>&1; echo "gpu_prior rc=$?" >> $R/gpu_prior.txt) &
(OUT=$R timeout $((500 - (SECONDS - start))) bash bench/python_gpu.sh > $R/python.txt 2>&1; echo "python rc=$?" >> $R/python.txt) &
wait
grep -hE "test result|panicked|rc=" $R/gpu_exact.txt $R/gpu_half.txt $R/gpu_prior.txt; tail -5 $R/python.txt
grep -E "passed|failed" $R/python/test_gpu.log | tail -3; echo "tests $((SECONDS-start)) s"; pack
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck racecheck; do
  q=; [[ $tool == racecheck ]] && q=1
  env ${q:+TOPK_SANITIZE_QUICK=1} TOPK_SANITIZE_MAPS=persistent,rowlocal timeout 40 $san --tool $tool --error-exitcode 1 \
    .gpu/v37/gpu_call --ignored --exact sanitizer_workload --test-threads=1 > $R/san-$tool.txt 2>&1
  echo "sanitizer $tool persistent,rowlocal rc=$? $((SECONDS-start)) s" | tee -a $R/san-$tool.txt; tail -2 $R/san-$tool.txt
done
pack
if (( SECONDS - start < 555 )); then
  BIN=.gpu/operator-matrix-commit-quads KERNEL=regex:topk_persistent OUT=$R/ncu timeout 30 bash bench/ncu-kernel.sh indexer 16384x16384 > $R/ncu.txt 2>&1
  echo "ncu rc=$? $((SECONDS-start)) s"
  grep -E "Duration|Executed Ipc Active|Issue Slots Busy|DRAM Throughput|Executed Instructions  " $R/ncu/*-details.txt | head; rm -f $R/ncu/*.ncu-rep; pack
fi
echo "end $((SECONDS-start)) s"
