#!/usr/bin/env bash
# Grouped views (view=run(R): R contiguous scores every R * 128 positions; R = 8 reads whole
# 32-byte sectors) against the stride view, with the default map's proposal, on the whole
# operator matrix of both profiles. Run on the GPU machine from the repository root with the
# bundle of scripts/gpu-bundle.sh in .gpu/ (after `.gpu/gpu_exact`, which checks these views).
# Every timed output is verified on the device. Writes $OUT/views.jsonl ("variant" field).
set -euo pipefail
OUT=${OUT:-./out}
BIN=${BIN:-.gpu/operator-matrix}
mkdir -p "$OUT"
log="$OUT/views.jsonl"
: > "$log"
for profile in ${PROFILES:-indexer iid}; do
  for run in ${RUNS:-1 2 4 8}; do
    spec="k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5),threads=512,view=run($run)"
    "$BIN" $profile "${SHAPES:-matrix}" "$spec" | grep '^{' \
      | sed "s/^{/{\"variant\":\"run=$run\",/" >> "$log"
  done
done
