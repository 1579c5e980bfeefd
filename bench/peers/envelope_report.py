#!/usr/bin/env python3
"""Tables, summary and chart of an envelope run (envelope.py's JSON), standard library only.

    python3 bench/peers/envelope_report.py out/envelope-indexer.json \
        --md-out out/envelope-indexer.md --svg-out out/envelope-indexer.svg

Per call: ours (the `topk` entry), each peer (vLLM as its best entry point, named), the best
exact peer, ours/best (below 1: ours is faster), ours over the floor (valid bytes / 4.49 TB/s),
ours over the bare read of the same bytes and the empty-kernel replay, both measured in the
same run. A time enters a comparison only when its output was exact.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from xml.sax.saxutils import escape

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from merge_results import geomean  # noqa: E402

SCHEMA = "topk-envelope/1"
OURS = "topk"
# Peer columns; an entry `group.entry` (vllm.indexer) belongs to `group`.
PEER_GROUPS = ("sglang", "vllm", "flashinfer", "torch")
KIND_ORDER = ("decode", "spec", "prefill", "window", "trace")
STATUS_CELLS = {"inexact": "inexact", "error": "error", "unavailable": "n/a",
                "not_applicable": "-", "skipped": "skipped", None: "-"}


def group_of(name: str) -> str:
    return name.split(".", 1)[0]


def ok_ms(entry: dict | None):
    """The median of an exact, timed entry, else None."""
    if entry and entry.get("status") == "ok":
        return entry["median_ms"]
    return None


def peer_groups(peers: dict) -> dict:
    """{group: {'ms', 'entry', 'status', 'entries'}}: each group's fastest exact entry (vLLM's
    entry points are one group), or, when none is exact, the status of its first entry that
    ran (`entries` maps every entry to its median or its status)."""
    out: dict = {}
    for name, entry in peers.items():
        if name == OURS:
            continue
        g = out.setdefault(group_of(name), {"ms": None, "entry": None, "status": None,
                                            "entries": {}})
        ms = ok_ms(entry)
        g["entries"][name] = ms if ms is not None else entry.get("status")
        if ms is not None:
            if g["ms"] is None or ms < g["ms"]:
                g.update(ms=ms, entry=name, status="ok")
        elif g["status"] in (None, "not_applicable"):
            g["status"] = entry.get("status")
            if entry.get("status") == "inexact":
                g["bad_rows"] = entry.get("verify", {}).get("bad_rows")
    return out


def call_row(rec: dict) -> dict:
    """The table row of one call record."""
    c = rec["call"]
    ours = rec["peers"].get(OURS, {"status": "missing"})
    groups = peer_groups(rec["peers"])
    exact = [(g["ms"], g["entry"]) for g in groups.values() if g["ms"] is not None]
    best_ms, best = min(exact) if exact else (None, None)
    ours_ms = ok_ms(ours)
    limits = rec.get("limits", {})
    bare = ok_ms(limits.get("bare_read"))
    empty = ok_ms(limits.get("empty"))
    floor = rec["floor_ms"]
    return {
        "name": c["name"], "kind": c.get("kind", "window"), "rows": c["rows"], "width": c["width"],
        "valid_bytes": c["valid_bytes"], "floor_ms": floor,
        "ours_ms": ours_ms, "ours_status": ours.get("status"),
        "ours_route": ours.get("route", ""),
        "peers": groups, "best_peer": best, "best_ms": best_ms,
        "ratio": ours_ms / best_ms if ours_ms and best_ms else None,
        "ours_x_floor": ours_ms / floor if ours_ms else None,
        "ours_x_bare": ours_ms / bare if ours_ms and bare else None,
        "bare_ms": bare, "empty_ms": empty,
        "bare_x_floor": bare / floor if bare else None,
    }


def summarize(rows: list, not_run: list | None = None) -> dict:
    """Geometric means and the shapes lost. ratio = ours / best peer (below 1: ours faster);
    speedup = best peer / ours."""
    compared = [r for r in rows if r["ratio"] is not None]
    lost = sorted((r for r in compared if r["ratio"] > 1), key=lambda r: -r["ratio"])
    worst = max(compared, key=lambda r: r["ratio"]) if compared else None
    best = min(compared, key=lambda r: r["ratio"]) if compared else None
    geo = geomean([r["ratio"] for r in compared])
    per_kind = {}
    for kind in KIND_ORDER + tuple(sorted({r["kind"] for r in rows} - set(KIND_ORDER))):
        of_kind = [r for r in compared if r["kind"] == kind]
        if of_kind:
            g = geomean([r["ratio"] for r in of_kind])
            per_kind[kind] = {"calls": len(of_kind), "geomean_ratio": g, "geomean_speedup": 1 / g,
                              "lost": sum(1 for r in of_kind if r["ratio"] > 1)}
    return {
        "calls": len(rows),
        "compared": len(compared),
        "geomean_ratio": geo,
        "geomean_speedup": 1 / geo if geo else None,
        "min_speedup": 1 / worst["ratio"] if worst else None,
        "min_speedup_call": worst["name"] if worst else None,
        "max_speedup": 1 / best["ratio"] if best else None,
        "max_speedup_call": best["name"] if best else None,
        "lost": [r["name"] for r in lost],
        "ours_not_exact": [r["name"] for r in rows if r["ours_status"] not in ("ok",)],
        "no_exact_peer": [r["name"] for r in rows if r["best_ms"] is None],
        "geomean_ours_x_floor": geomean([r["ours_x_floor"] for r in rows]),
        "geomean_ours_x_bare": geomean([r["ours_x_bare"] for r in rows]),
        "per_kind": per_kind,
        "not_run": list(not_run or []),
    }


def summary_line(s: dict) -> str:
    if not s["compared"]:
        return (f"no call has exact times for ours and a peer ({s['calls']} calls; ours not "
                f"exact or failed on {len(s['ours_not_exact'])})")
    parts = [
        f"ours vs the best peer on {s['compared']} of {s['calls']} calls: geomean speedup "
        f"{s['geomean_speedup']:.2f}x (ours/best {s['geomean_ratio']:.2f})",
        f"minimum {s['min_speedup']:.2f}x at {s['min_speedup_call']}",
        f"{len(s['lost'])} shapes lost",
    ]
    if s["ours_not_exact"]:
        parts.append(f"ours without an exact time on {len(s['ours_not_exact'])}")
    if s["not_run"]:
        parts.append(f"{len(s['not_run'])} calls not run")
    return "; ".join(parts)


def us(ms) -> str:
    """Microseconds with three significant digits."""
    if ms is None:
        return "-"
    v = ms * 1e3
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def x(v) -> str:
    """A ratio with three significant digits (two decimals below 10)."""
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def group_cell(g: dict | None) -> str:
    """A peer's time (vLLM's with the entry point that gave it), or why there is none."""
    if g is None:
        return "-"
    if g["ms"] is not None:
        entry = g["entry"]
        return us(g["ms"]) + (f" ({entry.split('.', 1)[1]})" if "." in entry else "")
    status = g.get("status")
    if status == "inexact" and g.get("bad_rows") is not None:
        return f"inexact ({g['bad_rows']} rows)"
    return STATUS_CELLS.get(status, str(status))


def ours_cell(r: dict) -> str:
    if r["ours_ms"] is not None:
        won = r["ratio"] is not None and r["ratio"] <= 1
        return f"**{us(r['ours_ms'])}**" if won else us(r["ours_ms"])
    return STATUS_CELLS.get(r["ours_status"], str(r["ours_status"]))


def markdown(doc: dict) -> str:
    meta = doc.get("meta", {})
    rows = doc["report"]["rows"]
    s = doc["report"]["summary"]
    groups = [g for g in PEER_GROUPS if any(g in r["peers"] for r in rows)]
    sgl = (meta.get("kit") or {}).get("sglang_build", {})
    vllm = (meta.get("kit") or {}).get("vllm", {})
    lines = [
        f"# Serving envelope, profile `{meta.get('profile')}`, K={meta.get('k')}",
        "",
        f"{meta.get('gpu', '?')}, {meta.get('date', '')}, seed {meta.get('seed')}; torch "
        f"{meta.get('torch', '?')}, topk {meta.get('topk_version', '?')}. Times in us: medians "
        "of CUDA-graph replays, inputs rotated below 3x L2, every output checked exact before "
        "and after timing. ours = `topk.Selector` captured (eager call: `topk.select`). "
        "floor = valid bytes / 4.49 TB/s; bare read = one kernel reading each valid score once "
        "(float4 loads, max per thread); empty = replay of a captured empty kernel. "
        "ours/best below 1: ours is faster (bold).",
        "",
        f"SGLang: `{os.path.basename(sgl.get('module', '?'))}` "
        f"(C8_OCC2={sgl.get('baked_c8_occ2')}, C16_OCC1={sgl.get('baked_c16_occ1')}, "
        f"{'rebuilt on this GPU' if sgl.get('rebuilt_on_target') else 'PREBUILT'}"
        f"{'; ' + sgl['build_note'] if sgl.get('build_note') else ''}); "
        f"vLLM {vllm.get('version', '?')}: best of its entry points per call "
        "(indexer = indexer_select; decode / prefill = top_k_per_row_decode / _prefill).",
        "",
        "**" + summary_line(s) + ".**",
        "",
    ]
    head = (["call", "M x N", "floor", "ours"] + [f"{g}" for g in groups]
            + ["best peer", "ours/best", "ours/floor", "ours/bare", "bare read", "empty"])
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(["---"] * 2 + ["--:"] * (len(head) - 2)) + "|")
    for r in rows:
        cells = [r["name"], f"{r['rows']} x {r['width']}", us(r["floor_ms"]), ours_cell(r)]
        cells += [group_cell(r["peers"].get(g)) for g in groups]
        cells += [r["best_peer"] or "none exact", x(r["ratio"]), x(r["ours_x_floor"]),
                  x(r["ours_x_bare"]), us(r["bare_ms"]), us(r["empty_ms"])]
        lines.append("| " + " | ".join(cells) + " |")
    if s["per_kind"]:
        lines += ["", "| kind | calls | geomean speedup vs best | lost |", "|---|--:|--:|--:|"]
        for kind, k in s["per_kind"].items():
            lines.append(f"| {kind} | {k['calls']} | {k['geomean_speedup']:.2f}x | {k['lost']} |")
    lines += ["", f"Geomean ours/floor {x(s['geomean_ours_x_floor'])}, ours/bare read "
              f"{x(s['geomean_ours_x_bare'])}."]
    if s["lost"]:
        lines += ["", "Shapes lost (ours/best, worst first): " + ", ".join(
            f"{r['name']} {r['ratio']:.2f} vs {r['best_peer']}"
            for r in sorted((r for r in rows if r["name"] in s["lost"]), key=lambda r: -r["ratio"]))
            + "."]
    if s["not_run"]:
        lines += ["", "Not run: " + ", ".join(s["not_run"]) + "."]
    problems = doc.get("problems", [])
    if problems:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n"


# --- SVG -----------------------------------------------------------------------------------
COLORS = {"ours": "#1f5fbf", "sglang": "#e07b00", "vllm": "#2a9d3c", "flashinfer": "#8e44ad",
          "torch": "#888888", "bare": "#000000", "empty": "#b03030", "floor": "#999999",
          "win": "#2a9d3c", "loss": "#c0392b"}
STEP = 16          # px per call
LEFT, RIGHT, TOP = 64, 150, 40
TIME_H, RATIO_H, GAP, LABEL_H = 300, 150, 36, 130


def _log_ticks(lo: float, hi: float) -> list:
    ticks = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo <= v <= hi:
                ticks.append(v)
    return ticks


def _tick_label(v: float) -> str:
    return f"{v:g}"


class _Axis:
    """A log axis mapping [lo, hi] to pixels [y1, y0] (y grows downwards)."""

    def __init__(self, lo: float, hi: float, y0: float, y1: float):
        self.lo, self.hi, self.y0, self.y1 = math.log10(lo), math.log10(hi), y0, y1

    def y(self, v: float) -> float:
        t = (math.log10(v) - self.lo) / (self.hi - self.lo)
        return self.y1 - t * (self.y1 - self.y0)


def svg(doc: dict) -> str:
    """Two panels over the calls: latency (us, log) of ours, each peer's best exact time, the
    bare read, the floor (where it is within the measured range) and the empty kernel; then
    ours/best (log), green where ours wins."""
    rows = doc["report"]["rows"]
    meta = doc.get("meta", {})
    n = max(1, len(rows))
    width = LEFT + n * STEP + RIGHT
    t0 = TOP
    r0 = t0 + TIME_H + GAP
    height = r0 + RATIO_H + LABEL_H
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="18" font-size="14">{escape(_title(doc))}</text>']

    def xpos(i):
        return LEFT + (i + 0.5) * STEP

    # The axis spans the measured times; floors of small calls lie far below every measured
    # time (the launch costs more) and are left out rather than squash the rest.
    values = [v for r in rows for v in
              [r["ours_ms"], r["bare_ms"], r["empty_ms"]]
              + [g["ms"] for g in r["peers"].values()] if v]
    lo = min(values) * 1e3 / 1.5 if values else 1.0
    hi = max(values + [r["floor_ms"] for r in rows]) * 1e3 * 1.3 if values else 10.0
    ax = _Axis(lo, hi, t0, t0 + TIME_H)
    _panel_frame(out, ax, t0, TIME_H, width, "latency, us (log)", _log_ticks(lo, hi))
    _kind_bands(out, rows, t0, r0 + RATIO_H, xpos)

    def series(key_ms, color, shape, size, label_kw=""):
        pts = [(xpos(i), ax.y(v * 1e3)) for i, v in enumerate(key_ms) if v and v * 1e3 >= lo]
        for px, py in pts:
            if shape == "circle":
                out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="{size}" '
                           f'fill="{color}"{label_kw}/>')
            elif shape == "square":
                out.append(f'<rect x="{px - size:.1f}" y="{py - size:.1f}" width="{2 * size}" '
                           f'height="{2 * size}" fill="none" stroke="{color}" stroke-width="1.5"/>')
            else:  # dash
                out.append(f'<line x1="{px - STEP / 2 + 2:.1f}" y1="{py:.1f}" '
                           f'x2="{px + STEP / 2 - 2:.1f}" y2="{py:.1f}" stroke="{color}" '
                           f'stroke-width="2"{label_kw}/>')

    series([r["floor_ms"] for r in rows], COLORS["floor"], "dash", 0, ' stroke-dasharray="2,2"')
    series([r["empty_ms"] for r in rows], COLORS["empty"], "dash", 0)
    series([r["bare_ms"] for r in rows], COLORS["bare"], "dash", 0)
    for g in PEER_GROUPS:
        series([r["peers"].get(g, {}).get("ms") for r in rows], COLORS[g], "square", 3)
    series([r["ours_ms"] for r in rows], COLORS["ours"], "circle", 3.5)

    # ratio panel
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    span = max([abs(math.log10(v)) for v in ratios] + [math.log10(2)]) * 1.1
    rax = _Axis(10 ** -span, 10 ** span, r0, r0 + RATIO_H)
    _panel_frame(out, rax, r0, RATIO_H, width, "ours / best peer (log)",
                 _log_ticks(10 ** -span, 10 ** span))
    y1 = rax.y(1.0)
    out.append(f'<line x1="{LEFT}" y1="{y1:.1f}" x2="{width - RIGHT}" y2="{y1:.1f}" '
               'stroke="black" stroke-width="1"/>')
    for i, r in enumerate(rows):
        if not r["ratio"]:
            out.append(f'<text x="{xpos(i):.1f}" y="{y1 - 3:.1f}" text-anchor="middle" '
                       f'fill="{COLORS["loss"]}">?</text>')
            continue
        y = rax.y(r["ratio"])
        color = COLORS["win"] if r["ratio"] <= 1 else COLORS["loss"]
        out.append(f'<rect x="{xpos(i) - STEP / 2 + 2:.1f}" y="{min(y, y1):.1f}" '
                   f'width="{STEP - 4}" height="{abs(y - y1):.1f}" fill="{color}">'
                   f'<title>{escape(r["name"])}: ours/best {r["ratio"]:.2f} '
                   f'({escape(r["best_peer"] or "")})</title></rect>')
    # call labels
    for i, r in enumerate(rows):
        ly = r0 + RATIO_H + 8
        out.append(f'<text transform="translate({xpos(i) + 3:.1f},{ly:.1f}) rotate(60)" '
                   f'font-size="9">{escape(r["name"])}</text>')
    _legend(out, width - RIGHT + 12, t0 + 10)
    out.append(f'<text x="{LEFT}" y="{height - 6}" font-size="10" fill="#555">'
               f'{escape(meta.get("gpu", ""))} {escape(meta.get("date", ""))}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _title(doc: dict) -> str:
    meta = doc.get("meta", {})
    s = doc["report"]["summary"]
    head = f"Serving envelope, {meta.get('profile')} profile, K={meta.get('k')}"
    if s["compared"]:
        head += (f": geomean speedup vs best peer {s['geomean_speedup']:.2f}x, "
                 f"{len(s['lost'])} of {s['compared']} lost")
    return head


def _panel_frame(out, ax, top, h, width, label, ticks):
    out.append(f'<rect x="{LEFT}" y="{top}" width="{width - LEFT - RIGHT}" height="{h}" '
               'fill="none" stroke="#444"/>')
    for v in ticks:
        y = ax.y(v)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{width - RIGHT}" y2="{y:.1f}" '
                   'stroke="#e4e4e4"/>')
        out.append(f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{_tick_label(v)}</text>')
    out.append(f'<text transform="translate(14,{top + h / 2:.0f}) rotate(-90)" '
               f'text-anchor="middle">{escape(label)}</text>')


def _kind_bands(out, rows, top, bottom, xpos):
    """Separators between kinds of calls, with the kind's name on top."""
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i]["kind"] != rows[start]["kind"]:
            if i < len(rows):
                xs = xpos(i) - STEP / 2
                out.append(f'<line x1="{xs:.1f}" y1="{top}" x2="{xs:.1f}" y2="{bottom}" '
                           'stroke="#bbb" stroke-dasharray="4,3"/>')
            mid = (xpos(start) + xpos(i - 1)) / 2
            out.append(f'<text x="{mid:.1f}" y="{top - 4}" text-anchor="middle" fill="#555">'
                       f'{escape(rows[start]["kind"])}</text>')
            start = i


def _legend(out, x0, y0):
    items = [("ours", "circle", COLORS["ours"])] + [(g, "square", COLORS[g]) for g in PEER_GROUPS]
    items += [("bare read", "dash", COLORS["bare"]), ("empty kernel", "dash", COLORS["empty"]),
              ("floor", "dash", COLORS["floor"])]
    for j, (label, shape, color) in enumerate(items):
        y = y0 + j * 16
        if shape == "circle":
            out.append(f'<circle cx="{x0 + 6}" cy="{y}" r="3.5" fill="{color}"/>')
        elif shape == "square":
            out.append(f'<rect x="{x0 + 3}" y="{y - 3}" width="6" height="6" fill="none" '
                       f'stroke="{color}" stroke-width="1.5"/>')
        else:
            dash = ' stroke-dasharray="2,2"' if label == "floor" else ""
            out.append(f'<line x1="{x0}" y1="{y}" x2="{x0 + 12}" y2="{y}" stroke="{color}" '
                       f'stroke-width="2"{dash}/>')
        out.append(f'<text x="{x0 + 18}" y="{y + 4}">{escape(label)}</text>')


def build_report(doc: dict) -> dict:
    """doc['report'] from doc['calls'] and doc['not_run']."""
    rows = [call_row(rec) for rec in doc.get("calls", [])]
    return {"rows": rows, "summary": summarize(rows, doc.get("not_run", []))}


def write_text(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", help="envelope.py --json-out file")
    p.add_argument("--md-out")
    p.add_argument("--svg-out")
    args = p.parse_args(argv)
    try:
        with open(args.json, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"error: {args.json}: {e}", file=sys.stderr)
        return 2
    if doc.get("schema") != SCHEMA:
        print(f"error: {args.json} is not an envelope result (schema {doc.get('schema')!r})",
              file=sys.stderr)
        return 2
    doc["report"] = build_report(doc)
    text = markdown(doc)
    if args.md_out:
        write_text(args.md_out, text)
    if args.svg_out:
        write_text(args.svg_out, svg(doc))
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
