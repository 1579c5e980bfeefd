#!/usr/bin/env python3
"""What the Python API adds to a call: median eager `topk.select` minus median CUDA graph
replay of the same call, each timed with CUDA events around one call on an idle GPU.

    python3 bench/python_overhead.py [--shapes 1x262144,2048x262144] [--k 2048] [--reps 200]

Per shape it reports, in microseconds:

- replay, eager, eager+alloc: one call at a time on an idle GPU (synchronized before each),
  the three measured in turn within every repetition so that clock and thermal drift hit them
  alike. The GPU waits for the host here, so these include the host time up to the launch.
- overhead, +alloc: eager minus replay, with `out=` given and without (then `torch.empty` runs
  too). The target is under 10 us.
- queued replay, queued eager: device time per call of 32 calls enqueued back to back (the
  host runs ahead of the GPU when a call's kernels take longer than its host time). Equal
  numbers mean the eager call enqueues no device work beyond the graph's.
- host: host time per call, back to back, of the graph replay, of the eager call, of its
  Python part alone (the native launch replaced by a no-op) and of the native launch alone.
- device ops: what one eager call (and one replay) enqueues, counted with torch.profiler
  (CUPTI): kernels, copies, memsets, and the CUDA runtime / driver calls the profiler sees.

Needs PyTorch with CUDA and the `topk` wheel (`scripts/python-wheel.sh`).
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time

import torch

import topk
from topk import _native

QUEUED = 32


def event_medians(fns, reps: int):
    """Median microseconds between events recorded right before and after each of `fns`, one
    call at a time on an idle stream; the functions take turns within each repetition."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, t in zip(fns, times):
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            end.synchronize()
            t.append(start.elapsed_time(end) * 1000.0)
    return [statistics.median(t) for t in times]


def queued_per_call(fn, reps: int) -> float:
    """Median device microseconds per call of `QUEUED` calls enqueued back to back."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(max(3, reps // QUEUED)):
        torch.cuda.synchronize()
        fn()  # the first call's host time is not hidden; start after it
        start.record()
        for _ in range(QUEUED):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0 / QUEUED)
    return statistics.median(times)


def host_per_call(fn, calls: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e6 / calls


def host_split(with_out, calls: int):
    """Host microseconds per call of the eager call's Python part (the native launch replaced
    by a no-op) and of the native launch alone (the same arguments, called directly)."""
    real = _native.cuda_select
    seen = []

    def record(*args):
        seen.append(args)
        return real(*args)

    _native.cuda_select = record
    try:
        with_out()
        _native.cuda_select = lambda *args: None
        python_only = host_per_call(with_out, calls)
    finally:
        _native.cuda_select = real
    args = seen[0]
    native_only = host_per_call(lambda: real(*args), calls)
    return python_only, native_only


def device_ops(fn, calls: int = 20) -> str:
    """What `fn` enqueues per call, as torch.profiler (CUPTI) records it."""
    try:
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
        device = collections.Counter()
        api = collections.Counter()
        for e in prof.events():
            name = e.name
            if e.device_type == torch.autograd.DeviceType.CUDA:
                device[name] += 1
            elif name.startswith("cu"):
                api[name] += 1
        api["cudaDeviceSynchronize"] -= 1  # the one that ends the profiled region
        api = +api  # drops what is left at zero
        parts = [f"{n} x{c / calls:g}" for n, c in sorted(device.items())]
        calls_seen = [f"{n} x{c / calls:g}" for n, c in sorted(api.items())]
        return (f"device: {'; '.join(parts) or 'nothing recorded'} | API: "
                f"{'; '.join(calls_seen) or 'nothing recorded'}")
    except Exception as e:  # noqa: BLE001 - the profiler is optional here
        return f"torch.profiler unavailable ({type(e).__name__}: {e})"


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
    replay, eager, eager_alloc = event_medians([graph.replay, with_out, allocating], reps)
    python_only, native_only = host_split(with_out, reps)
    return {
        "rows": rows,
        "width": width,
        "k": k,
        "graph_replay_us": round(replay, 2),
        "eager_out_us": round(eager, 2),
        "eager_alloc_us": round(eager_alloc, 2),
        "overhead_out_us": round(eager - replay, 2),
        "overhead_alloc_us": round(eager_alloc - replay, 2),
        "queued_replay_us": round(queued_per_call(graph.replay, reps), 2),
        "queued_eager_us": round(queued_per_call(with_out, reps), 2),
        "host_replay_us": round(host_per_call(graph.replay, reps), 2),
        "host_per_call_us": round(host_per_call(with_out, reps), 2),
        "host_python_us": round(python_only, 2),
        "host_native_us": round(native_only, 2),
        "eager_device_ops": device_ops(with_out),
        "replay_device_ops": device_ops(graph.replay),
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
    print(f"{torch.cuda.get_device_name()} | torch {torch.__version__} | topk {topk.__version__} "
          f"| python {sys.version.split()[0]}")
    print(f"{'shape':>14} {'replay':>8} {'eager':>8} {'eager+alloc':>11} {'overhead':>9} "
          f"{'+alloc':>8} {'queued r/e':>13} {'host r/e/py/native':>22}  (us)")
    print("By reading the code, an eager call with int32 lengths and out= enqueues one kernel "
          "launch (a staged plan: a memset, its stage kernels and, for fewer rows than the plan's, "
          "a status copy); int64 or strided lengths add one conversion kernel; out=None adds a "
          "caching-allocator allocation, no device work. The profiler's count follows per shape.")
    results = []
    for shape in args.shapes.split(","):
        rows, width = (int(x) for x in shape.lower().split("x"))
        r = measure(rows, width, args.k, args.reps)
        results.append(r)
        queued = f"{r['queued_replay_us']:.1f}/{r['queued_eager_us']:.1f}"
        host = (f"{r['host_replay_us']:.1f}/{r['host_per_call_us']:.1f}/{r['host_python_us']:.1f}/"
                f"{r['host_native_us']:.1f}")
        print(f"{shape:>14} {r['graph_replay_us']:8.1f} {r['eager_out_us']:8.1f} "
              f"{r['eager_alloc_us']:11.1f} {r['overhead_out_us']:9.1f} "
              f"{r['overhead_alloc_us']:8.1f} {queued:>13} {host:>22}")
        print(f"{'':>14} {r['selector']}")
        print(f"{'':>14} eager call enqueues   {r['eager_device_ops']}")
        print(f"{'':>14} graph replay enqueues {r['replay_device_ops']}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
