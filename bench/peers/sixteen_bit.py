#!/usr/bin/env python3
"""16-bit scores: ours against FlashInfer and torch.topk on float16 and bfloat16 (float32 as the
reference row), on the corners of the operator matrix, every timed output checked exact.
bench/sixteen-bit.sh drives it on the GPU machine:

    python3 bench/peers/sixteen_bit.py --gen-cu gen.cu --kit .peers \
        --json-out sixteen-bit.json --md-out sixteen-bit.md

Per profile (--profiles, indexer and iid) and shape (--shapes, terminal causal windows: row r of
an M-row call ending at N has length N - M + r + 1): the scores are generated once in float32 by
our generator kernel (score_generator.py), then cast to each dtype (--dtypes) with `Tensor.to`
(round to nearest even; -inf stays -inf, so the padding rule the verifier relies on holds), and
checked (no NaN, -inf past every length; values that overflow to +-inf are counted). How many
ties the cast makes at each row's K-th value is counted too (`ties`): with ties an exact Top-K
is any set of K indices whose values are >= the K-th value and that holds every value above it,
which is what exactness.verify_selection checks, so any tie-break is accepted.

Then for ours (`topk.select` eager, a `topk.Selector` planned for the dtype captured in the
graphs), FlashInfer (the kit's `fi_select`, which hands the 16-bit tensor to its kernels
unchanged) and torch.topk (on the -inf-masked matrix), on the same input copies:
peers_bench.bench_peer checks the eager call, captures one CUDA graph per input copy, checks
the first replay, times rounds of replays (graph_timing.py), and checks the outputs of the last
replays after timing. An entry is reported with its time only when the timed outputs were exact;
a peer that is unavailable or fails is reported so, and the run goes on.

The floor of an entry is one read of its valid scores at 4.49 TB/s, 2 bytes a float16 or
bfloat16 score, 4 a float32 one; each time is also given over that floor, and ours against
each peer as peer time / our time (above 1: ours faster).

`--list` prints the entries and their floors without a GPU. Exit status as peers_bench.py:
0 done (peer failures are data), 2 could not start, 3 CUDA context lost (the JSON holds the
entries done).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import peers_bench as pb  # noqa: E402
from call_shapes import ShapeError, custom_calls  # noqa: E402
from score_generator import PROFILE_CODES  # noqa: E402

SCHEMA = "topk-sixteen-bit/1"
DEFAULT_SHAPES = "512x131072,2048x262144,512x1048576,4096x262144"
DEFAULT_DTYPES = "f16,bf16,f32"
DEFAULT_PROFILES = "indexer,iid"
OURS = "topk"
PEERS = (OURS, "flashinfer", "torch")
# Canonical dtype name -> (torch dtype attribute, bytes a score).
DTYPES = {"f16": ("float16", 2), "bf16": ("bfloat16", 2), "f32": ("float32", 4)}
DTYPE_ALIASES = {"float16": "f16", "half": "f16", "fp16": "f16", "bfloat16": "bf16",
                 "float32": "f32", "float": "f32", "fp32": "f32"}


# --- pure parts (no torch) -------------------------------------------------------------------

def split_list(text: str) -> list[str]:
    return [s.strip() for s in text.replace(" ", ",").split(",") if s.strip()]


def parse_shapes(spec: str) -> list:
    """'MxN[,MxN...]' (sizes like 128K, 1M) -> terminal causal windows (call_shapes.Call)."""
    spec = spec.strip().removeprefix("custom:")
    if not split_list(spec):
        raise ShapeError("--shapes: no shape given; expected MxN[,MxN...], e.g. 512x128K")
    return custom_calls(",".join(split_list(spec)))


def parse_dtypes(spec: str) -> list[str]:
    """'f16,bf16,f32' (or float16, bfloat16, half, float32...) -> canonical names, in order."""
    out = []
    for item in split_list(spec.lower()):
        name = DTYPE_ALIASES.get(item, item)
        if name not in DTYPES:
            raise ValueError(f"--dtypes: unknown dtype {item!r}; expected f16, bf16 or f32")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError("--dtypes: no dtype given")
    return out


def parse_profiles(spec: str) -> list[str]:
    out = []
    for name in split_list(spec):
        if name not in PROFILE_CODES:
            raise ValueError(f"--profiles: unknown profile {name!r}; known: "
                             f"{', '.join(PROFILE_CODES)}")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError("--profiles: no profile given")
    return out


def score_bytes(dtype: str) -> int:
    return DTYPES[dtype][1]


def valid_bytes(call, dtype: str) -> int:
    """Bytes of the call's valid scores in this dtype: what a selector must read at least once."""
    return score_bytes(dtype) * call.valid_elements


def floor_us(call, dtype: str) -> float:
    """One read of the valid scores at pb.READ_BANDWIDTH_BPS (4.49 TB/s), in microseconds."""
    return valid_bytes(call, dtype) / pb.READ_BANDWIDTH_BPS * 1e6


def list_entries(profiles: list, calls: list, dtypes: list) -> str:
    lines = ["# profile\tshape\tdtype\trows\twidth\tvalid_bytes\tfloor_us"]
    for p in profiles:
        for c in calls:
            for d in dtypes:
                lines.append(f"{p}\t{c.name}\t{d}\t{c.rows}\t{c.width}\t{valid_bytes(c, d)}\t"
                             f"{floor_us(c, d):.2f}")
    lines.append(f"# {len(lines) - 1} entries")
    return "\n".join(lines) + "\n"


def verdict(entry: dict | None) -> str:
    """'exact' when the eager call, the first replay and the last replays were all exact; else
    what went wrong, in words."""
    if not entry:
        return "not run"
    status = entry.get("status")
    if status == "ok":
        eager = entry.get("verify_eager", {})
        return "exact" if eager.get("exact", True) else "timed replays exact, eager call INEXACT"
    if status == "inexact":
        return f"INEXACT at {entry.get('stage', '?')}: {entry.get('detail', '')}"
    if status == "error":
        return f"error at {entry.get('stage', '?')}: {entry.get('error', '')}"
    return f"{status}: {entry.get('error', '')}"


def timed_us(entry: dict | None) -> float | None:
    """Median in us of an entry whose timed outputs were exact, else None."""
    if entry and entry.get("status") == "ok":
        return entry["median_ms"] * 1e3
    return None


def report_row(rec: dict, names=PEERS) -> dict:
    """One table row: medians (us), time over the floor, ours against each peer, verdicts."""
    floor = rec["floor_us"]
    us = {n: timed_us(rec["peers"].get(n)) for n in names}
    ours = us.get(OURS)
    row = {
        "profile": rec["profile"], "shape": rec["call"]["name"], "dtype": rec["dtype"],
        "floor_us": floor,
        "us": us,
        "x_floor": {n: (t / floor if t is not None and floor > 0 else None) for n, t in us.items()},
        "speedup": {n: (t / ours if t is not None and ours else None)
                    for n, t in us.items() if n != OURS},
        "verdicts": {n: verdict(rec["peers"].get(n)) for n in names},
    }
    ran = [v for n, v in row["verdicts"].items()
           if rec["peers"].get(n, {}).get("status") not in ("unavailable", "skipped", None)]
    row["exact"] = all(v == "exact" for v in ran)
    return row


def geomean(values) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(rows: list, names=PEERS) -> dict:
    """Per dtype: geometric means of ours over its floor and of ours against each peer, over
    the entries where both were timed exact."""
    out = {}
    for d in dict.fromkeys(r["dtype"] for r in rows):
        mine = [r for r in rows if r["dtype"] == d]
        out[d] = {"entries": len(mine),
                  "ours_x_floor": geomean(r["x_floor"].get(OURS) for r in mine),
                  "speedup": {n: geomean(r["speedup"].get(n) for r in mine)
                              for n in names if n != OURS}}
    return out


def build_report(doc: dict) -> dict:
    names = doc.get("meta", {}).get("peers") or list(PEERS)
    rows = [report_row(rec, names) for rec in doc["entries"]]
    return {"rows": rows, "summary": summarize(rows, names)}


def _num(v, fmt="{:.1f}", none="-") -> str:
    return none if v is None else fmt.format(v)


def _cell(entry: dict | None, floor: float, with_floor: bool = True) -> str:
    """Median us (and time over the floor), or what happened instead."""
    t = timed_us(entry)
    if t is not None:
        eager = "*" if entry.get("timing_mode") == "eager" else ""
        return f"{t:.1f}{eager}" + (f" ({t / floor:.2f}x)" if with_floor else "")
    if not entry:
        return "not run"
    if entry.get("status") == "inexact":
        return f"INEXACT({entry.get('verify', {}).get('bad_rows', '?')})"
    return {"error": "ERROR", "unavailable": "n/a", "skipped": "skipped"}.get(
        entry.get("status"), str(entry.get("status")))


def markdown(doc: dict) -> str:
    meta = doc.get("meta", {})
    names = meta.get("peers") or list(PEERS)
    peers = [n for n in names if n != OURS]
    report = doc.get("report") or build_report(doc)
    kit = meta.get("kit") or {}
    lines = [
        "# 16-bit scores: ours against " + " and ".join(peers),
        "",
        (f"{meta.get('gpu', '?')} | torch {meta.get('torch', '?')} | topk "
         f"{meta.get('topk_version', '?')} | FlashInfer {kit.get('flashinfer_version', '?')} | "
         f"K={meta.get('k', '?')} | seed {meta.get('seed', '?')} | {meta.get('reps', '?')} "
         f"rounds | {meta.get('date', '')}"),
        "",
        ("Medians of CUDA-graph replays in us, (x floor) = time over the entry's floor: one "
         "read of the valid scores at 4.49 TB/s, 2 bytes a float16/bfloat16 score, 4 a float32 "
         "one. 'vs P' = P's time / ours (above 1: ours faster). Every timed output was checked "
         "exact (eager call, first replay, last replays after timing); `*`: timed eagerly "
         "(capture failed)."),
        "",
        "| profile | shape | dtype | floor us | ours us | ours/floor | "
        + " | ".join(f"{n} us (x floor)" for n in peers) + " | "
        + " | ".join(f"vs {n}" for n in peers) + " | exact |",
        "|" + "---|" * (7 + 2 * len(peers)),
    ]
    for rec, row in zip(doc["entries"], report["rows"]):
        bad = [f"{n}: {v}" for n, v in row["verdicts"].items()
               if v != "exact" and not v.startswith(("unavailable", "skipped"))]
        cells = [row["profile"], row["shape"], row["dtype"], f"{row['floor_us']:.1f}",
                 _cell(rec["peers"].get(OURS), row["floor_us"], with_floor=False),
                 _num(row["x_floor"].get(OURS), "{:.2f}x")]
        cells += [_cell(rec["peers"].get(n), row["floor_us"]) for n in peers]
        cells += [_num(row["speedup"].get(n), "{:.2f}x") for n in peers]
        cells.append("yes" if not bad else "; ".join(bad).replace("|", "/"))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Geometric means per dtype (entries where both sides were timed exact):", ""]
    for d, s in report["summary"].items():
        parts = [f"ours/floor {_num(s['ours_x_floor'], '{:.2f}x')}"]
        parts += [f"vs {n} {_num(v, '{:.2f}x')}" for n, v in s["speedup"].items()]
        lines.append(f"- **{d}** ({s['entries']} entries): " + ", ".join(parts))
    lines += ["", "## Ties at the K-th value and the cast", "",
              ("Rows whose Top-K set is not unique (more scores equal the K-th value than the "
               "set has room for), the mean and largest number of scores equal to a row's K-th "
               "value, and valid scores the cast turned into +-inf."), "",
              ("| profile | shape | dtype | rows not unique | tie group mean | tie group max | "
               "valid +-inf |"), "|---|---|---|---|---|---|---|"]
    for rec in doc["entries"]:
        t, data = rec.get("ties") or {}, rec.get("data") or {}
        if not t:
            continue
        share = t["rows_not_unique"] / t["long_rows"] if t.get("long_rows") else 0.0
        lines.append(f"| {rec['profile']} | {rec['call']['name']} | {rec['dtype']} | "
                     f"{t['rows_not_unique']}/{t['long_rows']} ({100 * share:.1f}%) | "
                     f"{t['tie_group_mean']:.1f} | {t['tie_group_max']} | "
                     f"{data.get('valid_pos_inf', 0) + data.get('valid_neg_inf', 0)} |")
    routes = []
    for rec in doc["entries"]:
        for n, e in rec["peers"].items():
            if e.get("route"):
                eager = e.get("route_eager")
                if eager and eager != e["route"]:
                    via = f"{e['route']} (eager call: {eager})"
                else:
                    via = e["route"]
                routes.append(f"- {rec['profile']} {rec['call']['name']} {rec['dtype']} {n}: {via}")
    if routes:
        lines += ["", "## Paths taken in the graphs", ""] + routes
    if doc.get("problems"):
        lines += ["", "## Problems", ""] + [f"- {p}" for p in doc["problems"]]
    return "\n".join(lines) + "\n"


def write_text(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_outputs(args, doc: dict, final: bool) -> None:
    doc["report"] = build_report(doc)
    if args.json_out:
        pb.write_json(args.json_out, doc)
    if final and args.md_out:
        write_text(args.md_out, markdown(doc))


# --- the GPU part ----------------------------------------------------------------------------

def make_peers(names: list, kit_dir: str):
    """Ours, FlashInfer and torch.topk for one dtype at a time (set `dtype` on each), and the kit
    info. Ours plans its Selector for the dtype; FlashInfer names the path its wrapper takes for
    the dtype (peer_adapters.FlashInfer assumes float32); torch needs nothing."""
    import torch

    from peer_adapters import FlashInfer, TopkPython, TorchTopK, first_line, load_kit

    class Ours(TopkPython):
        dtype = torch.float32

        def selector(self, rows, width, k, device=None):
            device = torch.cuda.current_device() if device is None else device
            key = (rows, width, k, device, self.dtype)
            if self._selector_key != key:
                self._selector = None  # its workspace is freed before the next one is planned
                self._selector = self.topk.Selector(k, rows, width, device=device, dtype=self.dtype)
                self._selector_key = key
            return self._selector

        def route(self, rows, width, k):
            try:
                sel = self.selector(rows, width, k)
                return f"{sel.family}: {sel.spec}"
            except Exception as e:  # noqa: BLE001 - the route is informative only
                return f"unknown ({type(e).__name__}: {first_line(e)})"

    class FlashInferDtype(FlashInfer):
        dtype = torch.float32

        def route(self, rows, width, k):
            # As FlashInfer.route, with the scores' dtype (the wrapper's CUB thresholds and the
            # radix choice differ for 16-bit scores); the radix choice queries the module, so it
            # is asked in the eager call only and remembered.
            try:
                key = (rows, width, k, self.dtype)
                if key not in self._radix_routes and not torch.cuda.is_current_stream_capturing():
                    self._radix_routes[key] = self.kit.fi_algo_radix(rows, width, k, self.dtype)
                if self.kit._fi_use_cub(rows, width, self.dtype, self.cap_major) and self.cub_built:
                    return "cub (DeviceBatchedTopK)"
                return self._radix_routes.get(key, "radix (path not named during capture)")
            except Exception as e:  # noqa: BLE001
                return f"unknown ({type(e).__name__}: {first_line(e)})"

    unknown = [n for n in names if n not in PEERS]
    if unknown:
        raise ValueError(f"unknown peer(s) {unknown}; known: {', '.join(PEERS)}")
    kit = kit_error = kit_info = None
    if "flashinfer" in names:
        kit, kit_error, kit_info = load_kit(kit_dir)
    make = {OURS: lambda: Ours(selector_in_graphs=True), "torch": TorchTopK,
            "flashinfer": lambda: FlashInferDtype(kit, kit_error)}
    return [make[n]() for n in names], kit_info


def tie_stats(torch, x, lengths, k: int, chunk_bytes: int) -> dict:
    """Over the rows longer than K: how many have a Top-K set that is not unique, and the mean
    and largest number of scores equal to the row's K-th largest value."""
    m, n = x.shape
    step = max(1, chunk_bytes // (4 * n))
    long_rows = not_unique = group_sum = group_max = 0
    for r0 in range(0, m, step):
        xc = x[r0:r0 + step]
        is_long = lengths[r0:r0 + step] > k
        if not bool(is_long.any()):
            continue
        kth = torch.topk(xc, k, dim=1, sorted=False).values.min(dim=1, keepdim=True).values
        at = (xc == kth).sum(dim=1)[is_long]
        above = (xc > kth).sum(dim=1)[is_long]
        long_rows += int(is_long.sum())
        not_unique += int((above + at > k).sum())
        group_sum += int(at.sum())
        group_max = max(group_max, int(at.max()))
        del kth, at, above
    return {"long_rows": long_rows, "rows_not_unique": not_unique,
            "tie_group_mean": group_sum / long_rows if long_rows else 0.0,
            "tie_group_max": group_max}


def run_entry(torch, call, profile: str, dtype: str, x32, lengths, args, peers) -> dict:
    """One shape in one dtype: cast, check, count ties, then every peer on the same copies."""
    from graph_timing import input_copies, l2_bytes
    from score_generator import check_generated

    tdtype = getattr(torch, DTYPES[dtype][0])
    chunk = int(args.verify_chunk_gib * (1 << 30))
    call_json = dict(call.to_json(), valid_bytes=valid_bytes(call, dtype), dtype=dtype)
    floor = floor_us(call, dtype)
    rec = {"profile": profile, "dtype": dtype, "call": call_json, "score_bytes": score_bytes(dtype),
           "floor_us": floor, "floor_ms": floor / 1e3, "peers": {}}
    dense = score_bytes(dtype) * call.rows * call.width
    copies_n = input_copies(dense, l2_bytes())
    need = dense * copies_n + pb.MEMORY_MARGIN_BYTES
    free, _total = torch.cuda.mem_get_info()
    if need > free:
        why = (f"needs {need / 2**30:.1f} GiB ({copies_n} input copies + margin), "
               f"{free / 2**30:.1f} GiB free")
        rec["peers"] = {p.name: {"status": "skipped", "error": why} for p in peers}
        return rec
    x = x32 if tdtype == x32.dtype else x32.to(tdtype)
    rec["data"] = check_generated(x, lengths, chunk)
    rec["ties"] = tie_stats(torch, x, lengths, args.k, chunk)
    copies = [x] + [x.clone() for _ in range(copies_n - 1)]
    rec["input_copies"] = copies_n
    for p in peers:
        p.dtype = tdtype
        if not p.available:
            rec["peers"][p.name] = {"status": "unavailable", "error": p.error}
            continue
        e = pb.bench_peer(torch, p, copies, lengths, call, args)
        if e.get("status") == "ok":
            e["x_floor"] = e["median_ms"] * 1e3 / floor  # against this dtype's floor
        e["input_dtype"] = str(copies[0].dtype).replace("torch.", "")
        rec["peers"][p.name] = e
        torch.cuda.empty_cache()
    del copies, x
    torch.cuda.empty_cache()
    return rec


def progress_line(rec: dict, row: dict) -> str:
    cells = [f"{n} {_cell(rec['peers'].get(n), rec['floor_us'])}" for n in row["us"]]
    cells += [f"vs {n} {_num(v, '{:.2f}x')}" for n, v in row["speedup"].items()]
    bad = [f"{n}: {v}" for n, v in row["verdicts"].items() if v != "exact"]
    return (f"{rec['profile']} {rec['call']['name']} {rec['dtype']} floor {rec['floor_us']:.1f} us"
            f" | " + " | ".join(cells) + ("" if not bad else " | " + "; ".join(bad)))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"MxN[,MxN...] [{DEFAULT_SHAPES}]")
    p.add_argument("--k", type=int, default=2048)
    p.add_argument("--dtypes", default=DEFAULT_DTYPES, help=f"f16, bf16, f32 [{DEFAULT_DTYPES}]")
    p.add_argument("--profiles", default=DEFAULT_PROFILES,
                   help=f"generator profiles, each cast to every dtype [{DEFAULT_PROFILES}]")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gen-cu", help="CUDA source of the generator (topk codegen --generator)")
    p.add_argument("--peers", default=",".join(PEERS), help=f"subset of {','.join(PEERS)}")
    p.add_argument("--kit", default=".peers", help="folder with run_peers.py, fi_topk.so and "
                   "the tvm_ffi wheel")
    p.add_argument("--reps", type=int, default=15, help="timed rounds per entry (median)")
    p.add_argument("--warmup", type=int, default=3, help="untimed passes over the copies")
    p.add_argument("--verify-chunk-gib", type=float, default=1.0)
    p.add_argument("--json-out", help="all numbers (rewritten after every entry)")
    p.add_argument("--md-out", help="the table")
    p.add_argument("--list", action="store_true", help="print the entries and floors, no GPU")
    args = p.parse_args(argv)
    args.peer_names = split_list(args.peers)
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        calls = parse_shapes(args.shapes)
        dtypes = parse_dtypes(args.dtypes)
        profiles = parse_profiles(args.profiles)
        unknown = [n for n in args.peer_names if n not in PEERS]
        if unknown or not args.peer_names:
            raise ValueError(f"--peers {args.peers!r}: expected a subset of {','.join(PEERS)}")
    except (ShapeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return pb.EXIT_SETUP
    if args.list:
        sys.stdout.write(list_entries(profiles, calls, dtypes))
        return 0
    narrow = [c.name for c in calls if c.width < args.k]
    if narrow or not args.gen_cu:
        why = (f"shapes narrower than K={args.k}: {', '.join(narrow)}" if narrow else
               "--gen-cu is required (write it with `topk codegen --generator`)")
        print(f"error: {why}", file=sys.stderr)
        return pb.EXIT_SETUP

    import torch

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA device; this script runs on the GPU machine",
              file=sys.stderr)
        return pb.EXIT_SETUP
    from peer_adapters import first_line
    from score_generator import GeneratorError, ScoreGenerator, lengths_tensor

    started = time.monotonic()
    try:
        generator = ScoreGenerator(args.gen_cu)
        peers, kit_info = make_peers(args.peer_names, args.kit)
    except (GeneratorError, ValueError, ImportError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return pb.EXIT_SETUP
    args.shapes = ",".join(c.name for c in calls)
    args.profile = ",".join(profiles)
    meta = pb.collect_meta(args, torch, generator.info, kit_info)
    meta.update(dtypes=dtypes, profiles=profiles, read_bandwidth_bps=pb.READ_BANDWIDTH_BPS)
    meta["adapters"].update({
        "topk": "topk.select eager (checked), a topk.Selector planned with dtype= the scores' "
                "dtype captured in the graphs",
        "flashinfer": "run_peers.fi_select: the 16-bit tensor goes to top_k_ragged_transform's "
                      "kernels unchanged (no cast); its wrapper picks CUB or radix by dtype, "
                      "shape and whether the stream is capturing (route / route_eager)",
    })
    try:
        import topk

        meta["topk_version"] = topk.__version__
    except Exception as e:  # noqa: BLE001
        meta["topk_version"] = f"unavailable ({first_line(e)})"
    problems = [f"{p.name} unavailable: {p.error}" for p in peers if not p.available]
    doc = {"schema": SCHEMA, "meta": meta, "entries": [], "not_run": [], "problems": problems}
    for line in problems:
        print(f"problem: {line}", file=sys.stderr)
    write_outputs(args, doc, final=False)  # fails now, not after the run, when a path is bad
    todo = [(p, c) for p in profiles for c in calls]
    print(f"{meta['gpu']} | torch {torch.__version__} | topk {meta['topk_version']} | K={args.k} "
          f"| {len(todo) * len(dtypes)} entries ({', '.join(profiles)} x {len(calls)} shapes x "
          f"{', '.join(dtypes)})", flush=True)
    status = 0
    for i, (profile, call) in enumerate(todo):
        try:
            x32 = torch.empty((call.rows, call.width), dtype=torch.float32, device="cuda")
            lengths = lengths_tensor(call, "cuda")
            generator.fill(x32, lengths, call, args.seed, profile, args.k)
            for dtype in dtypes:
                rec = run_entry(torch, call, profile, dtype, x32, lengths, args, peers)
                doc["entries"].append(rec)
                for n, e in rec["peers"].items():
                    if e.get("status") not in ("ok", "unavailable"):
                        doc["problems"].append(f"{profile} {call.name} {dtype} {n}: {verdict(e)}")
                write_outputs(args, doc, final=False)
                print(progress_line(rec, doc["report"]["rows"][-1]), flush=True)
            del x32, lengths
            torch.cuda.empty_cache()
        except pb.ContextLost as e:
            doc["problems"].append(f"CUDA context lost at {profile} {call.name}: {e}; later "
                                   "entries not run")
            doc["not_run"] = [f"{p} {c.name}" for p, c in todo[i:]]
            status = pb.EXIT_CONTEXT_LOST
            break
        except GeneratorError as e:
            doc["problems"].append(f"{profile} {call.name}: {e}")
            doc["not_run"] = [f"{p} {c.name}" for p, c in todo[i:]]
            status = pb.EXIT_SETUP
            break
        except Exception as e:  # noqa: BLE001 - e.g. out of memory preparing the inputs
            traceback.print_exc()
            doc["problems"].append(f"{profile} {call.name}: preparing the inputs failed: "
                                   f"{type(e).__name__}: {first_line(e)}")
            doc["not_run"].append(f"{profile} {call.name}")
            torch.cuda.empty_cache()
            try:
                pb.ensure_context(torch)
            except pb.ContextLost:
                doc["not_run"] += [f"{p} {c.name}" for p, c in todo[i + 1:]]
                status = pb.EXIT_CONTEXT_LOST
                break
    doc["meta"]["elapsed_s"] = time.monotonic() - started
    write_outputs(args, doc, final=True)
    print()
    print(markdown(doc))
    for problem in doc["problems"]:
        print(f"problem: {problem}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
