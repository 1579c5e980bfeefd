#!/usr/bin/env bash
# Retention margin of the default map on the whole operator matrix: the persistent sampled
# kernel at stride 128 with rescue, for several (rho, rescue) pairs, both profiles. Run on the
# GPU machine from the repository root with the bundle of scripts/gpu-bundle.sh in .gpu/.
# Writes $OUT/margins.jsonl (one JSON object per shape, with a "variant" field).
set -euo pipefail
OUT=${OUT:-./out}
BIN=${BIN:-.gpu/operator-matrix}
mkdir -p "$OUT"
log="$OUT/margins.jsonl"
: > "$log"
for profile in ${PROFILES:-iid indexer}; do
  for pair in ${PAIRS:-1.5,2.5 1.75,2.5 2,2.5 1.75,3}; do
    rho=${pair%,*}; rescue=${pair#*,}
    spec="k=2048,map=persistent,propose=sampled(stride=128,rho=$rho,rescue=$rescue),threads=512"
    "$BIN" $profile "${SHAPES:-matrix}" "$spec" | grep '^{' \
      | sed "s/^{/{\"variant\":\"rho=$rho,rescue=$rescue\",/" >> "$log"
  done
done
python3 - "$log" <<'PY'
import json, sys, collections, math
rows = [json.loads(l) for l in open(sys.argv[1])]
by = collections.defaultdict(list)
for r in rows:
    by[(r['profile'], r['variant'])].append(r)
print(f"{'profile':<8} {'variant':<18} {'geomean x floor':>16} {'max x floor N>=256K':>20} {'exact':>6}")
for (p, v), rs in sorted(by.items()):
    g = math.exp(sum(math.log(r['median_ms'] / r['floor_ms']) for r in rs) / len(rs))
    m = max(r['median_ms'] / r['floor_ms'] for r in rs if r['width'] >= 262144)
    print(f"{p:<8} {v:<18} {g:16.3f} {m:20.3f} {str(all(r['exact'] for r in rs)):>6}")
PY
