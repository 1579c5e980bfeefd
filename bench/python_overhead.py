#!/usr/bin/env python3
"""What the Python API adds to a call: median eager `topk.select` minus median CUDA graph
replay of the same call, both timed with CUDA events around one call on an idle GPU.

    python3 bench/python_overhead.py [--shapes 1x262144,2048x262144] [--k 2048] [--reps 200]

Per shape it reports, in microseconds: the graph replay (the kernels alone, plus the graph
launch), the eager call with `out=` given and without (then `torch.empty` runs too), their
differences (the overhead; the target is under 10 us), and the host time of one eager call
measured back to back (`time.perf_counter` over many calls, GPU work queued behind). Needs
PyTorch with CUDA and the `topk` wheel (`scripts/python-wheel.sh`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

import topk


def event_median(fn, reps: int) -> float:
    """Median microseconds between events recorded right before and after `fn()`, one call at
    a time on an idle stream."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def host_per_call(fn, calls: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e6 / calls


def measure(rows: int, width: int, k: int, reps: int) -> dict:
    dev = torch.device("cuda", torch.cuda.current_device())
    scores = torch.randn(rows, width, device=dev)
    lengths = torch.randint(k, width + 1, (rows,), device=dev, dtype=torch.int32)
    out = torch.empty(rows, k, dtype=torch.int32, device=dev)
    with_out = lambda: topk.select(scores, k, lengths, out=out)  # noqa: E731
    allocating = lambda: topk.select(scores, k, lengths)  # noqa: E731
    for _ in range(5):  # plan, compile (or load from the disk cache), warm up
        with_out()
        allocating()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        with_out()
    graph.replay()
    torch.cuda.synchronize()
    replay = event_median(graph.replay, reps)
    eager = event_median(with_out, reps)
    eager_alloc = event_median(allocating, reps)
    return {
        "rows": rows,
        "width": width,
        "k": k,
        "graph_replay_us": round(replay, 2),
        "eager_out_us": round(eager, 2),
        "eager_alloc_us": round(eager_alloc, 2),
        "overhead_out_us": round(eager - replay, 2),
        "overhead_alloc_us": round(eager_alloc - replay, 2),
        "host_per_call_us": round(host_per_call(with_out, reps), 2),
        "selector": str(topk.Selector(k, rows, width, device=dev)),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="1x262144,2048x262144", help="ROWSxWIDTH, comma separated")
    p.add_argument("--k", type=int, default=2048)
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--json-out", help="also write the numbers here")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: no CUDA device visible to PyTorch", file=sys.stderr)
        return 2
    why = topk.cuda_status(torch.cuda.current_device())
    if why is not None:
        print(f"error: {why}", file=sys.stderr)
        return 2
    print(f"{torch.cuda.get_device_name()} | torch {torch.__version__} | topk {topk.__version__}")
    print(f"{'shape':>14} {'replay':>8} {'eager':>8} {'eager+alloc':>11} {'overhead':>9} "
          f"{'+alloc':>8} {'host/call':>9}  (us)")
    results = []
    for shape in args.shapes.split(","):
        rows, width = (int(x) for x in shape.lower().split("x"))
        r = measure(rows, width, args.k, args.reps)
        results.append(r)
        print(f"{shape:>14} {r['graph_replay_us']:8.1f} {r['eager_out_us']:8.1f} "
              f"{r['eager_alloc_us']:11.1f} {r['overhead_out_us']:9.1f} "
              f"{r['overhead_alloc_us']:8.1f} {r['host_per_call_us']:9.1f}")
        print(f"{'':>14} {r['selector']}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
