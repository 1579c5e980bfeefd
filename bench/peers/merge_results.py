#!/usr/bin/env python3
"""Merge `topk-bench bench --json` results with peers_bench.py results into one JSON and one table.

    python3 bench/peers/merge_results.py --peers-json out/peers_*.json \
        --topk-dir out/topk --json-out out/bench.json --md-out out/bench.md

Each `topk-bench bench` result is a file `<call name>.json` (the names
`peers_bench.py --list-shapes` prints) holding at least median_ms, rows, width, k and exact;
spec and routes are carried along. Peer results may come from several runs (one per peer); a call's peers are united.

Speedup = peer ms / our ms (above 1: ours is faster). A time enters a comparison only when its
output was exact. Geometric means run over the items of the run: each call outside a trace,
and each trace as the sum of its calls. Standard library only: runs anywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

SCHEMA = "topk-bench-merged/1"
# Column order of the known peers; others follow in the order they appear.
PEER_ORDER = ("torch", "flashinfer", "sglang")


class MergeError(ValueError):
    """Inputs that cannot be merged; the message names the file and what is wrong."""


def load_json_lenient(path: str):
    """A JSON document, or the last line of the file that is one (tools may log first)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    raise MergeError(f"{path}: no JSON object found")


def merge_peer_docs(docs: list) -> tuple:
    """(calls in first-seen order as {name: record}, meta of the first doc, problems)."""
    calls: dict = {}
    problems: list = []
    meta = docs[0][1].get("meta", {}) if docs else {}
    for path, doc in docs:
        if doc.get("schema") != "topk-peers-bench/1":
            raise MergeError(f"{path}: not a peers_bench.py result (schema {doc.get('schema')!r})")
        for key in ("profile", "k", "seed"):
            if doc["meta"].get(key) != meta.get(key):
                raise MergeError(
                    f"{path}: {key}={doc['meta'].get(key)!r} but the first peers file has "
                    f"{meta.get(key)!r}; merge runs of one profile, K and seed only"
                )
        problems.extend(f"{os.path.basename(path)}: {p}" for p in doc.get("problems", []))
        for rec in doc.get("calls", []):
            name = rec["call"]["name"]
            if name not in calls:
                calls[name] = {"call": rec["call"], "floor_ms": rec["floor_ms"], "peers": {}}
            elif calls[name]["call"] != rec["call"]:
                raise MergeError(f"{path}: call {name} differs from an earlier file's")
            for peer, entry in rec["peers"].items():
                old = calls[name]["peers"].get(peer)
                if old is None or (old.get("status") != "ok" and entry.get("status") == "ok"):
                    calls[name]["peers"][peer] = entry
                elif entry.get("status") == "ok":
                    problems.append(f"{name} {peer}: measured in more than one file; "
                                    "kept the first")
    return calls, meta, problems


def load_topk_dir(directory: str) -> dict:
    """{call name: parsed result or {'error': why}} from <name>.json, with the last line of
    <name>.err (the run's stderr) explaining a result that is missing or unreadable."""
    if not os.path.isdir(directory):
        raise MergeError(f"--topk-dir {directory!r} is not a directory")
    results: dict = {}
    stderr_tail: dict = {}
    for entry in sorted(os.listdir(directory)):
        stem, ext = os.path.splitext(entry)
        path = os.path.join(directory, entry)
        if ext == ".json":
            try:
                results[stem] = load_json_lenient(path)
            except (MergeError, OSError) as e:
                results[stem] = {"error": str(e)}
        elif ext == ".err":
            with open(path, encoding="utf-8", errors="replace") as f:
                lines = [ln for ln in f.read().splitlines() if ln.strip()]
            if lines:
                stderr_tail[stem] = lines[-1][:400]
    for stem, tail in stderr_tail.items():
        result = results.setdefault(stem, {"error": "no result file"})
        if "error" in result:
            result["error"] += f"; stderr ends: {tail}"
    return results


def ours_entry(call: dict, result: dict | None, k: int) -> dict:
    """Our result for a call, checked against the call's shape."""
    if result is None:
        return {"status": "missing", "error": "no topk-bench bench result for this call"}
    if "error" in result and "median_ms" not in result:
        return {"status": "error", "error": result["error"]}
    median = result.get("median_ms", result.get("timing", {}).get("median_ms"))
    if median is None:
        return {"status": "error", "error": "topk-bench bench result has no median_ms"}
    for keys, want in ((("rows", "m"), call["rows"]), (("width", "n"), call["width"]),
                       (("k",), k)):
        got = next((result[key] for key in keys if key in result), None)
        if got is not None and want is not None and got != want:
            return {"status": "mismatch",
                    "error": f"topk-bench bench ran {keys[0]}={got}, the call has {want}"}
    exact = result.get("exact")
    status = {True: "ok", False: "inexact"}.get(exact, "unverified")
    entry = {"status": status, "median_ms": float(median)}
    if status != "ok":
        entry["error"] = f"exact={exact!r} (only a verified exact time is compared)"
    for key in ("spec", "routes", "exact"):
        if key in result:
            entry[key] = result[key]
    return entry


def geomean(values: list):
    values = [v for v in values if v is not None and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def best_peer(peers: dict):
    ok = [(e["median_ms"], name) for name, e in peers.items() if e.get("status") == "ok"]
    if not ok:
        return None, None
    ms, name = min(ok)
    return name, ms


def compare(ours_ms, floor, peers: dict) -> dict:
    """Speedups of ours over each exact peer and over the best exact peer."""
    best, best_ms = best_peer(peers)
    out = {"best_peer": best, "best_peer_ms": best_ms, "speedup": {}, "speedup_vs_best": None,
           "ours_x_floor": ours_ms / floor if ours_ms else None}
    if ours_ms:
        for name, e in peers.items():
            if e.get("status") == "ok":
                out["speedup"][name] = e["median_ms"] / ours_ms
        if best_ms:
            out["speedup_vs_best"] = best_ms / ours_ms
    return out


def merge(peer_docs: list, topk_results: dict) -> dict:
    calls, meta, problems = merge_peer_docs(peer_docs)
    k = meta.get("k")
    peer_names: list = [n for n in PEER_ORDER
                        if any(n in rec["peers"] for rec in calls.values())]
    for rec in calls.values():
        for n in rec["peers"]:
            if n not in peer_names:
                peer_names.append(n)
    unknown = sorted(set(topk_results) - set(calls))
    if unknown:
        problems.append(f"topk results for calls no peers file has: {', '.join(unknown)}")
    merged_calls = []
    for name, rec in calls.items():
        ours = ours_entry(rec["call"], topk_results.get(name), k)
        if ours["status"] != "ok":
            problems.append(f"{name} ours: {ours['status']}: {ours.get('error', '')}")
        for peer, e in rec["peers"].items():
            if e.get("status") not in ("ok", "unavailable", "not_applicable"):
                why = e.get("error") or e.get("detail") or ""
                problems.append(f"{name} {peer}: {e.get('status')}: {why}")
        ours_ms = ours["median_ms"] if ours["status"] == "ok" else None
        row = {"name": name, **{key: rec["call"][key] for key in
                                ("rows", "width", "first_length", "row_offset", "trace",
                                 "valid_bytes")},
               "floor_ms": rec["floor_ms"], "ours": ours,
               "peers": {n: _peer_summary(e, rec["floor_ms"]) for n, e in rec["peers"].items()}}
        row.update(compare(ours_ms, rec["floor_ms"], row["peers"]))
        merged_calls.append(row)
    traces = _traces(merged_calls, peer_names)
    items = [c for c in merged_calls if not c["trace"]] + traces
    summary = {
        "items": len(items),
        "geomean_speedup_vs_best": geomean([i["speedup_vs_best"] for i in items]),
        "geomean_speedup": {n: geomean([i["speedup"].get(n) for i in items])
                            for n in peer_names},
        "geomean_ours_x_floor": geomean([i["ours_x_floor"] for i in items]),
        "compared_items_vs_best": sum(1 for i in items if i["speedup_vs_best"]),
    }
    return {"schema": SCHEMA, "meta": meta, "peer_names": peer_names, "calls": merged_calls,
            "traces": traces, "summary": summary, "problems": problems}


def _peer_summary(e: dict, floor: float) -> dict:
    out = {"status": e.get("status")}
    if e.get("status") == "ok":
        out["median_ms"] = e["median_ms"]
        out["x_floor"] = e["median_ms"] / floor
        out["timing_mode"] = e.get("timing_mode")
    for key in ("route", "error", "detail", "note", "stage"):
        if e.get(key):
            out[key] = e[key]
    return out


def _traces(calls: list, peer_names: list) -> list:
    order: list = []
    for c in calls:
        if c["trace"] and c["trace"] not in order:
            order.append(c["trace"])
    out = []
    for t in order:
        members = [c for c in calls if c["trace"] == t]
        floor = sum(c["floor_ms"] for c in members)
        ours_ok = all(c["ours"]["status"] == "ok" for c in members)
        ours_ms = sum(c["ours"]["median_ms"] for c in members) if ours_ok else None
        peers = {}
        for n in peer_names:
            entries = [c["peers"].get(n, {"status": "missing"}) for c in members]
            if all(e.get("status") == "ok" for e in entries):
                total = sum(e["median_ms"] for e in entries)
                peers[n] = {"status": "ok", "median_ms": total, "x_floor": total / floor}
            else:
                bad = sum(1 for e in entries if e.get("status") != "ok")
                peers[n] = {"status": "incomplete", "error": f"{bad} of {len(entries)} calls "
                            "without an exact time"}
        row = {"name": t, "trace": t, "calls": len(members), "rows": sum(c["rows"] for c in members),
               "width": max(c["width"] for c in members),
               "valid_bytes": sum(c["valid_bytes"] for c in members), "floor_ms": floor,
               "ours": ({"status": "ok", "median_ms": ours_ms} if ours_ok else
                        {"status": "incomplete"}),
               "peers": peers}
        row.update(compare(ours_ms, floor, peers))
        out.append(row)
    return out


def _ms(entry: dict) -> str:
    status = entry.get("status")
    if status == "ok":
        mark = "*" if entry.get("timing_mode") == "eager" else ""
        return f"{entry['median_ms']:.3f}{mark}"
    return {"inexact": "inexact", "error": "error", "unavailable": "n/a", "missing": "—",
            "skipped": "skipped", "mismatch": "mismatch", "incomplete": "incomplete",
            "unverified": "unverified", "not_applicable": "-"}.get(
        status, str(status))


def _x(v) -> str:
    return f"{v:.2f}x" if v else "—"


def markdown(merged: dict) -> str:
    meta = merged["meta"]
    names = merged["peer_names"]
    lines = [
        f"# Exact Top-K, K={meta.get('k')}: ours vs peers",
        "",
        f"{meta.get('gpu', '?')}, profile `{meta.get('profile')}`, seed {meta.get('seed')}, "
        f"{meta.get('date', '')}; torch {meta.get('torch', '?')}. Times are medians of CUDA-graph "
        "replays in ms (`*`: eager, capture failed); floor = valid bytes / 4.49 TB/s; "
        "speedup = peer time / our time, exact outputs only.",
        "",
    ]
    head = (["shape", "M", "N", "floor ms", "ours ms", "ours/floor"] + [f"{n} ms" for n in names]
            + ["best peer", "vs best"] + [f"vs {n}" for n in names])
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---" for _ in head) + "|")

    def emit(item, m_cell, n_cell):
        cells = [item["name"], m_cell, n_cell, f"{item['floor_ms']:.3f}", _ms(item["ours"]),
                 _x(item["ours_x_floor"])]
        cells += [_ms(item["peers"].get(n, {"status": "missing"})) for n in names]
        cells += [item["best_peer"] or "none exact", _x(item["speedup_vs_best"])]
        cells += [_x(item["speedup"].get(n)) for n in names]
        lines.append("| " + " | ".join(cells) + " |")

    for c in merged["calls"]:
        if not c["trace"]:
            emit(c, str(c["rows"]), str(c["width"]))
    for t in merged["traces"]:
        emit(t, f"{t['rows']} rows / {t['calls']} calls", f"<= {t['width']}")
    s = merged["summary"]
    geo = (["**geomean**", "", "", "", "", _x(s["geomean_ours_x_floor"])] + [""] * len(names)
           + ["", _x(s["geomean_speedup_vs_best"])]
           + [_x(s["geomean_speedup"].get(n)) for n in names])
    lines.append("| " + " | ".join(geo) + " |")
    lines.append("")
    lines.append(f"Geometric means over {s['items']} items (calls outside traces, traces as a "
                 f"whole); {s['compared_items_vs_best']} have an exact time on both sides.")
    trace_calls = [c for c in merged["calls"] if c["trace"]]
    if trace_calls:
        lines += ["", "## Trace calls", ""]
        sub = ["call", "M", "N", "first L", "floor ms", "ours ms"] + [f"{n} ms" for n in names]
        lines.append("| " + " | ".join(sub) + " |")
        lines.append("|" + "|".join("---" for _ in sub) + "|")
        for c in trace_calls:
            cells = [c["name"], str(c["rows"]), str(c["width"]), str(c["first_length"]),
                     f"{c['floor_ms']:.3f}", _ms(c["ours"])]
            cells += [_ms(c["peers"].get(n, {"status": "missing"})) for n in names]
            lines.append("| " + " | ".join(cells) + " |")
    if merged["problems"]:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in merged["problems"]]
    return "\n".join(lines) + "\n"


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peers-json", nargs="+", required=True, help="peers_bench.py --json-out files")
    p.add_argument("--topk-dir", nargs="*", default=[],
                   help="folders of <call name>.json results of `topk-bench bench --json`")
    p.add_argument("--json-out", required=True)
    p.add_argument("--md-out", required=True)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        docs = [(path, load_json_lenient(path)) for path in args.peers_json]
        topk: dict = {}
        for d in args.topk_dir:
            for name, result in load_topk_dir(d).items():
                if name in topk and "error" not in result and "error" in topk[name]:
                    topk[name] = result
                else:
                    topk.setdefault(name, result)
        merged = merge(docs, topk)
    except (MergeError, OSError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    with open(args.json_out, "w", encoding="utf-8") as f:
        json.dump(merged, f, indent=1)
        f.write("\n")
    text = markdown(merged)
    with open(args.md_out, "w", encoding="utf-8") as f:
        f.write(text)
    sys.stdout.write(text)
    for p in merged["problems"]:
        print(f"problem: {p}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
