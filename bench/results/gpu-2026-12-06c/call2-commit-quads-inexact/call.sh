#!/usr/bin/env bash
# Codegen versions 36 (branch commit-quads-ballot) and 37 (branch commit-quads): the exact
# routes' commit pass by vectors, one reservation per vector (36: warp-aggregated over the lanes
# present; 37: one shared atomic per lane) against main (33): A/B on short-row prefill calls,
# decode batches and three matrix shapes; then gpu_exact in full, gpu_half and gpu_prior,
# memcheck and racecheck on the persistent and row-local kernels, all on version 37
# (.gpu/v37/, kernels cached in kcache-v37); Nsight Compute on 37 at 16384 x 16K if time is left.
set -uo pipefail
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
export TOPK_CACHE_DIR=/tmp/kcache; mkdir -p $TOPK_CACHE_DIR
tar xJf .gpu/kcache-v37.tar.xz -C $TOPK_CACHE_DIR
start=$SECONDS
OUT=$R/ab VARIANTS="v33 commit-quads-ballot commit-quads" ROUNDS=3 \
  SHAPES="16384x16384,16384x32768,16384x8192,4096x8192,1024x8192,2048x12288,8192x24576 1x262144,8x1048576,64x131072 512x131072,2048x262144,4096x1048576" \
  timeout 230 bash bench/ab.sh > $R/ab.txt 2>&1
echo "ab rc=$? $((SECONDS-start)) s"; tail -32 $R/ab.txt; pack
timeout 200 .gpu/v37/gpu_exact --ignored --test-threads=4 > $R/gpu_exact.txt 2>&1; echo "gpu_exact rc=$?" >> $R/gpu_exact.txt
grep -hE "test result|panicked|rc=" $R/gpu_exact.txt; echo "gpu_exact $((SECONDS-start)) s"; pack
(timeout 130 .gpu/v37/gpu_half --ignored --test-threads=3 > $R/gpu_half.txt 2>&1; echo "gpu_half rc=$?" >> $R/gpu_half.txt) &
(timeout 130 .gpu/v37/gpu_prior --ignored --test-threads=3 > $R/gpu_prior.txt 2>&1; echo "gpu_prior rc=$?" >> $R/gpu_prior.txt) &
wait
grep -hE "test result|panicked|rc=" $R/gpu_half.txt $R/gpu_prior.txt; echo "tests $((SECONDS-start)) s"; pack
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck racecheck; do
  q=; [[ $tool == racecheck ]] && q=1
  env ${q:+TOPK_SANITIZE_QUICK=1} TOPK_SANITIZE_MAPS=persistent,rowlocal timeout 60 $san --tool $tool --error-exitcode 1 \
    .gpu/v37/gpu_call --ignored --exact sanitizer_workload --test-threads=1 > $R/san-$tool.txt 2>&1
  echo "sanitizer $tool persistent,rowlocal rc=$? $((SECONDS-start)) s" | tee -a $R/san-$tool.txt; tail -2 $R/san-$tool.txt
done
pack
if (( SECONDS - start < 540 )); then
  BIN=.gpu/operator-matrix-commit-quads KERNEL=regex:topk_persistent OUT=$R/ncu timeout 50 bash bench/ncu-kernel.sh indexer 16384x16384 > $R/ncu.txt 2>&1
  echo "ncu rc=$? $((SECONDS-start)) s"
  grep -E "Duration|Executed Ipc Active|Issue Slots Busy|DRAM Throughput|Executed Instructions  " $R/ncu/*-details.txt | head; rm -f $R/ncu/*.ncu-rep; pack
fi
echo "end $((SECONDS-start)) s"
