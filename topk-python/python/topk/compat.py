"""Drop-in entry points with the argument lists of the serving engines' own Top-K ops.

Each function takes the arguments of the op it stands in for, in the same order, and writes
what that op writes (where it has an output argument, in place), so swapping one in is a
one-line change of the import. They work on PyTorch tensors (CUDA or CPU) and on NumPy arrays.

The selection is `topk.select`: exact, ties at rank K broken any way, order inside a row
unspecified. The row windows, decode rows and index transforms are fused into the selection
(the call interface, docs/interface.md) on CUDA tensors (the generated kernels read the
windows, sequence lengths, offsets and page tables on the device: graph-capturable, no host
synchronization) and on host inputs (the CPU backend) alike: one call, no temporary. What an
entry point still adds around the selection is named in its docstring. Where the engines'
semantics and ours differ, the docstring says so.

==========================================  =================================================
engine op                                   here
==========================================  =================================================
SGLang ``topk_transform_paged_v2``          :func:`topk_transform_paged_v2`
SGLang ``plan_topk_v2``                     :func:`plan_topk_v2` (no planning needed)
FlashInfer ``top_k_ragged_transform``       :func:`top_k_ragged_transform`
FlashInfer ``top_k_page_table_transform``   :func:`top_k_page_table_transform`
vLLM ``top_k_per_row_prefill``              :func:`top_k_per_row_prefill`
vLLM ``top_k_per_row_decode``               :func:`top_k_per_row_decode`
vLLM ``persistent_topk``                    :func:`persistent_topk`
==========================================  =================================================
"""

from __future__ import annotations

from typing import Any

import numpy as _np

from ._arrays import _torch, is_tensor
from ._select import _on_cuda, select

__all__ = [
    "persistent_topk",
    "plan_topk_v2",
    "top_k_page_table_transform",
    "top_k_per_row_decode",
    "top_k_per_row_prefill",
    "top_k_ragged_transform",
    "topk_transform_paged_v2",
]


# ---------------------------------------------------------------- array helpers (torch / NumPy)
def _where_valid(raw: Any, values: Any) -> Any:
    """`values` where `raw >= 0`, else -1, as int32."""
    if is_tensor(raw):
        return _torch.where(raw >= 0, values.to(_torch.int32), _torch.full_like(raw, -1))
    return _np.where(raw >= 0, values, -1).astype(_np.int32)


def _row_gather(table: Any, cols: Any) -> Any:
    """`table[i, cols[i, j]]` for every i, j (cols clamped into the table; callers mask)."""
    if is_tensor(table):
        safe = cols.clamp(0, max(table.shape[1] - 1, 0)).long()
        return _torch.gather(table, 1, safe)
    safe = _np.clip(cols, 0, max(table.shape[1] - 1, 0)).astype(_np.int64)
    return _np.take_along_axis(table, safe, axis=1)


def _assign(dst: Any, src: Any) -> None:
    if is_tensor(dst):
        dst.copy_(src)
    else:
        dst[...] = src


def _strided(logits: Any, num_rows: int, stride0: int, stride1: int) -> Any:
    """`logits` as `num_rows` rows at the given element strides (vLLM passes them apart)."""
    num_rows = int(num_rows)
    if is_tensor(logits):
        if tuple(logits.stride()) == (stride0, stride1):
            rows = logits[:num_rows]
        else:
            rows = logits.as_strided((num_rows, logits.shape[1]), (stride0, stride1))
        return rows if stride1 == 1 else rows.contiguous()
    item = logits.itemsize
    if logits.strides == (stride0 * item, stride1 * item):
        rows = logits[:num_rows]
    else:
        rows = _np.lib.stride_tricks.as_strided(
            logits, (num_rows, logits.shape[1]), (stride0 * item, stride1 * item)
        )
    return rows if stride1 == 1 else _np.ascontiguousarray(rows)


def _on_host(x: Any) -> bool:
    """Whether `x` is in host memory (a NumPy array, a CPU tensor, a CPU DLPack producer)."""
    if is_tensor(x):
        return x.device.type == "cpu"
    return isinstance(x, _np.ndarray) or not _on_cuda(x)


def _host_array(x: Any) -> Any:
    """A host array (tensor or not) as a NumPy view (the CPU backend reads either)."""
    return x.numpy() if is_tensor(x) else _np.asarray(x)


# ---------------------------------------------------------------------------------- SGLang
def plan_topk_v2(seq_lens: Any, static_threshold: int = -1, out: Any = None) -> Any:
    """Stands in for SGLang's ``plan_topk_v2(seq_lens, static_threshold, out)``.

    SGLang plans which rows its cluster kernel takes and writes that into a metadata tensor
    ``[batch + 1, 2]`` int32 for ``topk_transform_paged_v2``. Our planner needs no per-call
    plan, so this only returns such a tensor (``out`` when given, unchanged) for call sites
    that pass it along; :func:`topk_transform_paged_v2` ignores it.
    """
    if out is not None:
        return out
    rows = int(seq_lens.shape[0]) + 1
    if is_tensor(seq_lens):
        return _torch.zeros((rows, 2), dtype=_torch.int32, device=seq_lens.device)
    return _np.zeros((rows, 2), dtype=_np.int32)


def topk_transform_paged_v2(
    scores: Any,
    seq_lens: Any,
    page_tables: Any,
    out: Any,
    page_size: int = 1,
    metadata: Any = None,
    raw_indices: Any = None,
) -> Any:
    """SGLang ``topk_transform_paged_v2(scores, seq_lens, page_tables, out, page_size,
    metadata)``: Top-K of each row, mapped to KV-cache slots through a page table.

    SGLang: row ``i`` selects the ``K = out.shape[1]`` largest of ``scores[i, :seq_lens[i]]``
    (K <= 2048, float32, row stride a multiple of 4). With ``page_tables`` (int32
    ``[rows, pages]``), a selected position ``p`` becomes the slot
    ``page_tables[i, p >> log2(page_size)] * page_size + (p & (page_size - 1))``; without it,
    the raw position. Unused slots are -1 (a row of ``L <= K`` gives positions ``0..L-1`` in
    order, then -1). ``raw_indices``, when given, also receives the raw positions. ``out`` is
    written in place and returned.

    Here: the same outputs. Without ``raw_indices`` the page-table transform is fused into
    the selection, on CUDA tensors (one kernel launch) and host inputs alike; a used page
    entry must be a page number (non-negative): on the CPU a negative one raises
    ``ValueError`` naming the row, on CUDA that slot is written as -1 and the kernels' status
    bit is raised (``topk.select(..., check=True)`` reports it). With ``raw_indices`` the
    selection writes raw positions and one gather through the page table and an elementwise
    step produce the slots. ``metadata`` (from ``plan_topk_v2``) is ignored; any K up to
    16384 and any row stride >= width work.
    """
    page_size = int(page_size)
    if page_size < 1 or page_size & (page_size - 1):
        raise ValueError(f"page_size must be a power of two, got {page_size}")
    k = int(out.shape[1])
    if page_tables is None:
        if raw_indices is not None:
            raise ValueError("raw_indices requires a page table (as in SGLang)")
        select(scores, k, seq_lens, out=out)
        return out
    if raw_indices is None:
        select(scores, k, seq_lens, out=out, page_table=page_tables, page_size=page_size)
        return out
    raw = select(scores, k, seq_lens, out=raw_indices)
    bits = page_size.bit_length() - 1
    pages = _row_gather(page_tables, raw >> bits)
    _assign(out, _where_valid(raw, (pages << bits) | (raw & (page_size - 1))))
    return out


# ------------------------------------------------------------------------------ FlashInfer
def top_k_ragged_transform(input: Any, offsets: Any, lengths: Any, k: int) -> Any:  # noqa: A002
    """FlashInfer ``top_k_ragged_transform(input, offsets, lengths, k)``: Top-K of each row
    with a per-row offset added (indices into a ragged, flattened KV cache).

    FlashInfer: ``out[i, j] = topk_index[i, j] + offsets[i]``, -1 beyond the row's length; a
    row of ``L <= k`` gives ``offsets[i] + 0..L-1``; float32, float16 or bfloat16 input.

    Here: the same output, the offsets fused into the selection (one kernel launch on CUDA
    tensors). An offset that takes an index out of the non-negative int32 range raises
    ``ValueError`` naming the row on host inputs; on CUDA such an index is written as -1 and
    the kernels' status bit is raised (``check=True`` reports it). Host inputs take float16
    and bfloat16 scores; CUDA inputs the dtypes the kernels generate (others raise
    ``NotImplementedError`` saying so: convert them with ``.float()``).
    """
    return select(input, k, lengths, offsets=offsets if is_tensor(offsets) else _np.asarray(offsets))


def top_k_page_table_transform(
    input: Any, src_page_table: Any, lengths: Any, k: int, row_to_batch: Any = None  # noqa: A002
) -> Any:
    """FlashInfer ``top_k_page_table_transform(input, src_page_table, lengths, k,
    row_to_batch)``: Top-K of each row mapped through a page table.

    FlashInfer: ``out[i, j] = src_page_table[b, topk_index[i, j]]`` with ``b =
    row_to_batch[i]`` (or ``i``), -1 beyond the row's length.

    Here: the same output, the lookup fused into the selection (a page table of page size 1;
    one kernel launch on CUDA tensors), ``row_to_batch`` too: it is the row map ``page_rows``,
    read where the table is (no gather). A used entry must be non-negative, and each
    ``row_to_batch`` entry a row of the table: on host inputs a bad one raises ``ValueError``
    naming the row; on CUDA a bad entry's slot (a bad ``row_to_batch`` entry's whole row) is
    written as -1 and the status bit raised (``check=True`` reports it). Host inputs take
    float16 and bfloat16 scores; CUDA inputs the dtypes the kernels generate.
    """
    if row_to_batch is not None and not is_tensor(row_to_batch):
        row_to_batch = _np.asarray(row_to_batch)
    return select(input, k, lengths, page_table=src_page_table, page_size=1, page_rows=row_to_batch)


# ------------------------------------------------------------------------------------ vLLM
def top_k_per_row_prefill(
    logits: Any,
    row_starts: Any,
    row_ends: Any,
    indices: Any,
    num_rows: int,
    stride0: int,
    stride1: int,
    k: int,
) -> None:
    """vLLM ``top_k_per_row_prefill(logits, rowStarts, rowEnds, indices, numRows, stride0,
    stride1, topK)``: Top-K of each row's window, written into ``indices``.

    vLLM: row ``i`` selects among ``logits[i, row_starts[i]:row_ends[i]]`` (element strides
    ``stride0``, ``stride1``) and writes indices relative to ``row_starts[i]`` into
    ``indices[i, :k]``; a window of ``L <= k`` scores gives ``0..L-1``, then -1.

    Here: the same output (an end beyond the width is read as the width, one before its
    start as an empty window), the windows fused into one selection. On host inputs a start
    outside ``[0, width]`` raises ``ValueError``; on CUDA tensors the windows are read on the
    device (no synchronization, graph-capturable) after one elementwise clamp of the ends, and
    such a row is selected as empty with the kernels' status bit raised. ``stride1 != 1``
    costs a copy.
    """
    rows = _strided(logits, num_rows, int(stride0), int(stride1))
    num_rows = int(num_rows)
    out = indices[:num_rows]
    if num_rows == 0:
        return
    width = int(rows.shape[1])
    if _on_host(rows):
        s = _host_array(row_starts[:num_rows]).astype(_np.int64)
        bad = _np.flatnonzero((s < 0) | (s > width))
        if bad.size:
            raise ValueError(f"row_starts[{bad[0]}] = {s[bad[0]]} is outside [0, {width}]")
        e = _np.clip(_host_array(row_ends[:num_rows]).astype(_np.int64), s, width)
        select(rows, k, starts=s, ends=e, out=out)
        return
    starts = row_starts[:num_rows]
    ends = _torch.maximum(row_ends[:num_rows].clamp(max=width), starts)
    select(rows, k, starts=starts, ends=ends, out=out)


def top_k_per_row_decode(
    logits: Any,
    next_n: int,
    seq_lens: Any,
    indices: Any,
    num_rows: int,
    stride0: int,
    stride1: int,
    k: int,
) -> None:
    """vLLM ``top_k_per_row_decode(logits, next_n, seqLens, indices, numRows, stride0,
    stride1, topK)``: Top-K of each decode row, written into ``indices``.

    vLLM: row ``i`` belongs to request ``i // next_n`` and selects among
    ``logits[i, :seq_lens[i // next_n] - next_n + i % next_n + 1]`` (the causal end of the
    ``i % next_n``-th of ``next_n`` speculative tokens); indices from 0, -1 padded.

    Here: the same output. With ``next_n == 1`` the lengths are ``seq_lens`` as given; with
    more, the decode rows are selected in one fused call (the kernels derive each row's length
    from ``seq_lens`` and ``next_n`` on the device); a row count that is not a multiple of
    ``next_n`` computes the lengths by a few elementwise steps first. Graph-capturable.
    """
    rows = _strided(logits, num_rows, int(stride0), int(stride1))
    num_rows = int(num_rows)
    next_n = int(next_n)
    if next_n < 1:
        raise ValueError(f"next_n must be at least 1, got {next_n}")
    if next_n > 1 and num_rows % next_n == 0:
        groups = num_rows // next_n
        select(rows, k, seq_lens=seq_lens[:groups], next_n=next_n, out=indices[:num_rows])
        return
    if next_n == 1:
        lengths = seq_lens[:num_rows]
    elif is_tensor(seq_lens):
        r = _torch.arange(num_rows, device=seq_lens.device)
        lengths = (seq_lens.long()[r // next_n] - next_n + (r % next_n) + 1).to(_torch.int32)
    else:
        r = _np.arange(num_rows)
        lengths = (_np.asarray(seq_lens, dtype=_np.int64)[r // next_n] - next_n + (r % next_n) + 1).astype(_np.int32)
    select(rows, k, lengths, out=indices[:num_rows])


def persistent_topk(logits: Any, lengths: Any, output: Any, workspace: Any, k: int, max_seq_len: int) -> None:
    """vLLM ``persistent_topk(logits, lengths, output, workspace, k, max_seq_len)``: Top-K of
    each row's valid prefix, written into ``output``.

    vLLM: row ``i`` selects among ``logits[i, :min(lengths[i], max_seq_len, stride)]``;
    indices from 0, -1 padded; K in {512, 1024, 2048}; ``workspace`` is a caller-allocated
    scratch buffer.

    Here: the same output for any K up to 16384. ``workspace`` is ignored (the selector keeps
    its own, per device and stream). The lengths are clamped to ``max_seq_len`` by one
    elementwise step only when ``max_seq_len`` is below the width.
    """
    width = int(logits.shape[1])
    limit = min(width, int(max_seq_len))
    rows = logits[:, :limit]
    if limit < width:
        lengths = lengths.clamp(max=limit) if is_tensor(lengths) else _np.minimum(lengths, limit)
    select(rows, k, lengths, out=output)
