"""Brute-force checks of the operator contract, in NumPy (shared by the CPU and GPU tests)."""

from __future__ import annotations

import numpy as np


def check_row(scores_row: np.ndarray, length: int, got: np.ndarray, k: int) -> None:
    """Asserts that `got` (k int32 slots) is a correct Top-K of `scores_row[:length]`."""
    got = np.asarray(got)
    assert got.shape == (k,), got.shape
    if length <= k:
        expect = np.concatenate([np.arange(length), np.full(k - length, -1)])
        assert np.array_equal(got, expect), f"short row of {length}: {got[: length + 2]}"
        return
    assert (got >= 0).all() and (got < length).all(), "index outside [0, L)"
    assert len(np.unique(got)) == k, "duplicate indices"
    valid = scores_row[:length].astype(np.float64)  # -0.0 == +0.0 numerically
    chosen = np.zeros(length, dtype=bool)
    chosen[got] = True
    assert valid[chosen].min() >= valid[~chosen].max(), "a selected score is below an unselected one"
    # The k-th largest value matches a full sort (the multiset of selected values is exact).
    kth = np.sort(valid)[-k]
    assert valid[chosen].min() == kth


def check(scores: np.ndarray, lengths, out: np.ndarray, k: int) -> None:
    scores = np.asarray(scores)
    out = np.asarray(out)
    rows = scores.shape[0]
    lengths = np.full(rows, scores.shape[1]) if lengths is None else np.asarray(lengths)
    assert out.shape[0] >= rows and out.shape[1] >= k
    for r in range(rows):
        check_row(scores[r], int(lengths[r]), out[r, :k], k)


def select_reference(scores: np.ndarray, lengths, k: int) -> np.ndarray:
    """One valid answer of the contract (stable descending order, for the transforms)."""
    rows = scores.shape[0]
    lengths = np.full(rows, scores.shape[1]) if lengths is None else np.asarray(lengths)
    out = np.full((rows, k), -1, dtype=np.int32)
    for r in range(rows):
        L = int(lengths[r])
        if L <= k:
            out[r, :L] = np.arange(L)
        else:
            out[r] = np.argsort(-scores[r, :L].astype(np.float64), kind="stable")[:k]
    return out


def same_sets(a: np.ndarray, b: np.ndarray) -> bool:
    """Row-wise equal as sets (the order inside a row is unspecified), -1 padding included."""
    return all(sorted(x.tolist()) == sorted(y.tolist()) for x, y in zip(np.asarray(a), np.asarray(b)))
