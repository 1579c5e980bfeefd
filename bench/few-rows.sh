#!/usr/bin/env bash
# A few long rows (decode-like calls) under each mapping that spreads a row over many CTAs:
# cluster(8), cluster(16), staged, and the persistent pool, on both profiles. Run on the
# GPU machine from the repository root with the bundle of scripts/gpu-bundle.sh in .gpu/.
# Writes $OUT/few-rows-mappings.jsonl (one JSON object per shape, with a "variant" field) and
# prints a table of medians in ms.
set -euo pipefail
OUT=${OUT:-./out}
BIN=${BIN:-.gpu/operator-matrix}
SHAPES=${SHAPES:-1x262144,8x262144,16x262144,1x524288,8x524288,1x1048576,8x1048576,12x1048576,16x1048576,1x2097152,8x2097152,16x2097152,1x4194304,8x4194304,32x4194304}
MARGIN="rho=1.75,rescue=2.5"
mkdir -p "$OUT"
log="$OUT/few-rows-mappings.jsonl"
: > "$log"
for profile in ${PROFILES:-indexer iid}; do
  for variant in cluster8 cluster16 staged persistent; do
    case $variant in
      cluster8) spec="k=2048,map=cluster(8),propose=exact,threads=1024" ;;
      cluster16) spec="k=2048,map=cluster(16),propose=exact,threads=1024" ;;
      staged) spec="k=2048,map=staged,propose=sampled(stride=128,$MARGIN)" ;;
      persistent) spec="k=2048,map=persistent,propose=sampled(stride=128,$MARGIN),view=run(2)" ;;
    esac
    if ! "$BIN" "$profile" "$SHAPES" "$spec" > "$OUT/few-rows-$variant-$profile.txt" 2>&1; then
      echo "$variant $profile failed: $(tail -1 "$OUT/few-rows-$variant-$profile.txt")"
    fi
    grep '^{' "$OUT/few-rows-$variant-$profile.txt" | sed "s/^{/{\"variant\":\"$variant\",/" >> "$log" || true
    rm -f "$OUT/few-rows-$variant-$profile.txt"
  done
done
python3 - "$log" <<'PY'
import collections, json, sys
rows = collections.defaultdict(dict)
variants = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["variant"] not in variants:
        variants.append(r["variant"])
    cell = "%.4f" % r["median_ms"] + ("" if r["exact"] else " INEXACT")
    rows[(r["profile"], r["rows"], r["width"])][r["variant"]] = cell
print("shape".ljust(24) + "".join(v.rjust(14) for v in variants))
for (profile, m, n), cells in rows.items():
    print(("%s %dx%d" % (profile, m, n)).ljust(24) + "".join(cells.get(v, "-").rjust(14) for v in variants))
PY
