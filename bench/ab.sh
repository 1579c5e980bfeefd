#!/usr/bin/env bash
# Compares kernel builds on the GPU machine: every .gpu/05-<variant> named in VARIANTS (built by
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
  [[ -x .gpu/05-$v ]] || { echo "ab: .gpu/05-$v is missing (scripts/ab-bundle.sh)" >&2; exit 2; }
done
for round in $(seq "$ROUNDS"); do
  for profile in ${PROFILES:-indexer iid}; do
    for v in $VARIANTS; do
      for shapes in $SHAPES; do
        ".gpu/05-$v" "$profile" "$shapes" ${SPEC:-} | grep '^{' \
          | sed "s/^{/{\"variant\":\"$v\",\"round\":$round,/" >> "$log" \
          || echo "ab: $v $profile $shapes failed" >&2
      done
    done
  done
  echo "round $round done ($SECONDS s)"
done
python3 - "$log" $VARIANTS <<'PY'
import collections, json, math, sys
log, variants = sys.argv[1], sys.argv[2:]
best = collections.defaultdict(dict)
inexact = []
for line in open(log):
    r = json.loads(line)
    key = (r["profile"], r["rows"], r["width"])
    if not r["exact"]:
        inexact.append("%s %s %dx%d" % (r["variant"], *key))
    t = best[key].get(r["variant"])
    best[key][r["variant"]] = r["median_ms"] if t is None else min(t, r["median_ms"])
base = variants[0]
ratios = collections.defaultdict(list)
print("shape".ljust(24) + ("%s ms" % base).rjust(14) + "".join(("%s/%s" % (v, base)).rjust(24) for v in variants[1:]))
for key in sorted(best):
    row = best[key]
    if base not in row:
        continue
    cells = []
    for v in variants[1:]:
        if v in row:
            ratios[(key[0], v)].append(row[v] / row[base])
            cells.append("%.3f" % (row[v] / row[base]))
        else:
            cells.append("-")
    print(("%s %dx%d" % key).ljust(24) + ("%.4f" % row[base]).rjust(14) + "".join(c.rjust(24) for c in cells))
for (profile, v), xs in sorted(ratios.items()):
    g = math.exp(sum(map(math.log, xs)) / len(xs))
    print("%s %s/%s: geometric mean %.4f over %d shapes" % (profile, v, base, g, len(xs)))
print("inexact outputs: %d%s" % (len(inexact), "" if not inexact else " (" + ", ".join(inexact) + ")"))
PY
