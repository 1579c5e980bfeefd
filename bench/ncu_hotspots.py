#!/usr/bin/env python3
"""Where a kernel's warps stall, from Nsight Compute's per-instruction source page.

Input: the CSV that `ncu -i REPORT --page source --csv --print-source sass > FILE` writes for a
report taken with `--set full --import-source yes` (bench/ncu-kernel.sh does both). Prints:

- the total warp stall samples and the instructions that hold at least --min-share of them, each
  with its top stall reasons and how many warps executed it (a count of one CTA's warps marks code
  only one CTA runs, e.g. a cluster's rank 0);
- the samples at barriers, grouped by kind: CTA barriers (BAR), cluster barrier waits
  (UCGABAR_WAIT) and the memory barriers in front of cluster arrivals (MEMBAR/ERRBAR), each
  cluster barrier listed on its own in program order, so the barrier a cluster waits at stands
  out.

Samples are counts of warps seen at an instruction at regular intervals over every active SM, so
a share is of warp time, not of the kernel's duration; few samples (a short kernel) make small
shares noisy.

    python3 bench/ncu_hotspots.py ncu-1x262144-sass.csv [--min-share 0.01]
"""
import argparse
import csv
import sys


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header_at = next((i for i, r in enumerate(rows) if r and r[0] == "Address"), None)
    if header_at is None:
        sys.exit(f"{path}: no 'Address' header row; write it with "
                 "`ncu -i REPORT --page source --csv --print-source sass`")
    header = rows[header_at]
    need = ("Source", "Warp Stall Sampling (All Samples)", "Instructions Executed")
    missing = [n for n in need if n not in header]
    if missing:
        sys.exit(f"{path}: columns {missing} are missing; take the report with --set full")
    col = {n: header.index(n) for n in need}
    reasons = [(j, h[len("stall_"):]) for j, h in enumerate(header)
               if h.startswith("stall_") and "Not Issued" not in h]
    out = []
    for r in rows[header_at + 1:]:
        if len(r) < len(header):
            continue
        num = lambda j: int(float(r[j] or 0))
        out.append({
            "sass": r[col["Source"]].strip(),
            "samples": num(col["Warp Stall Sampling (All Samples)"]),
            "executed": num(col["Instructions Executed"]),
            "reasons": sorted(((num(j), name) for j, name in reasons), reverse=True),
        })
    return out


def kind(sass):
    op = sass.split()[0] if sass else ""
    if op.startswith("@"):
        op = sass.split()[1]
    if op.startswith("UCGABAR_WAIT"):
        return "cluster barrier wait"
    if op.startswith(("MEMBAR", "ERRBAR", "CGAERRBAR")):
        return "memory barrier"
    if op.startswith("UCGABAR_ARV"):
        return "cluster barrier arrive"
    if op.startswith(("BAR", "B2R")):  # B2R: a barrier's reduction (__syncthreads_or)
        return "CTA barrier"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--min-share", type=float, default=0.01,
                    help="list instructions with at least this share of the samples [0.01]")
    args = ap.parse_args()
    ins = load(args.csv)
    total = sum(i["samples"] for i in ins)
    if total == 0:
        sys.exit(f"{args.csv}: no warp stall samples (take the report with --set full)")
    print(f"{total} warp stall samples over {len(ins)} instructions")
    print("\nhot instructions (index, samples, share, warps executing, top reasons):")
    for n, i in enumerate(ins):
        if i["samples"] >= args.min_share * total:
            top = ", ".join(f"{name} {c}" for c, name in i["reasons"][:2] if c)
            print(f"{n:6d} {i['samples']:6d} {100 * i['samples'] / total:5.1f}% "
                  f"{i['executed']:8d}  {i['sass'][:56]:56s} {top}")
    print("\nbarriers:")
    by_kind = {}
    for i in ins:
        k = kind(i["sass"])
        if k:
            by_kind[k] = by_kind.get(k, 0) + i["samples"]
    for k, s in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"  {k:24s} {s:6d} {100 * s / total:5.1f}%")
    waits = [(n, i) for n, i in enumerate(ins) if kind(i["sass"]) == "cluster barrier wait"]
    if waits:
        print("\ncluster barrier waits in program order (index, samples, share):")
        for n, i in waits:
            print(f"  {n:6d} {i['samples']:6d} {100 * i['samples'] / total:5.1f}%")


if __name__ == "__main__":
    main()
