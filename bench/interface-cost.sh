#!/usr/bin/env bash
# What each call-interface variant (values, row windows, offset and paged transforms, sorted,
# lowest-index ties) costs against the plain call of the same spec, on the corners of the
# operator matrix: `.gpu/interface-cost` times CUDA-graph replays of both interleaved and checks
# every timed output (the variants' with the CPU verifier). Writes $OUT/interface-cost/<profile>.txt
# (readable lines) and .jsonl (one object per shape and variant). Run on the GPU machine from
# the repository root with .gpu/ built by scripts/gpu-bundle.sh:
#
#   OUT=./out bash bench/interface-cost.sh
set -euo pipefail
OUT=${OUT:-./out}
PROFILES=${PROFILES:-indexer}
SHAPES=${SHAPES:-512x131072,2048x262144,512x1048576,8192x131072}
mkdir -p "$OUT/interface-cost"
for profile in $PROFILES; do
  .gpu/interface-cost --profile "$profile" --shapes "$SHAPES" ${K:+--k "$K"} \
    | tee "$OUT/interface-cost/$profile.txt"
  grep '^{' "$OUT/interface-cost/$profile.txt" > "$OUT/interface-cost/$profile.jsonl" || true
done
