#!/usr/bin/env python3
"""Summarizes phase-probe timelines: how many workers stream at once, and where a call's time goes.

Input: the JSON lines that `TOPK_PHASE_PROBE=1 TOPK_PHASE_TIMELINE=FILE .gpu/operator-matrix
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
- when each worker's last row ends (10th, 50th and 90th percentiles and the latest over the
  workers): the call ends with the latest, so their spread is the call's tail;
- the worker that ends last, with its rows (start, proposal, pass, refinement);
- when the lines carry the rows' valid lengths (`length`; timelines written before that field
  existed lack it, and these two lines are left out):
  the rate at which the certification passes read, summed over the workers streaming, in each
  tenth of the span (each pass spread evenly over its time), and the span against the one-read
  floor of the launch's probed rows at --floor-tbps (4.49 TB/s, the H200's streaming read).

With --svg DIR it also draws each launch as DIR/timeline-PROFILE-MxN.svg: a bar per worker with
its rows' proposal, certification pass and refinement in time, under a strip that counts the
workers streaming.

Standard library only:  python3 bench/timeline.py FILE [--step-us 0.5] [--floor-tbps 4.49] [--svg DIR]
"""
import argparse
import collections
import json
import os
import sys

PHASE_COLORS = (("proposal_us", "#e6862a"), ("pass_us", "#3a6fb0"), ("refine_us", "#4c9a4c"))


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
                for field in ("worker", "start_us", "proposal_us", "pass_us", "refine_us"):
                    float(r[field])
                if "length" in r:
                    float(r["length"])
            except (ValueError, KeyError, TypeError) as e:
                sys.exit(f"{path}:{n}: not a timeline line ({type(e).__name__}: {e})")
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
    # Read rate of the passes in each tenth of the span (rows with a length only).
    tenths = [0.0] * 10
    for r in rows:
        if "length" not in r or r["pass_us"] <= 0:
            continue
        a = r["start_us"] + r["proposal_us"]
        b = a + r["pass_us"]
        rate = 4.0 * r["length"] / r["pass_us"]  # bytes per us
        for k in range(10):
            lo, hi = span * k / 10, span * (k + 1) / 10
            overlap = min(b, hi) - max(a, lo)
            if overlap > 0:
                tenths[k] += rate * overlap
    tenth_us = span / 10 if span else 1.0
    critical = max(last_end, key=last_end.get)
    lasts = sorted(last_end.values())
    pct = lambda q: lasts[min(len(lasts) - 1, int(q * len(lasts)))]
    chain = sorted((r for r in rows if r["worker"] == critical), key=lambda r: r["start_us"])
    return {
        "streaming": streaming,
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
        "last_ends": (pct(0.1), pct(0.5), pct(0.9), lasts[-1]),
        # TB/s (bytes per us / 1e6) per tenth, and the probed rows' valid bytes.
        "tenths_tbps": [t / tenth_us / 1e6 for t in tenths],
        "bytes": sum(4.0 * r["length"] for r in rows) if all("length" in r for r in rows) else None,
    }


def draw_svg(path, title, rows, s, step_us):
    """A Gantt chart of one launch: a bar per worker, a strip of the streaming count on top."""
    workers = sorted({r["worker"] for r in rows})
    lane = {w: i for i, w in enumerate(workers)}
    left, top, strip, right, bottom = 60, 40, 80, 20, 40
    width = 1000
    bar = max(1.0, min(6.0, 600.0 / max(1, len(workers))))
    height = top + strip + 20 + bar * len(workers) + bottom
    span = max(s["span"], 1e-9)
    x = lambda t: left + (width - left - right) * t / span
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height:.0f}" fill="white"/>',
        f'<text x="{left}" y="20" font-size="13">{title}</text>',
    ]
    # Streaming strip: workers in a certification pass per time step.
    n = len(workers)
    pts = []
    for i, c in enumerate(s["streaming"]):
        pts.append(f"{x(i * step_us):.1f},{top + strip - strip * c / n:.1f}")
    out.append(f'<polyline fill="none" stroke="#3a6fb0" points="{" ".join(pts)}"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{width - right}" y2="{top}" stroke="#ccc"/>')
    out.append(f'<line x1="{left}" y1="{top + strip}" x2="{width - right}" y2="{top + strip}" '
               'stroke="#999"/>')
    out.append(f'<text x="{left - 5}" y="{top + 4}" text-anchor="end">{n}</text>')
    out.append(f'<text x="{left - 5}" y="{top + strip}" text-anchor="end">0</text>')
    out.append(f'<text x="{left - 5}" y="{top + strip / 2}" text-anchor="end">streaming</text>')
    y0 = top + strip + 20
    for r in rows:
        t = r["start_us"]
        y = y0 + bar * lane[r["worker"]]
        for key, color in PHASE_COLORS:
            d = r[key]
            out.append(f'<rect x="{x(t):.2f}" y="{y:.2f}" width="{max(0.3, x(t + d) - x(t)):.2f}" '
                       f'height="{bar * 0.9:.2f}" fill="{color}"/>')
            t += d
    base = y0 + bar * n
    for k in range(6):
        t = span * k / 5
        out.append(f'<text x="{x(t):.1f}" y="{base + 15:.1f}" text-anchor="middle">{t:.0f}</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{base + 32:.1f}" text-anchor="middle">'
               'us from the first row\'s start; bars: workers; proposal (orange), certification '
               'pass (blue), refinement (green)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", help="timeline JSON lines (TOPK_PHASE_TIMELINE)")
    ap.add_argument("--step-us", type=float, default=0.5, help="time step of the streaming count")
    ap.add_argument("--svg", metavar="DIR", help="also draw each launch as an SVG chart in DIR")
    ap.add_argument("--floor-tbps", type=float, default=4.49,
                    help="streaming read rate of the one-read floor, TB/s")
    a = ap.parse_args()
    if not a.floor_tbps > 0 or not a.step_us > 0:
        sys.exit("--floor-tbps and --step-us must be positive")
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
        if s["bytes"] is not None:
            floor_us = s["bytes"] / (a.floor_tbps * 1e6)
            print(f"  passes read (TB/s, by tenth of the span): "
                  + " ".join(f"{t:.2f}" for t in s["tenths_tbps"])
                  + f"; span {s['span'] / floor_us:.2f}x the floor of the probed rows "
                  f"({floor_us:.1f} us)")
        print("  workers' last rows end (us): p10 {:.1f}, p50 {:.1f}, p90 {:.1f}, latest {:.1f}"
              .format(*s["last_ends"]))
        print(f"  last to end: worker {s['critical']}, rows (start, proposal, pass, refinement, us):")
        for r in s["chain"]:
            print(f"    row {r['row']:6d} {r['route']:9s} {r['start_us']:8.1f} "
                  f"{r['proposal_us']:6.1f} {r['pass_us']:7.1f} {r['refine_us']:6.1f}")
        if a.svg:
            os.makedirs(a.svg, exist_ok=True)
            path = os.path.join(a.svg, f"timeline-{profile}-{m}x{n}.svg")
            draw_svg(path, f"{profile} {m} x {n}: {len(rows)} rows on {s['workers']} workers, "
                     f"span {s['span']:.1f} us", rows, s, a.step_us)
            print(f"  drew {path}")


if __name__ == "__main__":
    main()
