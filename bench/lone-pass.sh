#!/usr/bin/env bash
# A lone worker's certification pass against a busy pool's: few rows of 256K on the 512-thread
# persistent pool (one worker per row, the spec given without a tail margin), with the phase
# timers (bench/phase-probe.sh: one plain launch per shape), per profile and per `prefetch`
# setting. The end of a call runs at the lone rate, so this is where the profiles' tails differ
# (bench/RESULTS.md, "A lone worker's pass"). Run on the GPU machine from the repository root
# with the bundle of scripts/gpu-bundle.sh in .gpu/; writes $OUT/lone-pass.jsonl (each line a
# `{"phases":...}` object with the `prefetch` it ran) and prints the mean pass per row.
#
#   OUT=./out bash bench/lone-pass.sh
#   BIN=.gpu/operator-matrix-my-branch PREFETCH="0" SHAPES=16x262144 bash bench/lone-pass.sh
set -euo pipefail
OUT=${OUT:-./out}
BIN=${BIN:-.gpu/operator-matrix}
SHAPES=${SHAPES:-16x262144,66x262144,132x262144,264x262144,512x262144}
BASE='k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5,exact_below=24576),threads=512,view=run(2)'
[[ -x $BIN ]] || { echo "lone-pass: $BIN is missing (scripts/gpu-bundle.sh)" >&2; exit 2; }
mkdir -p "$OUT"
log="$OUT/lone-pass.jsonl"
: > "$log"
# Each setting is one bench/phase-probe.sh run (no timeline), its lines tagged with the setting.
for prefetch in ${PREFETCH:-0 1 2}; do
  [[ $prefetch =~ ^[0-2]$ ]] || { echo "lone-pass: PREFETCH takes 0, 1 or 2" >&2; exit 2; }
  spec=$BASE
  ((prefetch > 0)) && spec="$BASE,prefetch=$prefetch"
  run="$OUT/lone-pass-prefetch$prefetch"
  OUT=$run BIN=$BIN SHAPES=$SHAPES PROFILES="${PROFILES:-iid indexer}" SPEC=$spec \
    TIMELINE_MAX_ROWS=0 bash bench/phase-probe.sh > /dev/null
  sed "s/^{/{\"prefetch\":$prefetch,/" "$run/phases.jsonl" >> "$log"
done
python3 - "$log" <<'EOF'
import json, sys
print(f"{'prefetch':>8} {'profile':>8} {'rows':>5}  {'pass us (mean)':>14}  {'proposal':>8}  {'refine':>6}")
for line in open(sys.argv[1]):
    d = json.loads(line)
    p = d["phases"]
    print(f"{d['prefetch']:>8} {p['profile']:>8} {p['rows']:>5}  {p['pass'][0]:>14.2f}  "
          f"{p['proposal'][0]:>8.2f}  {p['refine'][0]:>6.2f}")
EOF
