#!/usr/bin/env bash
# 1) Codegen version 32 (the row stream's remainder two vectors per trip) against main (27) on
#    short-row prefill calls, decode batches and matrix corners; 2) the envelope's prefill chunks
#    on main with the peers (SGLang rebuilt on this GPU, vLLM, FlashInfer, torch.topk).
set -uo pipefail
R=$OUT/r; mkdir -p $R
pack() { tar czf $OUT/r.tgz -C $OUT r; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee $R/gpu.txt
export TOPK_CACHE_DIR=/tmp/kcache; mkdir -p $TOPK_CACHE_DIR; tar xJf .gpu/kcache-v27.tar.xz -C $TOPK_CACHE_DIR
start=$SECONDS
OUT=$R/ab VARIANTS="main tail-pairs" ROUNDS=2 \
  SHAPES="16384x16384,16384x32768,4096x8192,2048x12288 1x262144,64x131072 512x131072,2048x262144" \
  timeout 90 bash bench/ab.sh > $R/ab.txt 2>&1
echo "ab rc=$? $((SECONDS-start)) s"; tail -30 $R/ab.txt; pack
OUT=$R/env PROFILES=indexer BUDGET_S=80 DECODE_BATCHES=none SPEC_BATCHES=none MATRIX=none \
  PREFILL=16384x16K,16384x32K PREFILL_LENGTHS=from1 timeout $((225 - (SECONDS - start))) bash bench/envelope.sh > $R/env.txt 2>&1
echo "envelope rc=$? $((SECONDS-start)) s"; tail -30 $R/env.txt; cat $R/env/*.md 2>/dev/null | head -40
echo "end $((SECONDS-start)) s"; pack
