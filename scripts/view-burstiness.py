#!/usr/bin/env python3
"""How bursty a profile's admitted scores look from the grouped sample view.

For every row of a generated matrix (`topk gen`, terminal causal window) this walks the view the
persistent kernel samples (`view=run(R)`: R contiguous scores every R x stride positions, from
the row's phase), finds tau0's coarse bin (the FP16-projected bin holding the sample of rank
q = ceil(rho K / stride)) and counts the complete groups that lie wholly at or above it. On
bursty rows (high scores in runs) a good share of the admitted samples sit in such groups; on
i.i.d. rows almost none do. Prints, per profile and shape, the mean / min / max count and the
share of rows at or above the threshold of the per-row staging switch on branch
`exp/row-staging` (a quarter of q in whole groups).

    python3 scripts/view-burstiness.py                     # indexer and iid, three shapes
    python3 scripts/view-burstiness.py --profiles all --shapes 64x131072

Needs numpy and the release CLI (`cargo build --release`).
"""
import argparse
import math
import os
import subprocess
import tempfile

import numpy as np

PROFILES = ["indexer", "iid"]
ALL = ["indexer", "iid", "all-equal", "two-values", "ties-at-k", "sorted-asc", "sorted-desc",
       "periodic", "infinities", "signed-zeros", "subnormals", "huge", "tiny"]


def coarse_bins(x, shift):
    """Coarse bin of each score: the descending key of its FP16 projection, >> shift."""
    with np.errstate(over="ignore"):  # beyond FP16's range rounds to infinity, as cvt.rn does
        h = x.astype(np.float16).view(np.uint16).astype(np.uint32)
    h = np.where(h == 0x8000, 0, h)  # -0 shares +0's key
    return np.where(h & 0x8000, h, 0x7FFF - h) >> shift


def full_groups(row, phase, stride, run, q, min_view, shift):
    """Complete groups of the row's view wholly at or above tau0's coarse bin; None when the
    view holds fewer than `min_view` samples (the kernel then proposes exactly)."""
    starts = np.arange(phase * run, len(row), run * stride)
    positions = (starts[:, None] + np.arange(run)[None, :]).ravel()
    positions = positions[positions < len(row)]  # the last group may be cut short
    if len(positions) < min_view:
        return None
    hist = np.bincount(coarse_bins(row[positions], shift), minlength=1 << (16 - shift))
    bin0 = int(np.searchsorted(np.cumsum(hist), q))
    complete = starts[starts + run <= len(row)]
    bins = coarse_bins(np.stack([row[complete + o] for o in range(run)], 1), shift)
    return int((bins.max(axis=1) <= bin0).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--shapes", default="64x131072,32x262144,16x1048576")
    ap.add_argument("--k", type=int, default=2048)
    ap.add_argument("--stride", type=int, default=128)
    ap.add_argument("--rho", type=float, default=1.75)
    ap.add_argument("--rescue", type=float, default=2.5)
    ap.add_argument("--run", type=int, default=2)
    ap.add_argument("--coarse-bits", type=int, default=11)
    ap.add_argument("--topk", default="target/release/topk")
    args = ap.parse_args()
    q = math.ceil(args.rho * args.k / args.stride)
    min_view = math.ceil(args.rescue * args.k / args.stride)  # the rescue rank
    threshold = max(2, -(-q // (4 * args.run)))
    shift = 16 - args.coarse_bits
    print(f"K {args.k}, stride {args.stride}, rho {args.rho}, run({args.run}): q = {q}, "
          f"bursty from {threshold} whole groups")
    with tempfile.TemporaryDirectory() as tmp:
        profiles = ALL if args.profiles == "all" else args.profiles.split(",")
        for profile in profiles:
            for shape in args.shapes.split(","):
                rows, width = map(int, shape.split("x"))
                scores, lengths = os.path.join(tmp, "s.npy"), os.path.join(tmp, "l.npy")
                subprocess.run([args.topk, "gen", "--profile", profile, "--rows", str(rows),
                                "--width", str(width), "--k", str(args.k), "--out", scores,
                                "--lengths-out", lengths], check=True, stdout=subprocess.DEVNULL)
                x, ls = np.load(scores), np.load(lengths)
                counts = []
                for r in range(rows):
                    phase = (r * 17 + 13) & (args.stride - 1)
                    c = full_groups(x[r, : int(ls[r])], phase, args.stride, args.run, q, min_view, shift)
                    if c is not None:
                        counts.append(c)
                if not counts:
                    print(f"{profile:12} {shape:>12}: no sampled rows")
                    continue
                c = np.array(counts)
                print(f"{profile:12} {shape:>12}: whole groups mean {c.mean():5.2f} min {c.min():3d} "
                      f"max {c.max():3d}; bursty rows {100 * (c >= threshold).mean():5.1f}%")


if __name__ == "__main__":
    main()
