#!/usr/bin/env bash
# Latency half of the sampled-path ablations (paper §6.4) on the GPU machine, from the
# repository root with the bundle of scripts/gpu-bundle.sh in .gpu/. Route shares of the same
# policies are measured on the CPU by `topk routes` (bench/RESULTS.md). Every timed output is
# verified on the device by the operator-matrix program. Writes $OUT/ablations.jsonl (one JSON object per
# run, with an "ablation" field) and prints a table.
set -euo pipefail
OUT=${OUT:-./out}
BIN=${BIN:-.gpu/operator-matrix}
SHAPES=${SHAPES:-2048x262144,512x1048576}
mkdir -p "$OUT"
log="$OUT/ablations.jsonl"
: > "$log"

run() {  # run NAME PROFILE SHAPES SPEC
  "$BIN" "$2" "$3" "$4" | grep '^{' | sed "s/^{/{\"ablation\":\"$1\",/" >> "$log"
}

sampled() { echo "k=2048,map=persistent,propose=sampled(stride=$1,rho=$2$3),threads=512"; }

for profile in indexer iid; do
  for rho in 1 1.25 1.5 1.75 2; do run "rho=$rho" $profile "$SHAPES" "$(sampled 128 $rho '')"; done
  for s in 16 32 64 128 256; do run "stride=$s" $profile "$SHAPES" "$(sampled $s 1.5 '')"; done
  for r in 1.75 2 2.5; do run "rescue=$r" $profile "$SHAPES" "$(sampled 128 1.5 ",rescue=$r")"; done
  run "exact-proposal" $profile "$SHAPES" "k=2048,map=persistent,propose=exact,threads=512"
done
# Crossover: where sampling starts to pay against the exact proposal and the row-local kernel.
CROSS=${CROSS:-64x16384,64x32768,64x65536,1024x16384,1024x32768,1024x65536,4096x16384,4096x32768,4096x65536}
for profile in indexer iid; do
  run "cross-s128" $profile "$CROSS" "$(sampled 128 1.5 ',rescue=2.5')"
  run "cross-s64" $profile "$CROSS" "$(sampled 64 1.5 ',rescue=2.5')"
  run "cross-exact" $profile "$CROSS" "k=2048,map=persistent,propose=exact,threads=512"
  run "cross-rowlocal" $profile "$CROSS" "k=2048,map=rowlocal(streaming),propose=exact,threads=1024"
done
python3 - "$log" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'ablation':<16} {'profile':<8} {'M x N':>14} {'ms':>9} {'x floor':>8} {'exact':>6} routes(short/prim/resc/recov/direct)")
for r in rows:
    print(f"{r['ablation']:<16} {r['profile']:<8} {str(r['rows'])+'x'+str(r['width']):>14} "
          f"{r['median_ms']:9.4f} {r['median_ms']/r['floor_ms']:8.2f} {str(r['exact']):>6} {r['routes']}")
PY
