#!/usr/bin/env bash
# Compares kernel builds on the GPU machine: every .gpu/operator-matrix-<variant> named in VARIANTS (built by
# scripts/ab-bundle.sh) runs over SHAPES on each profile, ROUNDS times with the variants
# interleaved, so slow drift of the machine hits all of them alike. Each binary verifies every
# timed output (an inexact one is counted and named below). Prints, per shape, the best time of
# the rounds and its ratio to the first variant, and per profile the geometric mean of those
# ratios; writes every measurement to $OUT/ab.jsonl.
#
#   VARIANTS="main my-branch" OUT=./out bash bench/ab.sh
#   SHAPES="matrix 24576x24576,16384x65536" ROUNDS=3 VARIANTS="a b c" bash bench/ab.sh
set -euo pipefail
OUT=${OUT:-./out}
VARIANTS=${VARIANTS:?set VARIANTS, e.g. VARIANTS="main my-branch"}
SHAPES=${SHAPES:-matrix}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
log="$OUT/ab.jsonl"
: > "$log"
for v in $VARIANTS; do
  [[ -x .gpu/operator-matrix-$v ]] || { echo "ab: .gpu/operator-matrix-$v is missing (scripts/ab-bundle.sh)" >&2; exit 2; }
done
for round in $(seq "$ROUNDS"); do
  for profile in ${PROFILES:-indexer iid}; do
    for v in $VARIANTS; do
      for shapes in $SHAPES; do
        ".gpu/operator-matrix-$v" "$profile" "$shapes" ${SPEC:-} | grep '^{' \
          | sed "s/^{/{\"variant\":\"$v\",\"round\":$round,/" >> "$log" \
          || echo "ab: $v $profile $shapes failed" >&2
      done
    done
  done
  echo "round $round done ($SECONDS s)"
done
python3 bench/ab_summary.py "$log" $VARIANTS
