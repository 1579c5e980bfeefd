#!/usr/bin/env bash
# Codegen versions 33 (356ea8d: lean coarse bin) and 35 (branch lean-coarse-bin: + ranking sweep
# one compare per comparison) against main (27): A/B on short-row prefill calls, decode batches
# and the matrix; then gpu_exact in full, gpu_half and gpu_prior, memcheck and racecheck on the
# persistent and row-local kernels, all on version 35 (.gpu/v35/, kernels cached in kcache-v35).
set -uo pipefail
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
export TOPK_CACHE_DIR=/tmp/kcache; mkdir -p $TOPK_CACHE_DIR
tar xJf .gpu/kcache-v27.tar.xz -C $TOPK_CACHE_DIR; tar xJf .gpu/kcache-v35.tar.xz -C $TOPK_CACHE_DIR
start=$SECONDS
OUT=$R/ab VARIANTS="main 356ea8d lean-coarse-bin" ROUNDS=2 \
  SHAPES="16384x16384,16384x32768,4096x8192,2048x12288,8192x24576 1x262144,8x1048576,64x131072,256x131072 matrix" \
  timeout 260 bash bench/ab.sh > $R/ab.txt 2>&1
echo "ab rc=$? $((SECONDS-start)) s"; tail -45 $R/ab.txt; pack
(timeout 200 .gpu/v35/gpu_exact --ignored --test-threads=4 > $R/gpu_exact.txt 2>&1; echo "gpu_exact rc=$?" >> $R/gpu_exact.txt) &
(timeout 200 .gpu/v35/gpu_half --ignored --test-threads=3 > $R/gpu_half.txt 2>&1; echo "gpu_half rc=$?" >> $R/gpu_half.txt) &
(timeout 200 .gpu/v35/gpu_prior --ignored --test-threads=3 > $R/gpu_prior.txt 2>&1; echo "gpu_prior rc=$?" >> $R/gpu_prior.txt) &
wait
grep -hE "test result|panicked|rc=" $R/gpu_exact.txt $R/gpu_half.txt $R/gpu_prior.txt; echo "tests $((SECONDS-start)) s"; pack
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck racecheck; do
  q=; [[ $tool == racecheck ]] && q=1
  env ${q:+TOPK_SANITIZE_QUICK=1} TOPK_SANITIZE_MAPS=persistent,rowlocal timeout 90 $san --tool $tool --error-exitcode 1 \
    .gpu/v35/gpu_call --ignored --exact sanitizer_workload --test-threads=1 > $R/san-$tool.txt 2>&1
  echo "sanitizer $tool persistent,rowlocal rc=$? $((SECONDS-start)) s" | tee -a $R/san-$tool.txt; tail -3 $R/san-$tool.txt
done
echo "end $((SECONDS-start)) s"; pack
# Nsight Compute on version 35's pool at 16384 x 16K (compare with bench/results/gpu-2026-12-06b/call2-ncu-pool-tests/).
if (( SECONDS - start < 500 )); then
  BIN=.gpu/operator-matrix-lean-coarse-bin KERNEL=regex:topk_persistent OUT=$R/ncu timeout 60 bash bench/ncu-kernel.sh indexer 16384x16384 > $R/ncu.txt 2>&1
  echo "ncu rc=$? $((SECONDS-start)) s"; head -20 $R/ncu.txt
  grep -E "Duration|Executed Ipc Active|Issue Slots Busy|DRAM Throughput" $R/ncu/*-details.txt | head; rm -f $R/ncu/*.ncu-rep; pack
fi
