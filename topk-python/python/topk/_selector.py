"""`topk.Selector`: a plan and its workspaces for fixed capacities (Rust `Plan` + `Workspace`)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as _np

from . import _arrays, _native, _nvrtc
from ._arrays import _torch, check_k
from ._call import PLAIN, PLAIN_IO, Io, Options, gpu_refusal, host_select, prior_bins, result
from ._cuda_call import Marshal, boundary_output, outputs
from ._select import _capturing, _torch_stream

_ROW_SOURCES = ("lengths", "window", "decode")
_TRANSFORMS = ("none", "offset", "paged", "paged_rows")
_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "f32": "f32", "f16": "f16", "bf16": "bf16"}


def _dtype_name(dtype: Any) -> str:
    if _torch is not None and isinstance(dtype, _torch.dtype):
        name = _arrays.torch_dtype_name(dtype)
    else:
        name = _DTYPES.get(str(getattr(dtype, "name", dtype)), str(dtype))
    if name not in _arrays.SCORE_DTYPES:
        raise TypeError(f"dtype must be float32, float16 or bfloat16, got {dtype!r}")
    return name


def _form(dtype: Any, values: Any, sorted_: Any, deterministic: Any, rows: str,
          relative_to_start: Any, transform: str, prior: Any = False, bins: Any = None,
          boundary: Any = False) -> Tuple[str, Io]:
    """The score dtype and interface form a Selector is planned for."""
    if rows not in _ROW_SOURCES:
        raise ValueError(f"rows must be one of {', '.join(_ROW_SOURCES)}, got {rows!r}")
    if transform not in _TRANSFORMS:
        raise ValueError(f"transform must be one of {', '.join(_TRANSFORMS)}, got {transform!r}")
    if relative_to_start is not True and rows != "window":
        raise ValueError("relative_to_start= applies to row windows: pass rows='window' too")
    if bins is not None and not prior:
        raise ValueError("prior_bins= goes with prior=True (each call then passes prior=)")
    if rows == "window" and not relative_to_start:
        rows = "window_absolute"
    prior_text = prior_bins(bins) if prior else "none"
    return _dtype_name(dtype), (bool(values), bool(sorted_), bool(deterministic), rows, transform, prior_text,
                                bool(boundary))


def _parse_device(device: Any) -> Tuple[str, int]:
    if _torch is not None and isinstance(device, _torch.device):
        kind, index = device.type, device.index
    elif isinstance(device, int) and not isinstance(device, bool):
        kind, index = "cuda", device
    elif isinstance(device, str):
        kind, _, rest = device.partition(":")
        index = int(rest) if rest else None
    else:
        raise TypeError(f"device must be 'cpu', 'cuda', 'cuda:N', an int or a torch.device, got {device!r}")
    if kind == "cpu":
        return "cpu", 0
    if kind != "cuda":
        raise ValueError(f"device {device!r}: topk runs on CUDA devices and the CPU")
    if index is None:
        index = _torch.cuda.current_device() if _torch is not None else 0
    return "cuda", int(index)


def _positive(name: str, value: Any) -> int:
    value = int(value)
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


class Selector:
    """A selector planned once for capacities: up to ``max_rows`` rows of up to ``max_width``
    scores, K fixed.

    Planning (choosing the kernel, generating and compiling it, sizing its workspace) happens
    here, before any capture. Each call then launches with no allocation, no synchronization
    and no read-back, on the scores' device and the current stream, which is what a CUDA graph
    captures and replays: the lengths and the live row count stay device inputs, so one
    captured call serves every replay with new lengths and a new row count written into the
    same tensors. Workspaces are kept per stream, so calls on two streams may overlap.

    Args:
        k: 1 to 16384.
        max_rows: the most rows a call may have (its ``M_cap``).
        max_width: the widest rows a call may have.
        device: ``"cuda"``, ``"cuda:N"``, an ordinal, a ``torch.device`` or ``"cpu"``.

    The call interface (``docs/interface.md``) is part of the plan, so it is fixed here and
    each call passes its arrays (see :meth:`__call__`):

    Args:
        dtype: the scores' dtype (``torch.float32`` / ``"float32"`` by default; float16 and
            bfloat16 where the kernels generate them, else ``NotImplementedError`` saying so).
        values: also write the selected scores (each call returns ``(out, values)``).
        sorted, deterministic: descending order; lowest-index ties (both: canonical bytes).
        rows: ``"lengths"`` (default), ``"window"`` (``starts=``/``ends=``) or ``"decode"``
            (``seq_lens=``/``next_n=``).
        relative_to_start: with windows, indices relative to the window's start (default) or
            positions in the row (``False``).
        transform: ``"none"`` (default), ``"offset"`` (``offsets=``), ``"paged"``
            (``page_table=``/``page_size=``) or ``"paged_rows"`` (the same with ``page_rows=``:
            the table row of each score row, the spec's ``transform=paged(rows)``).
        prior: each call passes ``prior=`` (float32 ``[rows]``, a row's prior boundary),
            with the margins ``prior_bins`` (``"P/R"`` or ``(P, R)``; ``"2/8"`` by default).
        boundary: each call also writes each row's K-th largest score (float32 ``[rows]``,
            returned last).
    """

    def __init__(self, k: int, max_rows: int, max_width: int, device: Any = "cuda", *,
                 dtype: Any = "float32", values: bool = False, sorted: bool = False,  # noqa: A002
                 deterministic: bool = False, rows: str = "lengths", relative_to_start: bool = True,
                 transform: str = "none", prior: bool = False, prior_bins: Any = None,
                 boundary: bool = False) -> None:
        self.k = check_k(k)
        self.max_rows = _positive("max_rows", max_rows)
        self.max_width = _positive("max_width", max_width)
        self.device, self.index = _parse_device(device)
        self.dtype, self.io = _form(dtype, values, sorted, deterministic, rows, relative_to_start, transform,
                                    prior, prior_bins, boundary)
        self._native: Optional[Any] = None
        if self.device == "cuda":
            refused = gpu_refusal(self.dtype, self.io, "topk.Selector")
            if refused is not None:
                raise refused
            _nvrtc.preload()
            if self.dtype == "f32" and self.io == PLAIN_IO:
                self._native = _native.CudaSelector(self.index, self.k, self.max_rows, self.max_width)
            else:
                self._native = _native.CudaSelector(
                    self.index, self.k, self.max_rows, self.max_width, self.dtype, self.io
                )

    @property
    def spec(self) -> str:
        """The spec the planner chose (canonical text), e.g. ``k=2048,...,map=persistent,...``."""
        if self._native is None:
            return _native.cpu_spec(self.k, self.max_width)
        return self._native.spec

    @property
    def family(self) -> str:
        """The kernel family: ``persistent``, ``rowlocal_register``, ``rowlocal_streaming``,
        ``kvsplit``, ``cluster``, ``staged``, or ``cpu``."""
        return "cpu" if self._native is None else self._native.family

    @property
    def workspace_bytes(self) -> int:
        """Device bytes of one workspace (one per stream the selector has run on)."""
        return 0 if self._native is None else self._native.workspace_bytes

    def __repr__(self) -> str:
        where = "cpu" if self.device == "cpu" else f"cuda:{self.index}"
        return (
            f"Selector(k={self.k}, max_rows={self.max_rows}, max_width={self.max_width}, "
            f"device={where!r}, family={self.family!r})"
        )

    def __call__(self, scores: Any, lengths: Any = None, *, out: Any = None, values: Any = None,
                 live_rows: Any = None, starts: Any = None, ends: Any = None, seq_lens: Any = None,
                 next_n: Optional[int] = None, offsets: Any = None, page_table: Any = None,
                 page_size: Optional[int] = None, prior: Any = None, boundary: Any = None,
                 page_rows: Any = None) -> Any:
        """Selects the rows of ``scores`` (``[rows <= max_rows, width <= max_width]`` of the
        selector's dtype) into ``out`` (int32 ``[>= rows, >= k]``, allocated when not given) and
        returns it, or ``(out, values)`` for a selector with ``values=True`` (``values``: an
        array of the scores' dtype at ``out``'s row stride, allocated when not given), with
        ``boundary`` last for one with ``boundary=True`` (float32 ``[>= rows]``, contiguous,
        allocated when not given; it may be ``prior``). A selector with ``prior=True`` takes
        ``prior`` (float32 ``[rows]``, NaN for a row without one) on every call.

        The arrays of the selector's interface: ``lengths`` (rows ``"lengths"``, optional),
        ``starts`` and ``ends`` (``"window"``), ``seq_lens`` with ``next_n`` (``"decode"``),
        ``offsets`` (``"offset"``), ``page_table`` with ``page_size`` (``"paged"``) and
        ``page_rows`` (``"paged_rows"``), as for :func:`topk.select`, on the selector's device
        as contiguous int32 (the page table ``[rows or 1, pages]``, or ``[any rows, pages]``
        with ``page_rows``, with column stride 1): a call converts nothing, so that it
        allocates nothing and can be captured. ``next_n`` and ``page_size`` are launch
        arguments: a captured graph replays the values it was captured with; the arrays are
        read on the device at each replay.

        ``live_rows``: a device int32 tensor whose first element is the live row count
        ``m <= rows``; rows from ``m`` on are not touched. Without it every row is live. A
        count outside ``[0, rows]`` is clamped and reported by :meth:`check`, as are bad
        lengths, windows, transforms (a ``page_rows`` entry outside the table's rows among
        them: that row is selected as empty) and NaN scores.
        """
        opts = self._options(values, starts, ends, seq_lens, next_n, offsets, page_table, page_size, lengths,
                             prior, boundary, page_rows)
        if self.device == "cpu":
            return self._call_cpu(scores, lengths, out, live_rows, opts)
        stream = None
        if _torch is not None and isinstance(scores, _torch.Tensor):
            if not scores.is_cuda:
                raise ValueError(f"scores are on {scores.device} but this selector is on cuda:{self.index}")
            stream = _torch_stream(scores.device.index)
        else:
            stream = _arrays.cupy_stream(scores) or 0
        sv = _arrays.view(scores, "scores", stream or None)
        if (sv.device, sv.index) != ("cuda", self.index):
            where = "cpu" if sv.device == "cpu" else f"cuda:{sv.index}"
            raise ValueError(f"scores are on {where} but this selector is on cuda:{self.index}")
        return self._launch(scores, sv, lengths, out, live_rows, opts, stream)

    def _options(self, values, starts, ends, seq_lens, next_n, offsets, page_table, page_size, lengths,
                 prior=None, boundary=None, page_rows=None) -> Options:
        """The call's arrays as `Options` of the selector's form; an array the form does not
        take, or one it needs and is missing, is an error naming it."""
        want_values, sorted_, deterministic, rows, transform, bins, want_boundary = self.io
        given = {"starts": starts, "ends": ends, "seq_lens": seq_lens, "next_n": next_n, "offsets": offsets,
                 "page_table": page_table, "page_size": page_size, "page_rows": page_rows}
        takes = {"window": ("starts", "ends"), "window_absolute": ("starts", "ends"),
                 "decode": ("seq_lens", "next_n")}.get(rows, ()) + {
            "offset": ("offsets",), "paged": ("page_table", "page_size"),
            "paged_rows": ("page_table", "page_size", "page_rows")}.get(transform, ())
        for name, x in given.items():
            if x is not None and name not in takes:
                raise TypeError(f"this selector was not planned for {name}= (make one with the "
                                "rows= / transform= that takes it)")
        for name in takes:
            if given[name] is None and name not in ("next_n", "page_size"):
                raise TypeError(f"this selector's interface needs {name}=")
        if lengths is not None and rows != "lengths":
            raise TypeError(f"this selector takes rows={rows.split('_')[0]!r}, not lengths")
        if values is not None and not want_values:
            raise TypeError("this selector was not planned for values=: make one with values=True")
        if prior is not None and bins == "none":
            raise TypeError("this selector was not planned for prior=: make one with prior=True")
        if prior is None and bins != "none":
            raise TypeError("this selector's interface needs prior= (float32 [rows], NaN for a row without one)")
        if boundary is not None and not want_boundary:
            raise TypeError("this selector was not planned for boundary=: make one with boundary=True")
        return Options(True if values is None and want_values else values if want_values else False,
                       sorted_, deterministic, starts, ends, rows != "window_absolute", seq_lens, next_n,
                       offsets, page_table, page_size, prior, None if bins == "none" else bins,
                       True if boundary is None and want_boundary else boundary if want_boundary else False,
                       page_rows)

    def _launch(self, scores, sv, lengths, out, live_rows, opts: Options, stream) -> Any:
        rows, width, pitch = _arrays.check_scores(sv)
        if sv.dtype != self.dtype:
            raise TypeError(
                f"this selector was planned for {_arrays.dtype_word(self.dtype)} scores, got "
                f"{_arrays.dtype_word(sv.dtype)}: convert them, or make a Selector with dtype= theirs"
            )
        self._check_capacity(rows, width)
        m = Marshal(sv, rows, stream or None, False, "a Selector")
        lengths_ptr = 0 if lengths is None else m.ints(lengths, "lengths", rows)
        live_ptr = 0
        if live_rows is not None:
            rv = _arrays.view(live_rows, "live_rows", stream or None)
            if rv.dtype != "i32" or len(rv.shape) < 1 or rv.shape[0] < 1:
                raise TypeError("live_rows must be a device int32 tensor holding the row count in its first element")
            _arrays.same_device(rv, sv, "live_rows")
            m.keep.append(rv)
            live_ptr = rv.ptr
        out, ov, values, vv, out_pitch = outputs(scores, sv, rows, self.k, out, opts.values, stream or None)
        boundary, boundary_ptr = boundary_output(scores, sv, rows, opts.boundary, stream or None)
        buffers = m.buffers(self.io, opts, 0 if vv is None else vv.ptr, boundary_ptr)
        got = result(out, values, boundary)
        if rows == 0:
            return got
        self._native.run(stream, sv.ptr, rows, width, pitch, lengths_ptr, live_ptr, ov.ptr, out_pitch, buffers)
        return got

    def _check_capacity(self, rows: int, width: int) -> None:
        if rows > self.max_rows:
            raise ValueError(
                f"{rows} rows exceed this selector's max_rows = {self.max_rows}: make a Selector "
                "with more rows"
            )
        if width > self.max_width:
            raise ValueError(
                f"width {width} exceeds this selector's max_width = {self.max_width}: make a "
                "Selector with wider rows"
            )

    def _call_cpu(self, scores, lengths, out, live_rows, opts: Options):
        sv = _arrays.view(scores, "scores")
        if sv.device != "cpu":
            raise ValueError("this selector is on the CPU: pass host arrays or make a CUDA Selector")
        rows, width, _ = _arrays.check_scores(sv)
        self._check_capacity(rows, width)
        live = rows
        if live_rows is not None:
            live = int(_np.asarray(live_rows.cpu() if hasattr(live_rows, "cpu") else live_rows).reshape(-1)[0])
            if not 0 <= live <= rows:
                raise ValueError(f"live row count {live} is outside [0, {rows}]")
        if out is None:
            if _torch is not None and isinstance(scores, _torch.Tensor):
                out = _torch.empty((rows, self.k), dtype=_torch.int32)
            else:
                out = _np.empty((rows, self.k), dtype=_np.int32)
        if live < rows:
            part = scores[:live]
            cut = lambda x: None if x is None else x[:live]  # noqa: E731
            o = opts
            values = o.values[:live] if o.values is not True and o.values is not False else o.values
            boundary = o.boundary[:live] if o.boundary is not True and o.boundary is not False else o.boundary
            seq_lens = o.seq_lens
            if seq_lens is not None:
                n = 1 if o.next_n is None else int(o.next_n)
                if live % n:
                    raise ValueError(f"a live row count of {live} splits a group of next_n = {n} decode rows")
                seq_lens = seq_lens[: live // n]
            # A table read through page_rows keeps all its rows: any of them may be named.
            table = o.page_table
            if table is not None and o.page_rows is None and len(table) != 1:
                table = table[:live]
            part_opts = Options(values, o.sorted, o.deterministic, cut(o.starts), cut(o.ends),
                                o.relative_to_start, seq_lens, o.next_n, cut(o.offsets), table, o.page_size,
                                cut(o.prior), o.prior_bins, boundary, cut(o.page_rows))
            got = host_select(part, _arrays.view(part, "scores"), self.k, cut(lengths), out[:live], part_opts)
            return out if not isinstance(got, tuple) else (out,) + got[1:]
        return host_select(scores, sv, self.k, lengths, out, opts)

    def check(self, scores: Any = None, lengths: Any = None, **arrays: Any) -> None:
        """Reads the status word of every stream this selector ran on (synchronizing those
        streams), clears it, and raises ``ValueError`` if any call since the last check saw a
        NaN score, a length or window outside ``[0, width]``, an index transform it could not
        make (a ``page_rows`` entry outside the table's rows among them), or a live row count
        outside ``[0, rows]``. Given the ``scores`` (and ``lengths``, or the interface's arrays
        as keywords: ``starts=``, ``offsets=``, ``page_rows=``, ...) of the call, the message
        names the offending row. Must not be called while a CUDA graph is being
        captured."""
        if self._native is None:
            return
        if _capturing():
            raise ValueError("Selector.check() synchronizes: call it after the capture, e.g. after a replay")
        bits = self._native.take_status()
        if not bits:
            return
        found = None
        if scores is not None and (self.dtype, self.io) != ("f32", PLAIN_IO):
            from ._cuda_call import status_error

            opts = Options(False, self.io[1], self.io[2], arrays.get("starts"), arrays.get("ends"),
                           self.io[3] != "window_absolute", arrays.get("seq_lens"), arrays.get("next_n"),
                           arrays.get("offsets"), arrays.get("page_table"), arrays.get("page_size"),
                           page_rows=arrays.get("page_rows"))
            raise status_error(bits, scores, self.k, lengths, opts)
        if scores is not None:
            sv = _arrays.view(scores, "scores")
            rows, width, pitch = _arrays.check_scores(sv)
            lengths_ptr = 0
            if lengths is not None:
                lv = _arrays.view(lengths, "lengths")
                if lv.dtype == "i32" and (rows <= 1 or lv.strides[0] == 1):
                    lengths_ptr = lv.ptr
            found = self._native.locate(sv.ptr, rows, width, pitch, lengths_ptr)
        raise _native.CudaSelector.status_error(bits, found)
