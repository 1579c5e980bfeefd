#!/usr/bin/env python3
"""Selecting Top-K indices from Python: NumPy on the CPU (the plain operator, the call
interface and a decode loop carrying each row's boundary as its next prior), PyTorch on the GPU
when there is one, a Selector captured in a CUDA graph, and a compat entry point.

    pip install ./topk-python        # (with a Rust toolchain; or the wheel of scripts/python-wheel.sh)
    python3 examples/python/topk_select.py

(Not named select.py: the script's folder comes first on sys.path, and that name would shadow
the standard library's `select`, which PyTorch imports.)
"""

from __future__ import annotations

import numpy as np

import topk
from topk import compat


def check(scores: np.ndarray, lengths: np.ndarray, idx: np.ndarray, k: int) -> None:
    """Every row: min(selected) >= max(unselected), or 0..L-1 then -1 for short rows."""
    for row, (s, L, got) in enumerate(zip(scores, lengths, idx)):
        if L <= k:
            assert (got[:L] == np.arange(L)).all() and (got[L:] == -1).all(), row
            continue
        chosen = np.zeros(L, bool)
        chosen[got] = True
        assert chosen.sum() == k and s[:L][chosen].min() >= s[:L][~chosen].max(), row


def cpu_example() -> None:
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((8, 100_000)).astype(np.float32)
    lengths = np.array([100_000, 50_000, 2048, 100, 0, 99_999, 4096, 70_000], np.int32)
    idx = topk.select(scores, 2048, lengths)  # int32 [8, 2048], -1 padded
    check(scores, lengths, idx, 2048)
    print(f"CPU: {idx.shape} {idx.dtype}, exact; row 3 -> {idx[3, :3]} ... {idx[3, 99:102]}")


def interface_example() -> None:
    # A serving call on the CPU: bfloat16-like half scores, prefill windows, page-table slots,
    # values, canonical output (sorted, lowest-index ties).
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((4, 10_000)).astype(np.float16)
    starts = np.array([0, 100, 2000, 9000], np.int32)
    ends = np.array([5000, 3100, 2010, 10_000], np.int32)
    table = rng.permutation(4 * 157).reshape(4, 157).astype(np.int32)  # 157 pages of 64
    slots, values = topk.select(logits, 256, starts=starts, ends=ends, page_table=table,
                                page_size=64, values=True, sorted=True, deterministic=True)
    assert (np.diff(values[0].astype(np.float32)) <= 0).all()
    assert (slots[2, 10:] == -1).all() and np.isneginf(values[2, 10:]).all()
    print(f"CPU call interface: slots {slots[0, :3]} ..., values {values[0, :3]} ... (float16)")


def decode_prior_example() -> None:
    # A decode loop: each row's boundary (its K-th largest score) is the next step's prior,
    # kept in one state array updated in place; the output never depends on the prior.
    rng = np.random.default_rng(2)
    scores = rng.standard_normal((4, 20_000)).astype(np.float32)
    lengths = np.array([20_000, 15_000, 100, 8_000], np.int32)
    state = np.full(4, np.nan, np.float32)  # no prior at the first step
    for _ in range(3):
        idx, state = topk.select(scores, 256, lengths, prior=state, boundary=state, sorted=True,
                                 deterministic=True)
        assert (idx == topk.select(scores, 256, lengths, sorted=True, deterministic=True)).all()
        scores += np.float32(0.01) * rng.standard_normal(scores.shape).astype(np.float32)
        lengths = np.minimum(lengths + 1, scores.shape[1])
    print(f"CPU decode loop: boundaries {state} (NaN: a row of at most K scores)")


def gpu_example() -> None:
    import torch

    why = topk.cuda_status() if torch.cuda.is_available() else "PyTorch sees no CUDA device"
    if why is not None:
        print(f"GPU: skipped ({why})")
        return
    dev = torch.device("cuda")
    rows, width, k = 64, 262_144, 2048
    scores = torch.randn(rows, width, device=dev)
    lengths = torch.randint(1, width + 1, (rows,), device=dev, dtype=torch.int32)

    # Eager: runs on torch.cuda.current_stream(), no synchronization.
    idx = topk.select(scores, k, lengths, check=True)
    check(scores.cpu().numpy(), lengths.cpu().numpy(), idx.cpu().numpy(), k)
    print(f"GPU eager: {tuple(idx.shape)}, exact")

    # Planned once for capacities, captured once, replayed with new lengths and row counts.
    sel = topk.Selector(k, max_rows=rows, max_width=width, device=dev)
    live = torch.tensor([rows], dtype=torch.int32, device=dev)
    out = torch.empty(rows, k, dtype=torch.int32, device=dev)
    sel(scores, lengths, out=out, live_rows=live)  # warm-up before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        sel(scores, lengths, out=out, live_rows=live)
    lengths.copy_(torch.randint(1, width + 1, (rows,), device=dev, dtype=torch.int32))
    live.fill_(40)
    graph.replay()
    sel.check()  # raises on NaN scores, bad lengths or a bad row count
    check(scores[:40].cpu().numpy(), lengths[:40].cpu().numpy(), out[:40].cpu().numpy(), k)
    print(f"GPU graph replay: {sel} , 40 live rows, exact")

    # The call interface fused into the kernels: row windows, a page table, sorted values with
    # lowest-index ties (byte for byte the CPU backend's output).
    starts = torch.randint(0, width // 2, (rows,), device=dev, dtype=torch.int32)
    ends = starts + width // 4
    table = torch.randperm(rows * (width // 64), device=dev, dtype=torch.int32).reshape(rows, -1)
    slots, values = topk.select(scores, k, starts=starts, ends=ends, page_table=table, page_size=64,
                                values=True, sorted=True, deterministic=True, check=True)
    on_cpu = topk.select(scores.cpu(), k, starts=starts.cpu(), ends=ends.cpu(), page_table=table.cpu(),
                         page_size=64, values=True, sorted=True, deterministic=True)
    assert torch.equal(slots.cpu(), on_cpu[0]) and torch.equal(values.cpu(), on_cpu[1])
    print("GPU call interface: windows + page table + sorted values, equal to the CPU's bytes")

    # An engine's call site, one import changed (here: FlashInfer's ragged transform).
    offsets = torch.arange(rows, device=dev, dtype=torch.int32) * width
    flat = compat.top_k_ragged_transform(scores, offsets, lengths, k)
    print(f"compat.top_k_ragged_transform: first row's indices from {int(flat[0].max())} down")


if __name__ == "__main__":
    cpu_example()
    interface_example()
    decode_prior_example()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("GPU: skipped (PyTorch is not installed)")
    else:
        gpu_example()
