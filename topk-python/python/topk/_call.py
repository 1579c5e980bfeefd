"""The call interface beyond the plain operator (``docs/interface.md``): 16-bit scores, values,
sorted order, lowest-index ties, row windows, decode rows, fused index transforms (a page table
read directly or through a row map), a row's prior boundary and its boundary output.

The CPU backend implements all of it (``topk_runtime::cpu::select_with``); the GPU kernels
run what ``topk_runtime::cuda::gpu_refusal`` does not name (asked through
``_native.gpu_unsupported``, the single source). Every host call, plain or not, runs through
:func:`host_select`; CUDA calls with an interface through ``_cuda_call``. :func:`form` checks
how the arguments combine, for both.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional, Tuple

import numpy as _np

from . import _arrays, _native
from ._arrays import _torch, dtype_word

class Options:
    """The interface arguments of one ``topk.select`` call, as given."""

    __slots__ = (
        "values", "sorted", "deterministic", "starts", "ends", "relative_to_start", "seq_lens",
        "next_n", "offsets", "page_table", "page_size", "prior", "prior_bins", "boundary", "page_rows",
    )

    def __init__(self, values: Any, sorted: Any, deterministic: Any, starts: Any, ends: Any,  # noqa: A002
                 relative_to_start: Any, seq_lens: Any, next_n: Any, offsets: Any,
                 page_table: Any, page_size: Any, prior: Any = None, prior_bins: Any = None,
                 boundary: Any = False, page_rows: Any = None) -> None:
        self.values = values
        self.sorted = sorted
        self.deterministic = deterministic
        self.starts = starts
        self.ends = ends
        self.relative_to_start = relative_to_start
        self.seq_lens = seq_lens
        self.next_n = next_n
        self.offsets = offsets
        self.page_table = page_table
        self.page_size = page_size
        self.prior = prior
        self.prior_bins = prior_bins
        self.boundary = boundary
        self.page_rows = page_rows


PLAIN = Options(False, False, False, None, None, True, None, None, None, None, None)


# The form of a call's interface as the native module takes it: (values, sorted,
# deterministic, rows, transform, prior, boundary), rows in lengths / window / window_absolute /
# decode, transform in none / offset / paged / paged_rows (the spec's `paged(rows)`) and prior
# "none" or the margins "P/R".
Io = Tuple[bool, bool, bool, str, str, str, bool]
PLAIN_IO: Io = (False, False, False, "lengths", "none", "none", False)

_PRIOR_BINS: Dict[str, str] = {}


def prior_text(bins: Any) -> str:
    """The margins of a prior as given (a string ``"P/R"`` or a ``(P, R)`` pair) as a string,
    not yet checked; ``Prior::SUGGESTED`` for None. Pure Python, so that it traces under
    ``torch.compile``."""
    if bins is None:
        return _native.PRIOR_SUGGESTED
    if isinstance(bins, (tuple, list)):
        if len(bins) != 2 or any(isinstance(b, bool) or not hasattr(b, "__index__") for b in bins):
            raise TypeError(f"prior_bins must be a string 'P/R' or a pair (P, R) of ints, got {bins!r}")
        return f"{int(bins[0].__index__())}/{int(bins[1].__index__())}"
    if not isinstance(bins, str):
        raise TypeError(f"prior_bins must be a string 'P/R' or a pair (P, R) of ints, got {type(bins).__name__}")
    return bins


def prior_bins(bins: Any) -> str:
    """The margins of a prior in canonical form ``"P/R"`` (see :func:`prior_text`), checked as
    a spec checks them (``ValueError`` saying what is wrong)."""
    bins = prior_text(bins)
    text = _PRIOR_BINS.get(bins)
    if text is None:
        text = _PRIOR_BINS[bins] = _native.prior_bins(bins)
    return text


def form(options: Options, lengths: Any, check_bins: bool = True) -> Io:
    """The interface form of a call, after checking that its arguments go together (the
    errors say which to drop or add); the arrays themselves are checked where they are read.
    ``check_bins=False`` (under ``torch.compile``) leaves the prior's margins as given, for the
    op to check when it runs."""
    o = options
    windows = o.starts is not None or o.ends is not None
    if windows and (o.starts is None or o.ends is None):
        raise ValueError("starts= and ends= go together: row r's valid scores are [starts[r], ends[r])")
    sources = [n for n, given in (("lengths", lengths is not None), ("starts/ends", windows),
                                  ("seq_lens", o.seq_lens is not None)) if given]
    if len(sources) > 1:
        raise ValueError(f"give one row source, not {' and '.join(sources)}: lengths=, starts= "
                         "with ends=, or seq_lens= with next_n=")
    if o.relative_to_start is not True and not windows:
        raise ValueError("relative_to_start= applies to row windows: pass starts= and ends= too")
    if o.next_n is not None and o.seq_lens is None:
        raise ValueError("next_n= goes with seq_lens= (speculative-decode rows)")
    if o.offsets is not None and o.page_table is not None:
        raise ValueError("give one index transform: offsets= or page_table=")
    if o.page_size is not None and o.page_table is None:
        raise ValueError("page_size= goes with page_table=")
    if o.page_rows is not None and o.page_table is None:
        raise ValueError("page_rows= goes with page_table=: row r reads the table row page_rows[r] "
                         "(pass the table too, or drop page_rows=)")
    if o.prior_bins is not None and o.prior is None:
        raise ValueError("prior_bins= goes with prior= (one prior boundary per row)")
    if windows:
        rows = "window" if o.relative_to_start else "window_absolute"
    else:
        rows = "decode" if o.seq_lens is not None else "lengths"
    if o.offsets is not None:
        transform = "offset"
    elif o.page_table is not None:
        transform = "paged" if o.page_rows is None else "paged_rows"
    else:
        transform = "none"
    values = o.values is not False and o.values is not None
    prior = "none" if o.prior is None else (prior_bins if check_bins else prior_text)(o.prior_bins)
    boundary = o.boundary is not False and o.boundary is not None
    return (values, bool(o.sorted), bool(o.deterministic), rows, transform, prior, boundary)


_UNSUPPORTED: Dict[Tuple[str, Io], Optional[str]] = {}


def gpu_refusal(scores_dtype: str, io: Io, where: str = "topk.select") -> Optional[NotImplementedError]:
    """The error for a CUDA call the GPU path does not run (``topk_runtime::cuda::gpu_refusal``
    says what), or None when it does."""
    key = (scores_dtype, io)
    why = _UNSUPPORTED.get(key, False)
    if why is False:
        why = _UNSUPPORTED[key] = _native.gpu_unsupported(scores_dtype, io)
    return None if why is None else NotImplementedError(f"{where} {why}")


def positive_int(x: Any, name: str) -> int:
    if isinstance(x, bool) or not hasattr(x, "__index__"):
        raise TypeError(f"{name} must be an int, got {type(x).__name__}")
    x = int(x.__index__())
    if x < 1:
        raise ValueError(f"{name} must be at least 1, got {x}")
    if x >= 2**32:
        raise ValueError(f"{name} = {x} is too large: it must fit 32 bits")
    return x


def _ints(x: Any, name: str, scores_v: Any, rows: Optional[int], keep: list) -> Tuple[int, int, int, int]:
    """``(ptr, bits, len, stride)`` of a 1-D int32 / int64 host array."""
    v = _arrays.view(x, name)
    stride = _arrays.check_ints(v, name, scores_v, rows)
    keep.append(v)
    return v.ptr, 32 if v.dtype == "i32" else 64, v.shape[0], stride


def _floats(x: Any, name: str, scores_v: Any, rows: int, keep: list) -> Tuple[int, int, int]:
    """``(ptr, len, stride)`` of a float32 ``[rows]`` host array."""
    v = _arrays.view(x, name)
    stride = _arrays.check_floats(v, name, scores_v, rows)
    keep.append(v)
    return v.ptr, v.shape[0], stride


def _table(x: Any, rows: int, scores_v: Any, keep: list,
           mapped: bool = False) -> Tuple[int, int, int, int, int, int]:
    """``(ptr, bits, rows, columns, row stride, column stride)`` of a page table; ``mapped``:
    read through ``page_rows``, so any number of table rows."""
    v = _arrays.view(x, "page_table")
    if v.dtype not in ("i32", "i64"):
        raise TypeError(f"page_table must be int32 or int64, got {dtype_word(v.dtype)}")
    if mapped:
        if len(v.shape) != 2:
            raise ValueError(
                "page_table must be 2-D [table rows, pages] (page_rows= names the table row of each "
                f"score row); got shape {list(v.shape)}"
            )
        _arrays.same_device(v, scores_v, "page_table")
        keep.append(v)
        return v.ptr, 32 if v.dtype == "i32" else 64, v.shape[0], v.shape[1], v.strides[0], v.strides[1]
    if len(v.shape) != 2 or not (v.shape[0] >= rows or v.shape[0] == 1):
        raise ValueError(
            f"page_table must be 2-D [rows, pages] with a row per score row ({rows}), or [1, pages] "
            f"for one table every row shares (or any rows with page_rows= naming each score row's); "
            f"got shape {list(v.shape)}"
        )
    _arrays.same_device(v, scores_v, "page_table")
    keep.append(v)
    table_rows = 1 if v.shape[0] == 1 else rows
    return v.ptr, 32 if v.dtype == "i32" else 64, table_rows, v.shape[1], v.strides[0], v.strides[1]


def _numpy_dtype(name: str) -> Any:
    if name == "bf16":
        ml_dtypes = sys.modules.get("ml_dtypes")
        if ml_dtypes is None:
            try:
                import ml_dtypes  # noqa: F401  (JAX's NumPy bfloat16)
            except ImportError:
                raise TypeError(
                    "values of bfloat16 scores need somewhere to go: pass values= a bfloat16 "
                    "[rows, k] array (NumPy has no bfloat16 without ml_dtypes)"
                ) from None
        return _np.dtype(sys.modules["ml_dtypes"].bfloat16)
    return _np.dtype({"f32": _np.float32, "f16": _np.float16}[name])


def allocate(scores: Any, rows: int, k: int, dtype: str) -> Any:
    """A ``[rows, k]`` host array of ``dtype`` of the scores' kind (a torch tensor for torch
    scores, else NumPy)."""
    if _torch is not None and isinstance(scores, _torch.Tensor):
        torch_dtype = {"i32": _torch.int32, "f32": _torch.float32, "f16": _torch.float16,
                       "bf16": _torch.bfloat16}[dtype]
        return _torch.empty((rows, k), dtype=torch_dtype)
    if dtype == "i32":
        return _np.empty((rows, k), dtype=_np.int32)
    return _np.empty((rows, k), dtype=_numpy_dtype(dtype))


def allocate_rows(scores: Any, rows: int) -> Any:
    """A float32 ``[rows]`` host array of the scores' kind (a boundary output)."""
    if _torch is not None and isinstance(scores, _torch.Tensor):
        return _torch.empty((rows,), dtype=_torch.float32)
    return _np.empty((rows,), dtype=_np.float32)


def result(out: Any, values: Any, boundary: Any) -> Any:
    """What a call returns: ``out``, then the values and the boundary where asked for."""
    if values is None and boundary is None:
        return out
    return (out,) + (() if values is None else (values,)) + (() if boundary is None else (boundary,))


def host_select(scores: Any, scores_v: Any, k: int, lengths: Any, out: Any, options: Options) -> Any:
    """The CPU backend on host memory (NumPy arrays, CPU tensors, DLPack producers): ``out``,
    then the values and the boundary when they were asked for (see :func:`result`)."""
    rows, width, pitch = _arrays.check_scores(scores_v)
    o = options
    keep: list = [scores_v]
    kw: dict = {}
    io = form(o, lengths)
    rows_kind = io[3]
    windows = rows_kind.startswith("window")
    if lengths is not None:
        kw["lengths"] = _ints(lengths, "lengths", scores_v, rows, keep)
    if windows:
        kw["starts"] = _ints(o.starts, "starts", scores_v, rows, keep)
        kw["ends"] = _ints(o.ends, "ends", scores_v, rows, keep)
        kw["relative"] = bool(o.relative_to_start)
    if o.seq_lens is not None:
        kw["seq_lens"] = _ints(o.seq_lens, "seq_lens", scores_v, None, keep)
        kw["next_n"] = 1 if o.next_n is None else positive_int(o.next_n, "next_n")
    if o.offsets is not None:
        kw["offsets"] = _ints(o.offsets, "offsets", scores_v, rows, keep)
    if o.page_table is not None:
        mapped = o.page_rows is not None
        kw["page_table"] = _table(o.page_table, rows, scores_v, keep, mapped)
        kw["page_size"] = 1 if o.page_size is None else positive_int(o.page_size, "page_size")
        if mapped:
            kw["page_rows"] = _ints(o.page_rows, "page_rows", scores_v, rows, keep)
    if o.prior is not None:
        kw["prior"] = _floats(o.prior, "prior", scores_v, rows, keep)
        kw["prior_bins"] = io[5]
    kw["sorted"] = bool(o.sorted)
    kw["deterministic"] = bool(o.deterministic)
    values = o.values
    if values is True:
        values = allocate(scores, rows, k, scores_v.dtype)
    elif values is False:
        values = None
    if values is not None:
        vv = _arrays.view(values, "values")
        kw["values"] = (vv.ptr, _arrays.check_out(vv, rows, k, scores_v, "values", scores_v.dtype))
        keep.append(vv)
    boundary = o.boundary
    if boundary is True:
        boundary = allocate_rows(scores, rows)
    elif boundary is False:
        boundary = None
    if boundary is not None:
        bv = _arrays.view(boundary, "boundary")
        _arrays.check_boundary(bv, rows, scores_v)
        kw["boundary"] = bv.ptr
        keep.append(bv)
    if out is None:
        out = allocate(scores, rows, k, "i32")
    ov = _arrays.view(out, "out")
    out_pitch = _arrays.check_out(ov, rows, k, scores_v)
    keep.append(ov)
    if rows:
        _native.cpu_select(scores_v.ptr, scores_v.dtype, rows, width, pitch, k, ov.ptr, out_pitch, **kw)
    del keep
    return result(out, values, boundary)
