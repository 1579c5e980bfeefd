"""`topk.Selector`: a plan and its workspaces for fixed capacities (Rust `Plan` + `Workspace`)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as _np

from . import _arrays, _native, _nvrtc
from ._arrays import _torch, check_k
from ._call import PLAIN, gpu_refusal, host_select
from ._select import _capturing, _torch_stream


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
    """

    def __init__(self, k: int, max_rows: int, max_width: int, device: Any = "cuda") -> None:
        self.k = check_k(k)
        self.max_rows = _positive("max_rows", max_rows)
        self.max_width = _positive("max_width", max_width)
        self.device, self.index = _parse_device(device)
        self._native: Optional[Any] = None
        if self.device == "cuda":
            _nvrtc.preload()
            self._native = _native.CudaSelector(self.index, self.k, self.max_rows, self.max_width)

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

    def __call__(self, scores: Any, lengths: Any = None, *, out: Any = None, live_rows: Any = None) -> Any:
        """Selects the rows of ``scores`` (``[rows <= max_rows, width <= max_width]`` float32)
        into ``out`` (int32 ``[>= rows, >= k]``, allocated when not given) and returns it.

        ``live_rows``: a device int32 tensor whose first element is the live row count
        ``m <= rows``; rows from ``m`` on are not touched. Without it every row is live. A
        count outside ``[0, rows]`` is clamped and reported by :meth:`check`, as are bad
        lengths and NaN scores.
        """
        if self.device == "cpu":
            return self._call_cpu(scores, lengths, out, live_rows)
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
        rows, width, pitch = _arrays.check_scores(sv)
        if sv.dtype != "f32":
            raise gpu_refusal(sv.dtype, PLAIN, "topk.Selector")
        self._check_capacity(rows, width)
        keep = [sv]
        lengths_ptr = 0
        if lengths is not None:
            lv = _arrays.view(lengths, "lengths", stream or None)
            _arrays.check_lengths(lv, rows, sv)
            if lv.dtype != "i32" or (rows > 1 and lv.strides[0] != 1):
                raise TypeError(
                    "a Selector takes contiguous int32 lengths (it allocates nothing per call): "
                    "convert them once outside the captured region"
                )
            keep.append(lv)
            lengths_ptr = lv.ptr
        live_ptr = 0
        if live_rows is not None:
            rv = _arrays.view(live_rows, "live_rows", stream or None)
            if rv.dtype != "i32" or len(rv.shape) < 1 or rv.shape[0] < 1:
                raise TypeError("live_rows must be a device int32 tensor holding the row count in its first element")
            _arrays.same_device(rv, sv, "live_rows")
            keep.append(rv)
            live_ptr = rv.ptr
        if out is None:
            if _torch is not None and isinstance(scores, _torch.Tensor):
                out = _torch.empty((rows, self.k), dtype=_torch.int32, device=scores.device)
            else:
                from ._select import _device_out

                out = _device_out(scores, rows, self.k, self.index)
        ov = _arrays.view(out, "out", stream or None)
        out_pitch = _arrays.check_out(ov, rows, self.k, sv)
        keep.append(ov)
        if rows == 0:
            return out
        self._native.run(stream, sv.ptr, rows, width, pitch, lengths_ptr, live_ptr, ov.ptr, out_pitch)
        return out

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

    def _call_cpu(self, scores, lengths, out, live_rows):
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
            host_select(part, _arrays.view(part, "scores"), self.k, None if lengths is None else lengths[:live], out[:live], PLAIN)
            return out
        return host_select(scores, sv, self.k, lengths, out, PLAIN)

    def check(self, scores: Any = None, lengths: Any = None) -> None:
        """Reads the status word of every stream this selector ran on (synchronizing those
        streams), clears it, and raises ``ValueError`` if any call since the last check saw a
        NaN score, a length outside ``[0, width]`` or a live row count outside ``[0, rows]``.
        Given the ``scores`` (and ``lengths``) of the call, the message names the offending
        row. Must not be called while a CUDA graph is being captured."""
        if self._native is None:
            return
        if _capturing():
            raise ValueError("Selector.check() synchronizes: call it after the capture, e.g. after a replay")
        bits = self._native.take_status()
        if not bits:
            return
        found = None
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
