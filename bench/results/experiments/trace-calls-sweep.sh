#!/usr/bin/env bash
# Spec sweep on the first three calls of the framework traces (24576 rows of width 64K holding
# lengths 1-24576 and 24577-49152; 16384 rows of 49153-65536), indexer profile, `topk bench`'s
# data (seed 0), two rounds. Run on the GPU machine from the repository root with .gpu/ built by
# scripts/gpu-bundle.sh: OUT=dir bash <this>. Writes $OUT/sweep.jsonl (one line per run: the
# call, the given spec, `topk bench`'s JSON) and prints the best time of each spec per call.
set -u
mkdir -p "$OUT"
log=$OUT/sweep.jsonl; : > "$log"
sp() { echo "k=2048,map=persistent,view=run(2),threads=${4:-384},propose=sampled(stride=$1,rho=$2,rescue=$3,exact_below=24576)"; }
calls=("c00 24576 1" "c01 24576 24577" "c02 16384 49153")
for round in 1 2; do
  for c in "${calls[@]}"; do
    set -- $c; name=$1; M=$2; first=$3
    if [ "$name" = c00 ]; then
      specs=("" "$(sp 128 1.5 2 256)" "$(sp 128 1.5 2 512)")
    else
      specs=("" "$(sp 128 1.25 2)" "$(sp 128 1.75 2.5)" "$(sp 128 2 2.5)" "$(sp 64 1.5 2)"
             "$(sp 64 1.25 2)" "$(sp 128 1.5 2 256)" "$(sp 128 1.5 2 512)")
    fi
    for s in "${specs[@]}"; do
      args=(bench --backend cuda --profile indexer --rows "$M" --width 65536 --first-length "$first"
            --k 2048 --seed 0 --json)
      [ -n "$s" ] && args+=(--spec "$s")
      r=$(timeout 60 .gpu/topk "${args[@]}" 2>>"$OUT/err.txt" | tr -d '\n')
      echo "{\"round\":$round,\"call\":\"$name\",\"given\":\"$s\",\"r\":${r:-null}}" >> "$log"
    done
  done
  echo "round $round $SECONDS s"
done
python3 - "$log" <<'PY'
import collections, json, sys
best = collections.defaultdict(lambda: float("inf"))
bad = []
for line in open(sys.argv[1]):
    d = json.loads(line)
    r = d["r"]
    if not r or not r.get("exact"):
        bad.append((d["call"], d["given"]))
        continue
    key = (d["call"], d["given"] or "default")
    best[key] = min(best[key], r["median_ms"])
for call in sorted({c for c, _ in best}):
    base = best[(call, "default")]
    for (c, g), v in sorted(best.items()):
        if c == call:
            print(f"{c} {v:.4f} ms {v / base:.3f}x  {g}")
print("failed or inexact:", bad or "none")
PY
