#!/usr/bin/env bash
# Experiment A/B: each variant is LABEL=BINARY[:ENV=VALUE,...] (BINARY under .gpu/), run over
# SHAPES on both profiles in interleaved rounds; prints best-of-rounds ratios to the first.
set -uo pipefail
OUT=${OUT:-./out}; mkdir -p "$OUT"
SHAPES=${SHAPES:?}; VARS=${VARS:?}; ROUNDS=${ROUNDS:-2}
log=$OUT/${NAME:-env-ab}.jsonl; : > "$log"
labels=()
for v in $VARS; do labels+=("${v%%=*}"); done
for round in $(seq "$ROUNDS"); do
  for profile in indexer iid; do
    for v in $VARS; do
      label=${v%%=*}; rest=${v#*=}; bin=${rest%%:*}; envs=""
      [[ $rest == *:* ]] && envs=${rest#*:}
      ( IFS=,; for e in $envs; do export "$e"; done; ".gpu/$bin" "$profile" "$SHAPES" ) | grep '^{' \
        | sed "s/^{/{\"variant\":\"$label\",\"round\":$round,/" >> "$log"
    done
  done
  echo "round $round done ($SECONDS s)"
done
python3 - "$log" "${labels[@]}" <<'PY'
import collections, json, math, sys
log, variants = sys.argv[1], sys.argv[2:]
best = collections.defaultdict(dict); bad = collections.Counter()
for line in open(log):
    r = json.loads(line)
    if not r["exact"]: bad[r["variant"]] += 1
    key = (r["profile"], r["rows"], r["width"])
    t = best[key].get(r["variant"]); best[key][r["variant"]] = r["median_ms"] if t is None else min(t, r["median_ms"])
    best[key]["floor"] = r["floor_ms"]
base = variants[0]; g = collections.defaultdict(list)
print("shape".ljust(22) + "floor".rjust(8) + "".join(v[:11].rjust(12) for v in variants))
for key in sorted(best):
    row = best[key]
    if base not in row: continue
    cells = ["%.4f" % row[base]] + ["%.3f" % (row[v] / row[base]) if v in row else "-" for v in variants[1:]]
    for v in variants[1:]:
        if v in row: g[(key[0], v)].append(row[v] / row[base])
    print(("%s %dx%d" % key).ljust(22) + ("%.4f" % row["floor"]).rjust(8) + "".join(c.rjust(12) for c in cells))
for (p, v), xs in sorted(g.items()):
    print(p, v, "geomean %.4f over %d" % (math.exp(sum(map(math.log, xs)) / len(xs)), len(xs)))
print("inexact outputs per variant:", dict(bad))
PY
