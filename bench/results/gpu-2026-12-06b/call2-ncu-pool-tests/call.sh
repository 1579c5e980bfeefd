#!/usr/bin/env bash
# Version 27 (main): Nsight Compute on the persistent pool at 16384 x 16384 (indexer, lengths
# 1..16K), then gpu_exact in full and the Python GPU tests, side by side (correctness only).
set -uo pipefail
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r --exclude='*.ncu-rep' --exclude='*-sass.csv'; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
export TOPK_CACHE_DIR=/tmp/kcache; mkdir -p $TOPK_CACHE_DIR; tar xJf .gpu/kcache-v27.tar.xz -C $TOPK_CACHE_DIR
start=$SECONDS
KERNEL=regex:topk_persistent OUT=$R/ncu timeout 170 bash bench/ncu-kernel.sh indexer 16384x16384 > $R/ncu.txt 2>&1
echo "ncu rc=$? $((SECONDS-start)) s"; head -60 $R/ncu.txt; pack
grep -E "Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Issue Slots Busy|Executed Ipc|L2 Hit|L1/TEX Hit|No Eligible|One or More|Active Warps Per" $R/ncu/*-details.txt | head -30
(timeout $((560 - (SECONDS - start))) .gpu/gpu_exact --ignored --test-threads=4 > $R/gpu_exact.txt 2>&1; echo "gpu_exact rc=$?" >> $R/gpu_exact.txt) &
site=/tmp/topk-site
python3 -m pip install -q --no-index --no-deps --upgrade --target $site .wheel/topk-*.whl
python3 -c "import pytest" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --upgrade --target $site .wheel/deps/*.whl
PYTHONPATH=$site timeout $((560 - (SECONDS - start))) python3 -m pytest -p no:cacheprovider -ra -q topk-python/tests/test_gpu.py \
  topk-python/tests/test_torch_cpu.py topk-python/tests/test_eager_cuda_path.py topk-python/tests/test_interface.py \
  topk-python/tests/test_gpu_call.py topk-python/tests/test_cuda_call_marshalling.py > $R/pytest.txt 2>&1
echo "pytest rc=$? $((SECONDS-start)) s" | tee -a $R/pytest.txt; tail -12 $R/pytest.txt
wait
grep -E "^test |test result|panicked|rc=" $R/gpu_exact.txt
echo "end $((SECONDS-start)) s"; pack
