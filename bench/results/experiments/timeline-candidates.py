#!/usr/bin/env python3
"""Each probed row's certification pass and refinement against its candidate count |Q0|.

The timeline (bench/timeline.py's input) holds no candidate counts: the probe's words replace
them. `topk routes --per-row` computes them on the CPU backend for the same rows (at --seed 1 the
data of examples/05-operator-matrix; the GPU takes the same route and admits the same
candidates on every row). Standard library only:

    topk routes --profile indexer,iid --rows 512 --width 262144 --seed 1 --per-row \\
        --spec 'SPEC OF THE TIMELINE' > rows.jsonl
    python3 timeline-candidates.py timeline-v15.jsonl rows.jsonl
"""
import collections
import json
import sys

FRONTIER = 4096  # on-chip frontier pairs per buffer of a 512-thread CTA at K = 2048


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return float("nan"), float("nan")
    return sxy / sxx, sxy / (sxx * syy) ** 0.5


timeline = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    timeline[(r["profile"], r["rows"], r["width"])].append(r)
counts = {}
for line in open(sys.argv[2]):
    r = json.loads(line)
    counts[(r["profile"], r["rows"], r["width"], r["row"])] = r
for key, rows in sorted(timeline.items()):
    if not all(key + (r["row"],) in counts for r in rows):
        continue
    print(f"{key[0]} {key[1]} x {key[2]}")
    mismatched = [r["row"] for r in rows if counts[key + (r["row"],)]["route"] != r["route"]]
    print(f"  routes differing from the CPU's: {mismatched or 'none'}")
    by_worker = collections.defaultdict(list)
    for r in rows:
        by_worker[r["worker"]].append(r)
    waves = collections.defaultdict(list)
    for rs in by_worker.values():
        for i, r in enumerate(sorted(rs, key=lambda r: r["start_us"])):
            waves[i].append(r)
    for i in sorted(waves):
        # Rows by |Q0| band within this wave: where the pass and the refinement grow.
        bands = collections.defaultdict(list)
        for r in waves[i]:
            if r["route"] == "primary":
                c = counts[key + (r["row"],)]["candidates"]
                bands[min(b for b in (3000, 3500, FRONTIER, 4700, 5500, 1 << 30) if c < b)].append(r)
        prim = [r for r in waves[i] if r["route"] == "primary"]
        if len(prim) < 3:
            continue
        cand = [counts[key + (r["row"],)]["candidates"] for r in prim]
        pas = [r["pass_us"] for r in prim]
        ref = [r["refine_us"] for r in prim]
        b_pass, r_pass = fit(cand, pas)
        b_ref, r_ref = fit(cand, ref)
        over = sum(1 for c in cand if c > FRONTIER)
        print(f"  row {i + 1} of its worker: {len(prim)} primary, |Q0| mean {sum(cand) / len(cand):.0f} "
              f"(max {max(cand)}, {over} over {FRONTIER}); pass {sum(pas) / len(pas):.1f} us, "
              f"r = {r_pass:.2f}, {1000 * b_pass:.2f} us per 1000 candidates; refinement "
              f"{sum(ref) / len(ref):.1f} us, r = {r_ref:.2f}, {1000 * b_ref:.2f} us per 1000")
        edges = (0, 3000, 3500, FRONTIER, 4700, 5500, 1 << 30)
        for lo, hi in zip(edges, edges[1:]):
            rs = bands.get(hi)
            if not rs:
                continue
            top = "up" if hi == 1 << 30 else hi
            print(f"    |Q0| {lo}-{top}: {len(rs)} rows, pass "
                  f"{sum(r['pass_us'] for r in rs) / len(rs):.1f} us, refinement "
                  f"{sum(r['refine_us'] for r in rs) / len(rs):.1f} us")
