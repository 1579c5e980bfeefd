#!/usr/bin/env python3
"""Summarizes phase-probe timelines: how many workers stream at once, and where a call's time goes.

Input: the JSON lines that `TOPK_PHASE_PROBE=1 TOPK_PHASE_TIMELINE=FILE .gpu/05-operator-matrix
PROFILE SHAPES [SPEC]` appends (one per probed row: worker, start, proposal, pass and refinement
in microseconds; rows of one launch share profile, rows, width and spec; a file that holds two
launches of one shape and spec is refused: give each run a fresh file). For each launch it
prints:

- span: from the first row's start to the last row's end;
- the share of the span during which at least 90% / 50% of the workers are in a certification
  pass (the only phase that streams the row), and the mean share of workers streaming;
- the time summed over workers outside any probed row (before their first row, between rows,
  after their last, and on rows of at most K scores, which are not probed), in the proposal
  and in the refinement, as a share of workers x span;
- the worker that ends last, with its rows (start, proposal, pass, refinement).

Standard library only:  python3 bench/timeline.py FILE [--step-us 0.5]
"""
import argparse
import collections
import json
import sys


def load(path):
    launches = collections.defaultdict(list)
    seen = set()
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
                key = (r["profile"], r["rows"], r["width"], r.get("spec", ""))
                row = (key, r["row"])
            except (ValueError, KeyError) as e:
                sys.exit(f"{path}:{n}: not a timeline line ({e})")
            if row in seen:
                sys.exit(f"{path}:{n}: row {r['row']} of {key[0]} {key[1]} x {key[2]} appears twice: "
                         "the file holds two launches of this shape; give each run a fresh file")
            seen.add(row)
            launches[key].append(r)
    return launches


def summarize(rows, step_us):
    workers = sorted({r["worker"] for r in rows})
    ends = [r["start_us"] + r["proposal_us"] + r["pass_us"] + r["refine_us"] for r in rows]
    span = max(ends) if ends else 0.0
    steps = max(1, int(span / step_us) + 1)
    streaming = [0] * steps
    for r in rows:
        a = r["start_us"] + r["proposal_us"]
        b = a + r["pass_us"]
        for i in range(int(a / step_us), min(steps, int(b / step_us) + 1)):
            t = i * step_us
            if a <= t < b:
                streaming[i] += 1
    w = len(workers)
    share = [s / w for s in streaming]
    at_least = lambda x: sum(1 for s in share if s >= x) / steps
    busy = collections.defaultdict(float)
    last_end = collections.defaultdict(float)
    for r, end in zip(rows, ends):
        busy[r["worker"]] += end - r["start_us"]
        last_end[r["worker"]] = max(last_end[r["worker"]], end)
    total = w * span
    outside = total - sum(busy.values())
    proposal = sum(r["proposal_us"] for r in rows)
    refine = sum(r["refine_us"] for r in rows)
    critical = max(last_end, key=last_end.get)
    chain = sorted((r for r in rows if r["worker"] == critical), key=lambda r: r["start_us"])
    return {
        "workers": w,
        "span": span,
        "stream90": at_least(0.9),
        "stream50": at_least(0.5),
        "stream_mean": sum(share) / steps,
        "outside": outside / total if total else 0.0,
        "proposal": proposal / total if total else 0.0,
        "refine": refine / total if total else 0.0,
        "critical": critical,
        "chain": chain,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", help="timeline JSON lines (TOPK_PHASE_TIMELINE)")
    ap.add_argument("--step-us", type=float, default=0.5, help="time step of the streaming count")
    a = ap.parse_args()
    launches = load(a.file)
    if not launches:
        sys.exit(f"{a.file}: no timeline lines")
    for (profile, m, n, _spec), rows in launches.items():
        s = summarize(rows, a.step_us)
        print(f"{profile} {m} x {n}: {len(rows)} probed rows on {s['workers']} workers, "
              f"span {s['span']:.1f} us")
        print(f"  >= 90% of workers streaming {100 * s['stream90']:.0f}% of the span, "
              f">= 50% {100 * s['stream50']:.0f}%, mean share streaming "
              f"{100 * s['stream_mean']:.0f}%")
        print(f"  workers x span: {100 * s['proposal']:.1f}% proposing, "
              f"{100 * s['refine']:.1f}% refining, {100 * s['outside']:.1f}% outside rows")
        print(f"  last to end: worker {s['critical']}, rows (start, proposal, pass, refinement, us):")
        for r in s["chain"]:
            print(f"    row {r['row']:6d} {r['route']:9s} {r['start_us']:8.1f} "
                  f"{r['proposal_us']:6.1f} {r['pass_us']:7.1f} {r['refine_us']:6.1f}")


if __name__ == "__main__":
    main()
