#!/usr/bin/env python3
"""Per-pass read rate against how many workers stream during it, from a phase-probe timeline
(bench/timeline.py's input; lines with `length`). Standard library only:

    python3 timeline-pass-rates.py timeline-v15.jsonl
"""
import collections
import json
import sys

launches = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    launches[(r["profile"], r["rows"], r["width"])].append(r)
STEP = 0.25
for key, rows in launches.items():
    span = max(r["start_us"] + r["proposal_us"] + r["pass_us"] + r["refine_us"] for r in rows)
    n = int(span / STEP) + 1
    streaming = [0] * n
    passes = []
    for r in rows:
        a = r["start_us"] + r["proposal_us"]
        b = a + r["pass_us"]
        steps = [i for i in range(int(a / STEP), min(n, int(b / STEP) + 1)) if a <= i * STEP < b]
        for i in steps:
            streaming[i] += 1
        passes.append((steps, 4.0 * r["length"] / r["pass_us"] / 1e3))  # GB/s
    print(f"{key[0]} {key[1]} x {key[2]}")
    bins = [(0, 150), (150, 200), (200, 230), (230, 250), (250, 10**6)]
    acc = collections.defaultdict(list)
    for steps, gbps in passes:
        if not steps:
            continue
        c = sum(streaming[i] for i in steps) / len(steps)
        for lo, hi in bins:
            if lo <= c < hi:
                acc[(lo, hi)].append(gbps)
    for lo, hi in bins:
        v = acc[(lo, hi)]
        if v:
            print(f"  {len(v):5d} passes while {lo}-{min(hi, 264)} workers stream: "
                  f"{sum(v) / len(v):.1f} GB/s a pass")
