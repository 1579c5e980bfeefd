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


# ------------------------------------------------------------------ the call interface
def row_windows(rows: int, width: int, lengths=None, starts=None, ends=None, seq_lens=None, next_n=1):
    """(start, length) of each row's valid scores (docs/interface.md)."""
    if starts is not None:
        return [(int(s), int(e) - int(s)) for s, e in zip(starts, ends)]
    if seq_lens is not None:
        return [(0, int(seq_lens[r // next_n]) - next_n + 1 + r % next_n) for r in range(rows)]
    if lengths is not None:
        return [(0, int(n)) for n in lengths]
    return [(0, width)] * rows


def canonical_positions(window: np.ndarray, k: int) -> np.ndarray:
    """The canonical selection of a window (sorted, lowest-position ties): its positions,
    descending by value, equal values by ascending position, then -1."""
    L = len(window)
    keyed = np.lexsort((np.arange(L), -window.astype(np.float64)))  # -0.0 == +0.0
    pos = keyed[: min(k, L)]
    return np.concatenate([pos, np.full(k - len(pos), -1)]).astype(np.int64)


def transform_index(t: int, row: int, offsets=None, table=None, page_size=1) -> int:
    if offsets is not None:
        return t + int(offsets[row])
    if table is not None:
        pages = table[0] if table.shape[0] == 1 else table[row]
        return int(pages[t // page_size]) * page_size + t % page_size
    return t


def inverse_index(v: int, row: int, offsets=None, table=None, page_size=1) -> int:
    """The written index `t` that `v` came from (tables must map a row's pages one to one)."""
    if offsets is not None:
        return v - int(offsets[row])
    if table is not None:
        pages = list(table[0] if table.shape[0] == 1 else table[row])
        return pages.index(v // page_size) * page_size + v % page_size
    return v


def check_call(values64, bits, neg_inf, k, windows, got, got_values=None, *, sorted_=False,
               deterministic=False, absolute=False, offsets=None, table=None, page_size=1):
    """Asserts that `got` (int32 [>= rows, >= k]) and `got_values` (bit patterns) are a correct
    output of the call interface: `values64` are the scores as float64 [rows, width], `bits`
    their bit patterns and `neg_inf` the bit pattern of -inf in their dtype."""
    got = np.asarray(got)
    for r, (start, L) in enumerate(windows):
        window = values64[r, start : start + L]
        canon = canonical_positions(window, k)
        row = got[r, :k].astype(np.int64)
        filled = int((row >= 0).sum())
        assert filled == min(k, L), f"row {r}: {filled} indices for a window of {L}"
        assert (row[filled:] == -1).all(), f"row {r}: padding is not last"
        base = start if absolute else 0
        pos = np.array([inverse_index(int(v), r, offsets, table, page_size) - base for v in row[:filled]],
                       dtype=np.int64)
        assert ((pos >= 0) & (pos < L)).all(), f"row {r}: an index outside its window"
        assert len(np.unique(pos)) == filled, f"row {r}: duplicate indices"
        written = [transform_index(int(p) + base, r, offsets, table, page_size) for p in pos]
        assert written == row[:filled].tolist(), f"row {r}: indices not written as the transform says"
        picked = window[pos]
        want = window[canon[:filled]]
        assert np.array_equal(np.sort(picked), np.sort(want)), f"row {r}: not the top-{k} values"
        if deterministic:
            assert set(pos.tolist()) == set(canon[:filled].tolist()), f"row {r}: not the lowest-index ties"
        if sorted_:
            assert (picked[:-1] >= picked[1:]).all(), f"row {r}: not descending"
            if deterministic:
                assert np.array_equal(pos, canon[:filled]), f"row {r}: equal values not by ascending index"
        elif L <= k:
            assert np.array_equal(pos, np.arange(L)), f"row {r}: a short row is not 0..L-1"
        if got_values is not None:
            vb = np.asarray(got_values)[r, :k]
            want_bits = bits[r, start + pos]
            assert np.array_equal(vb[:filled], want_bits), f"row {r}: values differ bit for bit"
            assert (vb[filled:] == neg_inf).all(), f"row {r}: padding values are not -inf"
