#!/usr/bin/env bash
# 384 against 256 threads per persistent CTA on the first four calls of trace245 (24576 rows of
# width 64K holding lengths 1-24576 and 24577-49152; 16384 rows of 49153-65536; 12288 rows of
# width 128K from 65537), both profiles, `topk bench`'s data (seed 0), two rounds, the default
# policy of each width with the block size given. Run on the GPU machine from the repository root
# with .gpu/ built by scripts/gpu-bundle.sh: OUT=dir bash <this>. Writes $OUT/threads.jsonl and
# prints the best time of each block size per call and profile.
set -u
mkdir -p "$OUT"
log=$OUT/threads.jsonl; : > "$log"
calls=("c00 24576 65536 1 1.5 2" "c01 24576 65536 24577 1.5 2" "c02 16384 65536 49153 1.5 2"
       "c03 12288 131072 65537 1.75 2.5")
for round in 1 2; do
  for p in indexer iid; do
    for c in "${calls[@]}"; do
      set -- $c; name=$1; M=$2; W=$3; first=$4; rho=$5; rescue=$6
      for t in 384 256; do
        s="k=2048,map=persistent,view=run(2),threads=$t,propose=sampled(stride=128,rho=$rho,rescue=$rescue,exact_below=24576)"
        r=$(timeout 60 .gpu/topk bench --backend cuda --profile "$p" --rows "$M" --width "$W" \
              --first-length "$first" --k 2048 --seed 0 --json --spec "$s" 2>>"$OUT/err.txt" | tr -d '\n')
        echo "{\"round\":$round,\"profile\":\"$p\",\"call\":\"$name\",\"threads\":$t,\"r\":${r:-null}}" >> "$log"
      done
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
        bad.append((d["profile"], d["call"], d["threads"]))
        continue
    k = (d["profile"], d["call"], d["threads"])
    best[k] = min(best[k], r["median_ms"])
for p, c in sorted({(p, c) for p, c, _ in best}):
    a, b = best[(p, c, 384)], best[(p, c, 256)]
    print(f"{p:8} {c}: 384 threads {a:.4f} ms, 256 threads {b:.4f} ms ({b / a:.3f}x)")
print("failed or inexact:", bad or "none")
PY
