"""`topk.compat` against NumPy references of each engine op's semantics (written from the
engines' public sources: what the indices are relative to and what padding they write)."""

from __future__ import annotations

import numpy as np
import pytest

from topk import compat
from reference import check, same_sets, select_reference

RNG = np.random.default_rng(7)


def ragged(rows: int, width: int, k: int):
    """Distinct random scores (no ties, so every correct answer has the same sets) and lengths
    covering 0, short rows, rank K and full rows."""
    scores = RNG.permutation(rows * width).reshape(rows, width).astype(np.float32)
    lengths = RNG.integers(0, width + 1, rows).astype(np.int32)
    lengths[: min(rows, 4)] = [0, 1, k, width][: min(rows, 4)]
    return scores, lengths


# ---------------------------------------------------------------------------- references
def ref_sglang_paged(scores, seq_lens, page_table, k, page_size):
    raw = select_reference(scores, seq_lens, k)
    if page_table is None:
        return raw, raw
    out = np.full_like(raw, -1)
    for i in range(raw.shape[0]):
        for j in range(k):
            p = raw[i, j]
            if p >= 0:
                out[i, j] = page_table[i, p // page_size] * page_size + p % page_size
    return out, raw


def ref_flashinfer_ragged(scores, offsets, lengths, k):
    raw = select_reference(scores, lengths, k)
    return np.where(raw >= 0, raw + offsets[:, None], -1)


def ref_flashinfer_page_table(scores, table, lengths, k, row_to_batch):
    raw = select_reference(scores, lengths, k)
    out = np.full_like(raw, -1)
    for i in range(raw.shape[0]):
        b = i if row_to_batch is None else row_to_batch[i]
        for j in range(k):
            if raw[i, j] >= 0:
                out[i, j] = table[b, raw[i, j]]
    return out


def ref_vllm_prefill(logits, starts, ends, k):
    out = np.full((logits.shape[0], k), -1, np.int32)
    for i in range(logits.shape[0]):
        window = logits[i, starts[i] : ends[i]]
        out[i] = select_reference(window[None], None, k)[0]
    return out


def ref_vllm_decode(logits, next_n, seq_lens, k):
    rows = logits.shape[0]
    ends = [seq_lens[i // next_n] - next_n + i % next_n + 1 for i in range(rows)]
    return select_reference(logits, np.array(ends), k)


# ---------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("page_size", [1, 4, 64])
def test_sglang_paged_v2(page_size):
    k = 32
    scores, seq_lens = ragged(9, 700, k)
    pages = -(-700 // page_size)
    table = RNG.integers(0, 10_000, (9, pages)).astype(np.int32)
    out = np.full((9, k), 5, np.int32)
    raw = np.full((9, k), 5, np.int32)
    meta = compat.plan_topk_v2(seq_lens)
    assert meta.shape == (10, 2)
    got = compat.topk_transform_paged_v2(scores, seq_lens, table, out, page_size, meta, raw)
    want, want_raw = ref_sglang_paged(scores, seq_lens, table, k, page_size)
    assert got is out
    assert same_sets(out, want) and same_sets(raw, want_raw)
    check(scores, seq_lens, raw, k)


def test_sglang_paged_v2_without_page_table_writes_raw_indices():
    k = 16
    scores, seq_lens = ragged(6, 300, k)
    out = np.zeros((6, k), np.int32)
    compat.topk_transform_paged_v2(scores, seq_lens, None, out, 1, None)
    assert same_sets(out, select_reference(scores, seq_lens, k))
    with pytest.raises(ValueError, match="power of two"):
        compat.topk_transform_paged_v2(scores, seq_lens, None, out, 3, None)


def test_flashinfer_ragged_transform():
    k = 24
    scores, lengths = ragged(8, 500, k)
    offsets = RNG.integers(0, 100_000, 8).astype(np.int32)
    got = compat.top_k_ragged_transform(scores, offsets, lengths, k)
    assert got.dtype == np.int32
    assert same_sets(got, ref_flashinfer_ragged(scores, offsets, lengths, k))


@pytest.mark.parametrize("mapped", [False, True])
def test_flashinfer_page_table_transform(mapped):
    k = 24
    scores, lengths = ragged(8, 500, k)
    table = RNG.integers(0, 1 << 20, (3 if mapped else 8, 500)).astype(np.int32)
    row_to_batch = RNG.integers(0, 3, 8).astype(np.int32) if mapped else None
    got = compat.top_k_page_table_transform(scores, table, lengths, k, row_to_batch)
    assert same_sets(got, ref_flashinfer_page_table(scores, table, lengths, k, row_to_batch))
    if mapped:
        # row_to_batch is the row map: an entry beyond the table's rows names its row.
        row_to_batch[5] = 3
        with pytest.raises(ValueError, match=r"row 5: page_rows\[5\] is 3, but page_table has 3 rows"):
            compat.top_k_page_table_transform(scores, table, lengths, k, row_to_batch)
        # A list is taken as FlashInfer's tensor would be.
        got = compat.top_k_page_table_transform(scores, table, lengths, k, [0, 1, 2, 0, 1, 2, 0, 1])
        assert same_sets(got, ref_flashinfer_page_table(scores, table, lengths, k, [0, 1, 2, 0, 1, 2, 0, 1]))


def test_vllm_prefill_row_windows():
    k = 20
    rows, width = 12, 800
    logits = RNG.permutation(rows * width).reshape(rows, width).astype(np.float32)
    # Three requests: rows 0-3 start at 0, rows 4-8 at 300, rows 9-11 at 650; causal ends.
    starts = np.array([0] * 4 + [300] * 5 + [650] * 3, np.int32)
    ends = np.array([5, 40, 200, 300, 310, 320, 321, 600, 650, 651, 700, 800], np.int32)
    indices = np.full((rows, k), 3, np.int32)
    compat.top_k_per_row_prefill(logits, starts, ends, indices, rows, width, 1, k)
    assert same_sets(indices, ref_vllm_prefill(logits, starts, ends, k))


def test_vllm_prefill_strides_and_fewer_rows():
    k = 8
    buf = RNG.permutation(10 * 900).reshape(10, 900).astype(np.float32)
    logits = buf[:, :600]  # row stride 900
    starts = np.array([10, 10, 0, 0, 0, 0, 0, 0, 0, 0], np.int32)
    ends = np.array([600, 15, 3, 600, 0, 0, 0, 0, 0, 0], np.int32)
    indices = np.full((10, k), 3, np.int32)
    compat.top_k_per_row_prefill(logits, starts, ends, indices, 4, 900, 1, k)
    assert same_sets(indices[:4], ref_vllm_prefill(logits[:4], starts[:4], ends[:4], k))
    assert (indices[4:] == 3).all()


@pytest.mark.parametrize("next_n", [1, 2, 4])
def test_vllm_decode(next_n):
    k = 16
    requests, width = 5, 640
    rows = requests * next_n
    logits = RNG.permutation(rows * width).reshape(rows, width).astype(np.float32)
    seq_lens = np.array([next_n, 20, 300, 640, 17 + next_n], np.int32)
    indices = np.zeros((rows, k), np.int32)
    compat.top_k_per_row_decode(logits, next_n, seq_lens, indices, rows, width, 1, k)
    assert same_sets(indices, ref_vllm_decode(logits, next_n, seq_lens, k))


def test_vllm_persistent_topk_clamps_to_max_seq_len():
    k = 32
    scores, lengths = ragged(7, 1000, k)
    output = np.zeros((7, k), np.int32)
    compat.persistent_topk(scores, lengths, output, None, k, 1000)
    assert same_sets(output, select_reference(scores, lengths, k))
    compat.persistent_topk(scores, lengths, output, None, k, 400)
    assert same_sets(output, select_reference(scores, np.minimum(lengths, 400), k))


# ------------------------------------------- host inputs: the transforms fused into the call
@pytest.mark.parametrize("page_size", [1, 8])
def test_sglang_paged_v2_fused_on_the_cpu(page_size):
    k = 32
    scores, seq_lens = ragged(9, 700, k)
    pages = -(-700 // page_size)
    table = RNG.integers(0, 10_000, (9, pages)).astype(np.int32)
    out = np.full((9, k), 5, np.int32)
    got = compat.topk_transform_paged_v2(scores, seq_lens, table, out, page_size, None)
    assert got is out
    assert same_sets(out, ref_sglang_paged(scores, seq_lens, table, k, page_size)[0])
    table[0] = -3  # used pages that are not page numbers
    seq_lens[0] = 700
    with pytest.raises(ValueError, match=r"row 0: page-table entry \d+ holds -3"):
        compat.topk_transform_paged_v2(scores, seq_lens, table, out, page_size, None)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_flashinfer_transforms_take_half_precision_on_the_cpu(dtype):
    k = 24
    scores, lengths = ragged(8, 500, k)
    half = (scores / 8).astype(dtype)  # distinct in float16 too: 4000 values below 2048 * 8 / 8
    offsets = RNG.integers(0, 100_000, 8).astype(np.int32)
    got = compat.top_k_ragged_transform(half, offsets, lengths, k)
    assert got.dtype == np.int32
    assert same_sets(got, ref_flashinfer_ragged(half.astype(np.float32), offsets, lengths, k))
    table = RNG.integers(0, 1 << 20, (3, 500)).astype(np.int32)
    row_to_batch = RNG.integers(0, 3, 8).astype(np.int32)
    got = compat.top_k_page_table_transform(half, table, lengths, k, row_to_batch)
    assert same_sets(got, ref_flashinfer_page_table(half.astype(np.float32), table, lengths, k, row_to_batch))


def test_vllm_prefill_clamps_ends_and_refuses_bad_starts():
    k = 8
    logits = RNG.permutation(4 * 300).reshape(4, 300).astype(np.float32)
    starts = np.array([0, 10, 250, 5], np.int32)
    ends = np.array([400, 5, 300, 90], np.int32)  # beyond the width; before the start
    indices = np.full((4, k), 3, np.int32)
    compat.top_k_per_row_prefill(logits, starts, ends, indices, 4, 300, 1, k)
    clamped = np.clip(ends, starts, 300)
    assert same_sets(indices, ref_vllm_prefill(logits, starts, clamped, k))
    starts[2] = 301
    with pytest.raises(ValueError, match=r"row_starts\[2\] = 301 is outside \[0, 300\]"):
        compat.top_k_per_row_prefill(logits, starts, ends, indices, 4, 300, 1, k)
