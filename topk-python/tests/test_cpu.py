"""The CPU backend through the Python API: exactness against a brute-force check, inputs of
every supported kind and layout, and the errors bad inputs get."""

from __future__ import annotations

import numpy as np
import pytest

import topk
from reference import check

RNG = np.random.default_rng(20261204)


class DLPackOnly:
    """A producer that offers nothing but the DLPack protocol (as JAX or CuPy would)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


@pytest.mark.parametrize(
    "rows,width,k",
    [(1, 1, 1), (3, 50, 7), (8, 5000, 64), (4, 70000, 2048), (2, 300000, 4096), (16, 2049, 2048)],
)
def test_random_rows(rows, width, k):
    scores = RNG.standard_normal((rows, width)).astype(np.float32)
    lengths = RNG.integers(0, width + 1, rows).astype(np.int32)
    lengths[0] = width
    check(scores, lengths, topk.select(scores, k, lengths), k)
    check(scores, None, topk.select(scores, k), k)


def test_lengths_around_k():
    k = 256
    width = 4 * k
    lengths = np.array([0, 1, k - 1, k, k + 1, 2 * k, width], dtype=np.int32)
    scores = RNG.standard_normal((len(lengths), width)).astype(np.float32)
    check(scores, lengths, topk.select(scores, k, lengths), k)


def test_ties_at_rank_k():
    k = 100
    rows = []
    # Every score equal; a plateau straddling rank K; two values only.
    rows.append(np.ones(5000, np.float32))
    plateau = RNG.standard_normal(5000).astype(np.float32)
    plateau[np.argsort(-plateau)[50:400]] = 0.5
    rows.append(plateau)
    rows.append(np.where(RNG.random(5000) < 0.03, 2.0, 1.0).astype(np.float32))
    scores = np.stack(rows)
    check(scores, None, topk.select(scores, k), k)


def test_special_values():
    k = 64
    width = 10000
    scores = RNG.standard_normal((6, width)).astype(np.float32)
    scores[0, ::7] = np.inf
    scores[1, :] = -np.inf
    scores[1, 10:20] = 1.0
    scores[2, : width // 2] = -0.0
    scores[2, width // 2 :] = 0.0
    tiny = np.finfo(np.float32).smallest_subnormal
    scores[3] = (RNG.integers(-1000, 1000, width) * tiny).astype(np.float32)
    scores[4, ::3] = -np.inf
    scores[5] = np.float32(3e38) * np.sign(RNG.standard_normal(width)).astype(np.float32)
    check(scores, None, topk.select(scores, k), k)


def test_signed_zero_ranks_equal():
    # -0.0 and +0.0 are one value: with only zeros beside one 1.0, any K - 1 zeros are correct.
    scores = np.full((1, 1000), -0.0, np.float32)
    scores[0, 1::2] = 0.0
    scores[0, 500] = 1.0
    out = topk.select(scores, 10)
    check(scores, None, out, 10)
    assert 500 in out[0]


def test_strided_view_without_copy():
    k = 128
    wide = RNG.standard_normal((12, 9000)).astype(np.float32)
    view = wide[::2, 100:6100]  # row stride 18000, a column offset
    assert not view.flags.c_contiguous
    lengths = RNG.integers(0, 6001, view.shape[0]).astype(np.int64)
    out = topk.select(view, k, lengths)
    check(view, lengths, out, k)
    assert np.array_equal(out, topk.select(np.ascontiguousarray(view), k, lengths.astype(np.int32)))


def test_strided_lengths_and_out():
    k = 16
    scores = RNG.standard_normal((5, 3000)).astype(np.float32)
    lengths = np.array([[3000, 0], [17, 0], [16, 0], [2999, 0], [1, 0]], np.int64)[:, 0]
    out = np.full((5, 40), 7, np.int32)
    got = topk.select(scores, k, lengths, out=out[:, 3:])
    check(scores, lengths, got, k)
    assert (out[:, :3] == 7).all() and (out[:, 3 + k :] == 7).all(), "wrote outside out[:, :k]"


def test_dlpack_producer_on_cpu():
    k = 33
    scores = RNG.standard_normal((4, 2000)).astype(np.float32)
    lengths = np.array([2000, 5, 40, 33], np.int32)
    out = topk.select(DLPackOnly(scores), k, DLPackOnly(lengths))
    assert isinstance(out, np.ndarray)
    check(scores, lengths, out, k)


def test_read_only_scores():
    scores = RNG.standard_normal((3, 500)).astype(np.float32)
    scores.setflags(write=False)
    check(scores, None, topk.select(scores, 9), 9)


def test_zero_rows_and_zero_width():
    out = topk.select(np.zeros((0, 100), np.float32), 5)
    assert out.shape == (0, 5)
    out = topk.select(np.zeros((3, 0), np.float32), 5)
    assert (out == -1).all()


def test_selector_on_cpu_with_live_rows():
    sel = topk.Selector(32, max_rows=8, max_width=4000, device="cpu")
    assert sel.family == "cpu" and "k=32" in sel.spec
    scores = RNG.standard_normal((6, 3000)).astype(np.float32)
    out = np.full((6, 32), 9, np.int32)
    sel(scores, out=out, live_rows=np.array([4], np.int32))
    check(scores[:4], None, out[:4], 32)
    assert (out[4:] == 9).all(), "rows past the live count were touched"
    with pytest.raises(ValueError, match="max_rows"):
        sel(RNG.standard_normal((9, 10)).astype(np.float32))
    with pytest.raises(ValueError, match="max_width"):
        sel(RNG.standard_normal((2, 4001)).astype(np.float32))
    sel.check()  # the CPU raises at the call; nothing is pending


# ------------------------------------------------------------------------------------ errors
SCORES = RNG.standard_normal((3, 100)).astype(np.float32)


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda: topk.select(SCORES.astype(np.float64), 5), TypeError, "float32"),
        (lambda: topk.select(SCORES.astype(np.int32), 5), TypeError, "float32"),
        (lambda: topk.select(SCORES[0], 5), ValueError, "2-D"),
        (lambda: topk.select(SCORES[None], 5), ValueError, "2-D"),
        (lambda: topk.select(np.asfortranarray(SCORES), 5), ValueError, "column stride"),
        (lambda: topk.select(SCORES[:, ::2], 5), ValueError, "column stride"),
        (lambda: topk.select(SCORES, 0), ValueError, "1..=16384"),
        (lambda: topk.select(SCORES, 16385), ValueError, "1..=16384"),
        (lambda: topk.select(SCORES, 2.5), TypeError, "int"),
        (lambda: topk.select(SCORES, 5, np.array([1, 2, 101], np.int32)), ValueError, "row 2 has length 101"),
        (lambda: topk.select(SCORES, 5, np.array([1, -1, 3], np.int64)), ValueError, "row 1 has length -1"),
        (lambda: topk.select(SCORES, 5, np.array([1.0, 2.0, 3.0])), TypeError, "int32 or int64"),
        (lambda: topk.select(SCORES, 5, np.array([1, 2], np.int32)), ValueError, r"shape \[3\]"),
        (lambda: topk.select(SCORES, 5, out=np.zeros((3, 4), np.int32)), ValueError, "at least"),
        (lambda: topk.select(SCORES, 5, out=np.zeros((2, 5), np.int32)), ValueError, "at least"),
        (lambda: topk.select(SCORES, 5, out=np.zeros((3, 5), np.int64)), TypeError, "int32"),
        (lambda: topk.select([[1.0, 2.0]], 1), TypeError, "NumPy array"),
        (lambda: topk.select(SCORES, 5, bogus=1), TypeError, "unexpected keyword"),
        (lambda: topk.Selector(5, 0, 10, device="cpu"), ValueError, "max_rows"),
        (lambda: topk.Selector(5, 1, 10, device="tpu"), ValueError, "CUDA devices and the CPU"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_read_only_out_is_refused():
    out = np.zeros((3, 5), np.int32)
    out.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        topk.select(SCORES, 5, out=out)


def test_nan_is_reported_with_its_row_and_nothing_is_written():
    scores = SCORES.copy()
    scores[2, 40] = np.nan
    out = np.full((3, 5), 7, np.int32)
    with pytest.raises(ValueError, match="row 2, column 40 is NaN"):
        topk.select(scores, 5, out=out)
    assert (out == 7).all(), "partial output left behind"
    # A NaN past the row's length is not a valid score.
    check(scores, [100, 100, 40], topk.select(scores, 5, np.array([100, 100, 40])), 5)


def test_cuda_status_says_why_without_a_gpu():
    why = topk.cuda_status()
    assert why is None or "CUDA" in why or "NVRTC" in why or "device" in why
