"""The PyTorch custom ops `torch.ops.topk.select`, `torch.ops.topk.select_out`,
`torch.ops.topk.select_call` (the call interface: values, order, ties, row windows, decode
rows, index transforms, the page table's row map, a row's prior) and
`torch.ops.topk.select_call_boundary` (the same with each row's boundary as a third output: a
separate op, so that `select_call` keeps its two outputs).

Registered with `torch.library.custom_op` and a fake (meta) implementation, so that
`torch.compile(fullgraph=True)` traces them as single opaque nodes and CUDA graphs (including
piecewise capture) record the launch the real implementation makes on the current stream.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from . import _arrays
from ._call import PLAIN, Options, host_select
from ._select import _torch_cuda, _torch_cuda_call

_REGISTERED = False


def _run(scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor], out: Optional[torch.Tensor]) -> torch.Tensor:
    if scores.is_cuda:
        return _torch_cuda(scores, k, lengths, out, False)
    return host_select(scores, _arrays.view(scores, "scores"), k, lengths, out, PLAIN)


def register() -> None:
    """Registers the ops once (needs `torch.library.custom_op`, PyTorch 2.4 or newer)."""
    global _REGISTERED
    if _REGISTERED or not hasattr(torch.library, "custom_op"):
        return
    _REGISTERED = True

    @torch.library.custom_op("topk::select", mutates_args=())
    def select(scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Indices of the k largest valid scores per row: int32 [rows, k], -1 padded."""
        return _run(scores, _arrays.check_k(k), lengths, None)

    @select.register_fake
    def _(scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor] = None) -> torch.Tensor:
        return scores.new_empty((scores.shape[0], k), dtype=torch.int32)

    @torch.library.custom_op("topk::select_out", mutates_args=("out",))
    def select_out(scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor], out: torch.Tensor) -> None:
        """`topk::select` into `out` (int32 [>= rows, >= k])."""
        _run(scores, _arrays.check_k(k), lengths, out)

    @select_out.register_fake
    def _(scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor], out: torch.Tensor) -> None:
        return None

    @torch.library.custom_op("topk::select_call", mutates_args=())
    def select_call(
        scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor], starts: Optional[torch.Tensor],
        ends: Optional[torch.Tensor], seq_lens: Optional[torch.Tensor], offsets: Optional[torch.Tensor],
        page_table: Optional[torch.Tensor], values: bool, sorted: bool, deterministic: bool,  # noqa: A002
        relative_to_start: bool, next_n: int, page_size: int, prior: Optional[torch.Tensor] = None,
        prior_bins: str = "", page_rows: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """`topk.select` with the call interface: (indices int32 [rows, k], values [rows, k] in
        the scores' dtype, or [rows, 0] without values=True). `prior`: float32 [rows] with the
        margins `prior_bins` ("P/R"; "" for the suggested ones). `page_rows`: with `page_table`,
        the table row of each score row (last, so that calls without it keep their places)."""
        opts = _options(starts, ends, seq_lens, offsets, page_table, values, sorted, deterministic,
                        relative_to_start, next_n, page_size, prior, prior_bins, False, page_rows)
        got = _call_op(scores, k, lengths, opts)
        return _with_values(got, scores, values)[:2]

    @select_call.register_fake
    def _(scores, k, lengths, starts, ends, seq_lens, offsets, page_table, values, sorted,  # noqa: A002
          deterministic, relative_to_start, next_n, page_size, prior=None, prior_bins="", page_rows=None):
        rows = scores.shape[0]
        return (scores.new_empty((rows, k), dtype=torch.int32),
                scores.new_empty((rows, k if values else 0)))

    @torch.library.custom_op("topk::select_call_boundary", mutates_args=())
    def select_call_boundary(
        scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor], starts: Optional[torch.Tensor],
        ends: Optional[torch.Tensor], seq_lens: Optional[torch.Tensor], offsets: Optional[torch.Tensor],
        page_table: Optional[torch.Tensor], values: bool, sorted: bool, deterministic: bool,  # noqa: A002
        relative_to_start: bool, next_n: int, page_size: int, prior: Optional[torch.Tensor] = None,
        prior_bins: str = "", page_rows: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """`topk::select_call` that also returns each row's K-th largest score: float32
        [rows], NaN for a row of L <= k (the next decode step's prior)."""
        opts = _options(starts, ends, seq_lens, offsets, page_table, values, sorted, deterministic,
                        relative_to_start, next_n, page_size, prior, prior_bins, True, page_rows)
        return _with_values(_call_op(scores, k, lengths, opts), scores, values)

    @select_call_boundary.register_fake
    def _(scores, k, lengths, starts, ends, seq_lens, offsets, page_table, values, sorted,  # noqa: A002
          deterministic, relative_to_start, next_n, page_size, prior=None, prior_bins="", page_rows=None):
        rows = scores.shape[0]
        return (scores.new_empty((rows, k), dtype=torch.int32),
                scores.new_empty((rows, k if values else 0)),
                scores.new_empty((rows,), dtype=torch.float32))


def _call_op(scores: torch.Tensor, k: int, lengths: Optional[torch.Tensor], opts: Options):
    k = _arrays.check_k(k)
    if scores.is_cuda:
        return _torch_cuda_call(scores, k, lengths, None, opts, False)
    return host_select(scores, _arrays.view(scores, "scores"), k, lengths, None, opts)


def _with_values(got, scores: torch.Tensor, values: bool) -> tuple:
    """A call's result as (indices, values, boundary...), with [rows, 0] values when none were
    asked for (an op's outputs are fixed)."""
    if not isinstance(got, tuple):
        got = (got,)
    if values:
        return got
    return (got[0], scores.new_empty((scores.shape[0], 0))) + got[1:]


def _options(starts, ends, seq_lens, offsets, page_table, values, sorted_, deterministic,
             relative_to_start, next_n, page_size, prior, prior_bins, boundary, page_rows=None) -> Options:
    """The interface arguments of `topk::select_call` as `topk.select` takes them (`next_n`,
    `page_size` and `prior_bins` only with the arrays they go with; `page_rows` as given, so
    that one without a table is refused)."""
    return Options(
        bool(values), sorted_, deterministic, starts, ends, relative_to_start, seq_lens,
        next_n if seq_lens is not None else None, offsets, page_table,
        page_size if page_table is not None else None, prior,
        (prior_bins or None) if prior is not None else None, boundary, page_rows,
    )
