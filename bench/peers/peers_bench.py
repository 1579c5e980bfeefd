#!/usr/bin/env python3
"""Peers' exact Top-K on the project's generated scores: time, exactness and floor per call.

    python3 bench/peers/peers_bench.py --shapes matrix --profile indexer --gen-cu gen.cu \
        --peers torch,flashinfer,sglang --kit .peers --json-out peers.json

Per call: scores generated on the GPU by our generator kernel (identical to what
`topk-bench bench` reads for the same profile, seed, shape); each peer is run once eagerly and
verified, captured in a CUDA graph (eager timing when capture fails, said in the output),
replayed once and verified, timed (bench/RESULTS.md, "How results are taken"), and verified
again. An inexact result is reported, not timed. The floor is one read of the valid scores at
4.49 TB/s.

`--peers topk,sglang,...` adds this project's Python package (`topk.select`) as one more
selector, timed the same way in the same process on the same tensors (install the wheel of
`scripts/python-wheel.sh` first).

`--list-shapes` prints the calls (name rows width first_length row_offset) without a GPU.
Exit status: 0 when the run completed (peer failures are data, see the JSON), 2 when it could
not start, 3 when the CUDA context was lost part-way (the JSON holds the calls done).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socket
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from call_shapes import ShapeError, format_shape_table, parse_shapes  # noqa: E402
from score_generator import PROFILE_CODES  # noqa: E402

# A float4 streaming read measured on the H200 (bench/RESULTS.md, "How results are taken").
READ_BANDWIDTH_BPS = 4.49e12
SCHEMA = "topk-peers-bench/1"
EXIT_SETUP = 2
EXIT_CONTEXT_LOST = 3
# Free memory kept for verification chunks, peer workspaces and outputs.
MEMORY_MARGIN_BYTES = 4 << 30
DEVICE = "cuda"


class ContextLost(RuntimeError):
    """A CUDA error broke the context; nothing after it can run in this process."""


def floor_ms(valid_bytes: int) -> float:
    return valid_bytes / READ_BANDWIDTH_BPS * 1e3


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="matrix",
                   help="matrix | trace245 | trace430 | custom:MxN[,MxN...] (sizes like 128K, 1M)")
    p.add_argument("--profile", default="indexer", choices=list(PROFILE_CODES),
                   help="data profile of the generator (indexer, iid, or an adversarial family)")
    p.add_argument("--k", type=int, default=2048)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gen-cu", help="CUDA source of the generator (topk codegen --generator)")
    p.add_argument("--peers", default="torch,flashinfer,sglang")
    p.add_argument("--kit", default=".peers", help="folder with run_peers.py, the .so files "
                   "and the tvm_ffi wheel")
    p.add_argument("--json-out", help="write all numbers here (rewritten after every call)")
    p.add_argument("--reps", type=int, default=30, help="timed rounds per call (median)")
    p.add_argument("--warmup", type=int, default=3, help="untimed passes over the copies")
    p.add_argument("--verify-chunk-gib", type=float, default=1.0,
                   help="rows verified at once, in GiB of scores")
    p.add_argument("--list-shapes", action="store_true",
                   help="print the calls and exit (no GPU needed)")
    args = p.parse_args(argv)
    args.peer_names = [s.strip() for s in args.peers.split(",") if s.strip()]
    return args


def short_status(entry: dict) -> str:
    status = entry.get("status")
    if status == "ok":
        s = f"{entry['median_ms']:.3f}"
        return s + ("*" if entry.get("timing_mode") == "eager" else "")
    if status == "inexact":
        return f"INEXACT({entry['verify']['bad_rows']})"
    return {"error": "ERROR", "unavailable": "n/a", "skipped": "skipped",
            "not_applicable": "-"}.get(status, str(status))


def best_exact(peers: dict):
    ok = [(e["median_ms"], n) for n, e in peers.items() if e.get("status") == "ok"]
    return min(ok)[1] if ok else None


def progress_line(rec: dict, peer_names: list) -> str:
    c = rec["call"]
    cells = []
    for n in peer_names:
        e = rec["peers"].get(n, {"status": "skipped"})
        cell = f"{n} {short_status(e)}"
        if e.get("status") == "ok":
            cell += f" ({e['x_floor']:.2f}x)"
        elif e.get("status") == "not_applicable":
            continue
        elif e.get("status") in ("error", "skipped", "unavailable"):
            cell += f" [{e.get('stage', '')}: {e.get('error', '')}]"
        elif e.get("status") == "inexact":
            cell += f" [{e.get('detail', '')}]"
        cells.append(cell)
    return (f"{c['name']} M={c['rows']} N={c['width']} floor {rec['floor_ms']:.3f} ms | "
            + " | ".join(cells))


def table_cell(entry: dict) -> str:
    """Median ms and time/floor, or the failure."""
    if entry.get("status") == "ok":
        return f"{short_status(entry)} ({entry['x_floor']:.2f}x)"
    return short_status(entry)


def table(records: list, peer_names: list) -> str:
    head = (["shape", "M", "N", "floor ms"] + [f"{n} ms (x floor)" for n in peer_names]
            + ["best exact"])
    rows = [head]
    for r in records:
        c = r["call"]
        rows.append([c["name"], str(c["rows"]), str(c["width"]), f"{r['floor_ms']:.3f}"]
                    + [table_cell(r["peers"].get(n, {"status": "skipped"})) for n in peer_names]
                    + [best_exact(r["peers"]) or "none"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def trace_summaries(records: list, peer_names: list) -> list:
    """Per trace: summed floor and, per peer, summed medians when every call was exact."""
    out = []
    traces = []
    for r in records:
        t = r["call"].get("trace")
        if t and t not in traces:
            traces.append(t)
    for t in traces:
        calls = [r for r in records if r["call"].get("trace") == t]
        summary = {"trace": t, "calls": len(calls),
                   "floor_ms": sum(r["floor_ms"] for r in calls),
                   "valid_bytes": sum(r["call"]["valid_bytes"] for r in calls), "peers": {}}
        for n in peer_names:
            entries = [r["peers"].get(n, {"status": "skipped"}) for r in calls]
            bad = [(r["call"]["name"], e.get("status")) for r, e in zip(calls, entries)
                   if e.get("status") != "ok"]
            if bad:
                summary["peers"][n] = {"status": "incomplete", "failed_calls": bad}
            else:
                total = sum(e["median_ms"] for e in entries)
                summary["peers"][n] = {"status": "ok", "total_ms": total,
                                       "x_floor": total / summary["floor_ms"]}
        out.append(summary)
    return out


def write_json(path: str, doc: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def collect_meta(args, torch, generator_info, kit_info) -> dict:
    props = torch.cuda.get_device_properties(0)
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "gpu": torch.cuda.get_device_name(0),
        "compute_capability": list(torch.cuda.get_device_capability(0)),
        "sm_count": props.multi_processor_count,
        "gpu_memory_bytes": props.total_memory,
        "shapes": args.shapes,
        "profile": args.profile,
        "k": args.k,
        "seed": args.seed,
        "reps": args.reps,
        "warmup": args.warmup,
        "read_bandwidth_bps": READ_BANDWIDTH_BPS,
        "peers": args.peer_names,
        "generator": generator_info,
        "kit": kit_info,
        "adapters": {
            "torch": "torch.topk(largest, unsorted) on the -inf-masked dense matrix; untimed: "
                     "indices >= L -> -1, rows sorted descending so -1 comes last",
        },
        "timing": "CUDA graph per input copy, median over rounds of replays (CUDA events); "
                  "'*' in the table marks eager timing after a failed capture",
    }
    for name in ("cupy", "numpy"):
        try:
            meta[name] = __import__(name).__version__
        except Exception as e:  # noqa: BLE001
            meta[name] = f"unavailable ({e})"
    return meta


def ensure_context(torch) -> None:
    try:
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        raise ContextLost(f"{type(e).__name__}: {e}") from e


def bench_peer(torch, peer, copies, lengths, call, args) -> dict:
    from exactness import verify_selection
    from graph_timing import Replayer, time_replays
    from peer_adapters import first_line

    k = args.k
    chunk = int(args.verify_chunk_gib * (1 << 30))
    res: dict = {"status": None}

    def verify_all(outputs, stage):
        for i, out in enumerate(outputs):
            v = verify_selection(copies[i], lengths, peer.to_contract(out, lengths), k, chunk)
            if not v.exact:
                res.update(status="inexact", stage=stage, verify=v.to_json(),
                           detail=f"copy {i}: {v.summary()}")
                return False
        return True

    stage = "eager call"
    try:
        res["route_eager"] = peer.route(call.rows, call.width, k)
        out = peer.select(copies[0], lengths, k)
        torch.cuda.synchronize()
        stage = "verifying the eager call"
        v = verify_selection(copies[0], lengths, peer.to_contract(out, lengths), k, chunk)
        res["verify_eager"] = v.to_json()
        del out

        stage = "capture"
        captured = {}

        def call_on_copy(i, capturing):
            o = peer.select(copies[i], lengths, k)
            if capturing and i == 0:
                captured["route"] = peer.route(call.rows, call.width, k)
            return o

        replayer = Replayer(call_on_copy, len(copies))
        res["timing_mode"] = replayer.mode
        res["route"] = captured.get("route", res["route_eager"])
        if replayer.note:
            res["note"] = replayer.note
        stage = "first replay"
        for i in range(len(copies)):
            replayer.replay(i)
        torch.cuda.synchronize()
        stage = "verifying the first replay"
        if not verify_all(replayer.outputs, "first replay"):
            replayer.close()
            return res
        stage = "timing"
        res["timing"] = time_replays(replayer, args.reps, args.warmup)
        stage = "verifying after timing"
        exact_after = verify_all(replayer.outputs, "after timing")
        replayer.close()
        if not exact_after:
            res["detail"] += " (exact on the first replay: nondeterministic)"
            return res
    except Exception as e:  # noqa: BLE001 - reported with the stage it failed in
        traceback.print_exc()
        res.update(status="error", stage=stage, error=f"{type(e).__name__}: {first_line(e)}")
        ensure_context(torch)
        return res
    res["status"] = "ok"
    res["median_ms"] = res["timing"]["median_ms"]
    res["x_floor"] = res["median_ms"] / floor_ms(call.valid_bytes)
    if not res["verify_eager"]["exact"]:
        res["note"] = (res.get("note", "") + " eager call was inexact: "
                       + json.dumps(res["verify_eager"]["first_bad"])).strip()
    return res


def run_call(torch, call, args, generator, peers, extra=None) -> dict:
    """One call: inputs generated and checked, then every peer on the same copies. `extra`,
    when given, is called as extra(rec, copies, lengths) after the peers, on the same inputs."""
    from graph_timing import input_copies, l2_bytes
    from score_generator import check_generated, lengths_tensor

    rec = {"call": call.to_json(), "floor_ms": floor_ms(call.valid_bytes), "peers": {}}
    copies_n = input_copies(call.dense_bytes, l2_bytes())
    need = call.dense_bytes * copies_n + MEMORY_MARGIN_BYTES
    free, _total = torch.cuda.mem_get_info()
    if need > free:
        reason = (f"needs {need / 2**30:.1f} GiB ({copies_n} input copies + margin), "
                  f"{free / 2**30:.1f} GiB free")
        for p in peers:
            rec["peers"][p.name] = {"status": "skipped", "error": reason}
        return rec
    x = torch.empty((call.rows, call.width), dtype=torch.float32, device=DEVICE)
    lengths = lengths_tensor(call, DEVICE)
    generator.fill(x, lengths, call, args.seed, args.profile, args.k)
    rec["data"] = check_generated(x, lengths, int(args.verify_chunk_gib * (1 << 30)))
    copies = [x] + [x.clone() for _ in range(copies_n - 1)]
    rec["input_copies"] = copies_n
    for p in peers:
        if not p.available:
            rec["peers"][p.name] = {"status": "unavailable", "error": p.error}
            continue
        why_not = p.not_applicable(call)
        if why_not:
            rec["peers"][p.name] = {"status": "not_applicable", "error": why_not}
            continue
        rec["peers"][p.name] = bench_peer(torch, p, copies, lengths, call, args)
        torch.cuda.empty_cache()
    if extra is not None:
        extra(rec, copies, lengths)
    del copies, x, lengths
    torch.cuda.empty_cache()
    return rec


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        calls = parse_shapes(args.shapes)
    except ShapeError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_SETUP
    if args.list_shapes:
        sys.stdout.write(format_shape_table(calls))
        return 0
    if not args.gen_cu:
        print("error: --gen-cu is required (write it with `topk codegen --generator`)",
              file=sys.stderr)
        return EXIT_SETUP
    too_short = [c.name for c in calls if c.width < args.k]
    if too_short:
        print(f"error: width below K={args.k} in {too_short}", file=sys.stderr)
        return EXIT_SETUP

    import torch

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA device; this script runs on the GPU machine",
              file=sys.stderr)
        return EXIT_SETUP
    from peer_adapters import build_peers
    from score_generator import GeneratorError, ScoreGenerator

    try:
        generator = ScoreGenerator(args.gen_cu)
        peers, kit_info = build_peers(args.peer_names, args.kit)
    except (GeneratorError, ValueError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_SETUP
    unavailable = [f"peer {p.name} unavailable: {p.error}" for p in peers if not p.available]
    for line in unavailable:
        print(line, file=sys.stderr)
    if "compile_warning" in generator.info:
        print(f"warning: {generator.info['compile_warning']}", file=sys.stderr)
    doc = {"schema": SCHEMA, "meta": collect_meta(args, torch, generator.info, kit_info),
           "calls": [], "traces": [], "problems": list(unavailable)}
    names = [p.name for p in peers]
    if args.json_out:
        write_json(args.json_out, doc)  # fails now, not after the run, when the path is bad
    print(f"{doc['meta']['gpu']} | torch {torch.__version__} | profile {args.profile} "
          f"| K={args.k} | seed {args.seed} | {len(calls)} calls", flush=True)
    status = 0
    for i, call in enumerate(calls):
        try:
            rec = run_call(torch, call, args, generator, peers)
        except ContextLost as e:
            doc["problems"].append(f"CUDA context lost at {call.name}: {e}; later calls not run")
            print(f"error: CUDA context lost at {call.name}: {e}", file=sys.stderr)
            status = EXIT_CONTEXT_LOST
            break
        except GeneratorError as e:
            doc["problems"].append(f"{call.name}: {e}")
            print(f"error: {call.name}: {e}", file=sys.stderr)
            status = EXIT_SETUP
            break
        except Exception as e:  # noqa: BLE001 - e.g. out of memory preparing the inputs
            traceback.print_exc()
            why = f"preparing the call failed: {type(e).__name__}: {str(e).strip()[:300]}"
            rec = {"call": call.to_json(), "floor_ms": floor_ms(call.valid_bytes),
                   "peers": {p.name: {"status": "skipped", "error": why} for p in peers}}
            torch.cuda.empty_cache()
            try:
                ensure_context(torch)
            except ContextLost as lost:
                doc["problems"].append(f"CUDA context lost at {call.name}: {lost}")
                status = EXIT_CONTEXT_LOST
                break
        doc["calls"].append(rec)
        for n, e in rec["peers"].items():
            if e.get("status") not in ("ok", "unavailable", "not_applicable"):
                doc["problems"].append(f"{call.name} {n}: {e.get('status')} "
                                       f"{e.get('stage', '')} {e.get('error') or e.get('detail')}")
        print(f"[{i + 1}/{len(calls)}] {progress_line(rec, names)}", flush=True)
        doc["traces"] = trace_summaries(doc["calls"], names)
        if args.json_out:
            write_json(args.json_out, doc)
    print()
    print(table(doc["calls"], names))
    for t in doc["traces"]:
        cells = [f"{n} " + (f"{e['total_ms']:.2f} ms ({e['x_floor']:.2f}x)" if e["status"] == "ok"
                            else f"incomplete ({len(e['failed_calls'])} calls)")
                 for n, e in t["peers"].items()]
        print(f"{t['trace']}: {t['calls']} calls, floor {t['floor_ms']:.2f} ms; " + "; ".join(cells))
    for problem in doc["problems"]:
        print(f"problem: {problem}", file=sys.stderr)
    if args.json_out:
        write_json(args.json_out, doc)
        print(f"wrote {args.json_out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
