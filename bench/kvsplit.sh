#!/usr/bin/env bash
# KV-split sampled kernels (2/4/8 segment CTAs per row) against the default map, on the whole
# operator matrix of both profiles. Run on the GPU machine from the repository root with the
# bundle of scripts/gpu-bundle.sh in .gpu/. Every timed output is verified on the device.
# Writes $OUT/kvsplit.jsonl (one JSON object per shape, with a "variant" field).
set -euo pipefail
OUT=${OUT:-./out}
BIN=${BIN:-.gpu/operator-matrix}
SHAPES=${SHAPES:-matrix}
mkdir -p "$OUT"
log="$OUT/kvsplit.jsonl"
: > "$log"
for profile in ${PROFILES:-iid indexer}; do
  "$BIN" $profile "$SHAPES" | tee /dev/stderr | grep '^{' | sed 's/^{/{"variant":"default",/' >> "$log"
  for splits in 2 4 8; do
    spec="k=2048,map=kvsplit($splits),propose=sampled(stride=128,rho=1.5,rescue=2.5),threads=512"
    "$BIN" $profile "$SHAPES" "$spec" | tee /dev/stderr | grep '^{' \
      | sed "s/^{/{\"variant\":\"kvsplit$splits\",/" >> "$log"
  done
done
