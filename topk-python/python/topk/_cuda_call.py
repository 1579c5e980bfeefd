"""The call interface on CUDA inputs (``docs/interface.md``): values, sorted order, lowest-index
ties, row windows, decode rows, the offset and page-table transforms (the table read directly
or through a row map), a row's prior and its boundary output run inside the generated kernels
(``Plan::launch_call_with``); the score dtypes and forms are those the GPU path runs
(``topk_runtime::cuda::gpu_refusal`` names the rest, and such a call raises
``NotImplementedError`` with its sentence).

Every array of the interface stays on the device and is read there: nothing is copied to the
host and nothing synchronizes (except ``check=True``). The eager call converts int64 or strided
arrays to contiguous int32 on the stream (saturating, so an entry beyond int32 still raises the
kernels' status bit); a ``Selector`` converts nothing (it allocates nothing per call) and asks
for contiguous int32 instead.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as _np

from . import _arrays, _native, _nvrtc
from ._arrays import _torch, dtype_word
from ._call import Io, Options, allocate, allocate_rows, form, gpu_refusal, host_select, positive_int, result

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1

# (page_table, page_columns, page_pitch, page_size, page_rows, page_table_rows): a page table,
# its row map and its row count only with transform paged_rows; 0 where unused.
Paged = Tuple[int, int, int, int, int, int]
# (values, starts, ends, seq_lens, next_n, offsets, paged, prior, boundary), as
# `_native.cuda_select_call` and `CudaSelector.run` take them.
Buffers = Tuple[int, int, int, int, int, int, Paged, int, int]
_NO_TABLE: Paged = (0, 0, 0, 1, 0, 0)


def _int32_on_device(x: Any) -> Any:
    """``x`` (a device int array) as contiguous int32, saturated into the int32 range."""
    if _arrays.is_tensor(x):
        if x.dtype != _torch.int32:
            x = x.clamp(_I32_MIN, _I32_MAX).to(_torch.int32)
        return x.contiguous()
    if hasattr(x, "astype") and hasattr(x, "clip"):  # CuPy and the like
        return x.clip(_I32_MIN, _I32_MAX).astype("int32")
    raise TypeError("this array must be contiguous int32 on the GPU: convert it first")


class Marshal:
    """Reads a CUDA call's interface arrays into device pointers, checking each against the
    scores (dtype, device, shape, strides); keeps what must outlive the launch."""

    def __init__(self, scores_v: Any, rows: int, stream: Optional[int], convert: bool, where: str) -> None:
        self.scores_v = scores_v
        self.rows = rows
        self.stream = stream
        self.convert = convert
        self.where = where
        self.keep: List[Any] = []

    def _view(self, x: Any, name: str) -> Any:
        v = _arrays.view(x, name, self.stream)
        if (v.device, v.index) != (self.scores_v.device, self.scores_v.index):
            raise ValueError(
                f"{name} is on {_where(v)} but scores are on {_where(self.scores_v)}: the GPU reads "
                f"{name} on the scores' device; move it there (torch: {name}.to(scores.device))"
            )
        return v

    def _refuse_conversion(self, name: str, v: Any) -> None:
        raise TypeError(
            f"{self.where} takes {name} as a contiguous int32 device tensor (it allocates nothing "
            f"per call), got {dtype_word(v.dtype)} with strides {list(v.strides)}: convert it once "
            f"outside the captured region ({name}.to(torch.int32).contiguous())"
        )

    def ints(self, x: Any, name: str, n: int) -> int:
        """The device pointer of ``x``: int32 / int64 ``[n]`` on the scores' device."""
        v = self._view(x, name)
        if v.dtype not in ("i32", "i64"):
            raise TypeError(f"{name} must be int32 or int64, got {dtype_word(v.dtype)}")
        if len(v.shape) != 1 or v.shape[0] != n:
            raise ValueError(f"{name} must have shape [{n}], got {list(v.shape)}")
        if v.dtype != "i32" or (n > 1 and v.strides[0] != 1):
            if not self.convert:
                self._refuse_conversion(name, v)
            x = _int32_on_device(x)
            v = self._view(x, name)
        self.keep.append((x, v))
        return v.ptr

    def floats(self, x: Any, name: str, n: int) -> int:
        """The device pointer of ``x``: float32 ``[n]`` on the scores' device, contiguous (a
        strided one is copied on the stream by the eager call)."""
        v = self._view(x, name)
        _arrays.check_floats(v, name, self.scores_v, n)
        if n > 1 and v.strides[0] != 1:
            if not self.convert:
                raise TypeError(
                    f"{self.where} takes {name} as a contiguous float32 device tensor (it allocates "
                    f"nothing per call), got strides {list(v.strides)}: make it contiguous once "
                    "outside the captured region"
                )
            if not hasattr(x, "contiguous") and not hasattr(x, "copy"):
                raise TypeError(f"{name} on the GPU must be contiguous: copy it first")
            x = x.contiguous() if hasattr(x, "contiguous") else x.copy()
            v = self._view(x, name)
        self.keep.append((x, v))
        return v.ptr

    def table(self, x: Any) -> Tuple[int, int, int]:
        """``(pointer, columns, row pitch)`` of a page table ``[rows or 1, pages]`` (pitch 0:
        one table row that every score row shares)."""
        v = self._view(x, "page_table")
        if v.dtype not in ("i32", "i64"):
            raise TypeError(f"page_table must be int32 or int64, got {dtype_word(v.dtype)}")
        if len(v.shape) != 2 or not (v.shape[0] >= self.rows or v.shape[0] == 1) or v.shape[1] == 0:
            raise ValueError(
                f"page_table must be 2-D [rows, pages] with a row per score row ({self.rows}), or "
                f"[1, pages] for one table every row shares (or any rows with page_rows= naming each "
                f"score row's); got shape {list(v.shape)}"
            )
        shared = v.shape[0] == 1 or self.rows == 1
        if v.dtype != "i32" or (v.shape[1] > 1 and v.strides[1] != 1):
            if not self.convert:
                self._refuse_conversion("page_table", v)
            x = _int32_on_device(x[:1] if shared else x[: self.rows])
            v = self._view(x, "page_table")
        self.keep.append((x, v))
        return v.ptr, v.shape[1], 0 if shared else v.strides[0]

    def mapped_table(self, x: Any) -> Tuple[int, int, int, int]:
        """``(pointer, columns, row pitch, rows)`` of a page table read through a row map: any
        number of rows, each addressed, so the pitch is at least the columns (never 0)."""
        v = self._view(x, "page_table")
        if v.dtype not in ("i32", "i64"):
            raise TypeError(f"page_table must be int32 or int64, got {dtype_word(v.dtype)}")
        if len(v.shape) != 2 or v.shape[0] == 0 or v.shape[1] == 0:
            raise ValueError(
                "page_table must be 2-D [table rows, pages], neither empty (page_rows= names the "
                f"table row of each score row); got shape {list(v.shape)}"
            )
        table_rows, columns = v.shape
        overlapping = table_rows > 1 and v.strides[0] < columns  # an expanded tensor's stride 0
        if v.dtype != "i32" or (columns > 1 and v.strides[1] != 1) or overlapping:
            if not self.convert:
                self._refuse_conversion("page_table", v)
            x = _int32_on_device(x)
            v = self._view(x, "page_table")
        self.keep.append((x, v))
        return v.ptr, columns, v.strides[0] if table_rows > 1 else columns, table_rows

    def buffers(self, io: Io, options: Options, values_ptr: int, boundary_ptr: int = 0) -> Buffers:
        """The device buffers of the interface ``io`` from the call's arrays."""
        o, rows = options, self.rows
        starts = ends = seq_lens = offsets = 0
        next_n = 1
        paged = _NO_TABLE
        if io[3].startswith("window"):
            starts = self.ints(o.starts, "starts", rows)
            ends = self.ints(o.ends, "ends", rows)
        elif io[3] == "decode":
            next_n = 1 if o.next_n is None else positive_int(o.next_n, "next_n")
            groups = _arrays.view(o.seq_lens, "seq_lens", self.stream).shape
            groups = groups[0] if len(groups) == 1 else -1
            if groups * next_n != rows:
                raise ValueError(
                    f"{groups} seq_lens at next_n = {next_n} describe {max(groups, 0) * next_n} rows, "
                    f"but the scores have {rows}: decode rows come in groups of next_n per "
                    "sequence, one seq_len per group (a 1-D seq_lens of rows / next_n)"
                )
            seq_lens = self.ints(o.seq_lens, "seq_lens", groups)
        if io[4] == "offset":
            offsets = self.ints(o.offsets, "offsets", rows)
        elif io[4] == "paged":
            table, columns, table_pitch = self.table(o.page_table)
            page_size = 1 if o.page_size is None else positive_int(o.page_size, "page_size")
            paged = (table, columns, table_pitch, page_size, 0, 0)
        elif io[4] == "paged_rows":
            table, columns, table_pitch, table_rows = self.mapped_table(o.page_table)
            page_size = 1 if o.page_size is None else positive_int(o.page_size, "page_size")
            # Read on the device: an entry outside [0, table_rows) raises BAD_TRANSFORM there
            # (int64 entries are saturated, so none wraps into range).
            page_rows = self.ints(o.page_rows, "page_rows", rows)
            paged = (table, columns, table_pitch, page_size, page_rows, table_rows)
        prior = 0 if io[5] == "none" else self.floats(o.prior, "prior", rows)
        return (values_ptr, starts, ends, seq_lens, next_n, offsets, paged, prior, boundary_ptr)


def _where(v: Any) -> str:
    return "cpu" if v.device == "cpu" else f"cuda:{v.index}"


def _device_array(scores: Any, scores_v: Any, rows: int, cols: int, dtype: str) -> Any:
    """A ``[rows, cols]`` array of ``dtype`` on the scores' device, of the scores' kind."""
    if _arrays.is_tensor(scores):
        t = {"i32": _torch.int32, "f32": _torch.float32, "f16": _torch.float16, "bf16": _torch.bfloat16}[dtype]
        return _torch.empty((rows, cols), dtype=t, device=scores.device)
    if type(scores).__module__.startswith("cupy"):
        import cupy

        names = {"i32": "int32", "f32": "float32", "f16": "float16"}
        if dtype not in names:
            raise TypeError("pass values= (a bfloat16 [rows, k] CUDA array): CuPy has no bfloat16 to allocate")
        with cupy.cuda.Device(scores_v.index):
            return cupy.empty((rows, cols), dtype=names[dtype])
    if scores_v.device == "cpu":  # the marshalling tests' stand-ins
        return allocate(scores, rows, cols, dtype)
    raise TypeError("pass out= and values= (CUDA arrays): topk cannot allocate them for this producer")


def boundary_output(scores: Any, scores_v: Any, rows: int, boundary: Any, stream: Optional[int]):
    """``(boundary or None, its pointer or 0)``: the boundary output of a call, allocated for
    ``True``. It may be the prior's array: a row reads its prior before writing its boundary."""
    if boundary is False or boundary is None:
        return None, 0
    if boundary is True:
        if scores_v.device == "cpu":  # the marshalling tests' stand-ins
            boundary = allocate_rows(scores, rows)
        else:
            boundary = _device_array(scores, scores_v, 1, rows, "f32")[0]
    bv = _arrays.view(boundary, "boundary", stream)
    _arrays.check_boundary(bv, rows, scores_v)
    return boundary, bv.ptr


def outputs(scores: Any, scores_v: Any, rows: int, k: int, out: Any, values: Any, stream: Optional[int]):
    """``(out, out view, values or None, values view or None, pitch)``: the outputs of a call,
    allocated where not given. The kernels write the values at the indices' pitch, so a given
    ``out`` and ``values`` must share one row stride; an allocated one takes the other's."""
    want_values = values is not False and values is not None
    vv = None
    if want_values and values is not True:
        vv = _arrays.view(values, "values", stream)
        vpitch = _arrays.check_out(vv, rows, k, scores_v, "values", scores_v.dtype)
    if out is None:
        pitch = vpitch if vv is not None else k
        out = _device_array(scores, scores_v, rows, pitch, "i32")[:, :k]
    ov = _arrays.view(out, "out", stream)
    pitch = _arrays.check_out(ov, rows, k, scores_v)
    if values is True:
        values = _device_array(scores, scores_v, rows, pitch, scores_v.dtype)[:, :k]
        vv = _arrays.view(values, "values", stream)
    elif vv is not None and rows > 1 and vpitch != pitch:
        raise ValueError(
            f"values and out must have the same row stride on CUDA (the kernels write both at "
            f"one pitch): got {vpitch} and {pitch}; allocate them alike, or leave one to topk"
        )
    return out, ov, (values if want_values else None), vv, pitch


def select_call(scores: Any, scores_v: Any, k: int, lengths: Any, out: Any, options: Options,
                check: bool, stream: int) -> Any:
    """An eager CUDA call with an interface: ``out`` or ``(out, values)``."""
    rows, width, pitch = _arrays.check_scores(scores_v)
    io = form(options, lengths)
    refused = gpu_refusal(scores_v.dtype, io)
    if refused is not None:
        raise refused
    m = Marshal(scores_v, rows, stream or None, True, "topk.select")
    lengths_ptr = 0 if lengths is None else m.ints(lengths, "lengths", rows)
    out, ov, values, vv, out_pitch = outputs(scores, scores_v, rows, k, out, options.values, stream or None)
    boundary, boundary_ptr = boundary_output(scores, scores_v, rows, options.boundary, stream or None)
    buffers = m.buffers(io, options, 0 if vv is None else vv.ptr, boundary_ptr)
    got = result(out, values, boundary)
    if rows == 0:
        return got
    if width == 0:
        out[:rows, :k] = -1
        if values is not None:
            values[:rows, :k] = -float("inf")
        if boundary is not None:
            boundary[:rows] = float("nan")  # every row has L = 0 <= K
        return got
    if check and _capturing():
        raise ValueError(
            "check=True reads the status word back, which a CUDA graph capture does not allow: "
            "use topk.Selector and call its check() after replaying"
        )
    _nvrtc.preload()
    bits = _native.cuda_select_call(
        scores_v.index, stream, scores_v.ptr, scores_v.dtype, rows, width, pitch, lengths_ptr,
        ov.ptr, out_pitch, k, io, buffers, check,
    )
    del m
    if bits:
        raise status_error(bits, scores, k, lengths, options)
    return got


def _capturing() -> bool:
    return bool(_torch is not None and _torch.cuda.is_available() and _torch.cuda.is_current_stream_capturing())


def _host_copy(x: Any) -> Any:
    if x is None or isinstance(x, (bool, int)):
        return x
    if _arrays.is_tensor(x):
        return x.detach().cpu()
    if hasattr(x, "get"):  # CuPy
        return x.get()
    return _np.asarray(x)


def status_error(bits: int, scores: Any, k: int, lengths: Any, options: Options) -> ValueError:
    """The error for the status bits of a CUDA call, naming the offending row as the CPU
    backend finds it on a host copy of the call's inputs (which synchronizes; only ever after
    the kernels reported bad input)."""
    o = options
    host = Options(False, o.sorted, o.deterministic, _host_copy(o.starts), _host_copy(o.ends),
                   o.relative_to_start, _host_copy(o.seq_lens), o.next_n, _host_copy(o.offsets),
                   _host_copy(o.page_table), o.page_size, page_rows=_host_copy(o.page_rows))
    found = None
    try:
        s = _host_copy(scores)
        host_select(s, _arrays.view(s, "scores"), k, _host_copy(lengths), None, host)
    except (ValueError, TypeError) as e:
        found = str(e)
    return _native.CudaSelector.status_error(bits, found)
