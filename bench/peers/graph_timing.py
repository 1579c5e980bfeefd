"""Timing of one call as bench/RESULTS.md, "How results are taken", asks: a CUDA graph of the
call, warm-up, then the median over rounds of replays measured with CUDA events. Inputs small
enough to stay in L2 are rotated: one graph per input copy, replayed in turn, so that no replay
reads scores the previous one left in the cache.
"""

from __future__ import annotations

import math
import statistics

try:
    import torch
except ImportError:  # input_copies and replays_per_round (run-time estimates) need no torch
    torch = None

L2_FALLBACK_BYTES = 50 * 1024 * 1024  # H200
ROTATE_BELOW_L2_MULTIPLE = 3
MAX_INPUT_COPIES = 32
# A round replays the call enough times to last about this long, so that the events'
# resolution (~0.5 us) and launch gaps stay small against it.
ROUND_TARGET_MS = 5.0
MAX_REPLAYS_PER_ROUND = 4096


def l2_bytes(device=None) -> int:
    props = torch.cuda.get_device_properties(device if device is not None else 0)
    size = getattr(props, "L2_cache_size", 0) or getattr(props, "l2_cache_size", 0)
    return int(size) if size else L2_FALLBACK_BYTES


def input_copies(input_bytes: int, l2: int) -> int:
    """1 when the input is at least 3x L2, else enough copies to cover 3x L2."""
    span = ROTATE_BELOW_L2_MULTIPLE * l2
    if input_bytes >= span:
        return 1
    return min(MAX_INPUT_COPIES, math.ceil(span / max(1, input_bytes)))


def replays_per_round(estimate_ms: float, copies: int) -> int:
    """Replays in one timed round: whole passes over the copies lasting about ROUND_TARGET_MS,
    at most MAX_REPLAYS_PER_ROUND (rounded down to whole passes), at least one pass."""
    n = copies
    passes = max(1, math.ceil(ROUND_TARGET_MS / max(estimate_ms * n, 1e-4)))
    return min(n * passes, max(n, MAX_REPLAYS_PER_ROUND - MAX_REPLAYS_PER_ROUND % n))


class Replayer:
    """Replays the call on copy i: a captured graph, or the eager call when capture failed.
    `outputs[i]` is the output of the latest replay on copy i."""

    def __init__(self, call_on_copy, copies: int):
        self.copies = copies
        self.mode = "graph"
        self.note = ""
        self.graphs: list = []
        self.outputs: list = []
        self._call = call_on_copy
        try:
            for i in range(copies):
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = call_on_copy(i, True)
                self.graphs.append(graph)
                self.outputs.append(out)
        except Exception as e:  # noqa: BLE001 - any capture failure falls back to eager
            self.graphs, self.outputs = [], []
            torch.cuda.synchronize()  # raises if the failure broke the context
            self.mode = "eager"
            text = str(e).strip().splitlines()
            self.note = (f"graph capture failed ({type(e).__name__}: "
                         f"{text[0][:300] if text else ''}); timed eagerly")
            self.outputs = [None] * copies

    def replay(self, i: int) -> None:
        if self.mode == "graph":
            self.graphs[i].replay()
        else:
            self.outputs[i] = self._call(i, False)

    def close(self) -> None:
        self.graphs, self.outputs = [], []


def time_replays(replayer: Replayer, rounds: int, warmup: int) -> dict:
    """Median milliseconds per call over `rounds` rounds; each round replays the copies in turn."""
    n = replayer.copies
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for i in range(max(warmup, 1) * n):
        replayer.replay(i % n)
    torch.cuda.synchronize()
    start.record()
    for i in range(n):
        replayer.replay(i)
    end.record()
    end.synchronize()
    per_round = replays_per_round(start.elapsed_time(end) / n, n)
    times = []
    for _ in range(rounds):
        start.record()
        for i in range(per_round):
            replayer.replay(i % n)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per_round)
    return {
        "median_ms": statistics.median(times),
        "min_ms": min(times),
        "max_ms": max(times),
        "rounds": rounds,
        "replays_per_round": per_round,
        "warmup_passes": max(warmup, 1),
        "input_copies": n,
        "times_ms": times,
    }
