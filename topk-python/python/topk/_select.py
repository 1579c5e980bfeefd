"""`topk.select`: one call, any input kind, the operator contract of the README."""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional

import numpy as _np

from . import _arrays, _native, _nvrtc
from ._arrays import _torch, check_k

# Options of the operator that the kernels do not provide yet; accepted only to say so.
_NOT_YET = {
    "values": "returning the selected values (take them with a gather of the indices)",
    "return_values": "returning the selected values (take them with a gather of the indices)",
    "sorted": "sorted output (the order inside a row is unspecified)",
    "deterministic": "deterministic tie-breaking (ties at rank K are broken any way)",
    "starts": "row windows (slice the scores: a view with an offset works without a copy)",
    "row_starts": "row windows (slice the scores: a view with an offset works without a copy)",
    "offsets": "index offsets (add them to the indices; topk.compat does so for its entry points)",
    "page_table": "page-table index transforms (topk.compat gathers through the table)",
    "page_size": "page-table index transforms (topk.compat gathers through the table)",
    "largest": "selecting the smallest scores (negate the scores)",
}


def reject_options(options: Dict[str, Any], where: str) -> None:
    for name in options:
        if name in _NOT_YET:
            raise NotImplementedError(
                f"{where}({name}=...) is not implemented: the kernels do not support "
                f"{_NOT_YET[name]} yet"
            )
    raise TypeError(f"{where}() got an unexpected keyword argument {next(iter(options))!r}")


def _compiling() -> bool:
    compiler = getattr(_torch, "compiler", None)
    is_compiling = getattr(compiler, "is_compiling", None)
    return bool(is_compiling and is_compiling())


def _capturing() -> bool:
    return bool(_torch is not None and _torch.cuda.is_current_stream_capturing())


_raw_stream = None


def _torch_stream(index: int) -> int:
    global _raw_stream
    if _raw_stream is None:
        fast = getattr(_torch._C, "_cuda_getCurrentRawStream", None)
        _raw_stream = fast if fast is not None else (lambda i: _torch.cuda.current_stream(i).cuda_stream)
    return _raw_stream(index)


def _torch_cuda(scores, k: int, lengths, out, check: bool):
    """The eager CUDA path on torch tensors: checks, then one launch on the current stream."""
    if scores.dtype is not _torch.float32:
        raise TypeError(
            f"scores must be float32, got {str(scores.dtype).replace('torch.', '')}: convert "
            "them with scores.float()"
        )
    if scores.dim() != 2:
        raise ValueError(f"scores must be 2-D [rows, width], got shape {list(scores.shape)}")
    rows, width = scores.shape
    s0, s1 = scores.stride()
    if rows == 0 or width == 0:
        s0, s1 = width, 1
    if width > 1 and s1 != 1:
        raise ValueError(
            f"scores need column stride 1, got strides {[s0, s1]}: use scores.contiguous()"
        )
    if rows > 1 and s0 < width:
        raise ValueError(f"scores need a row stride of at least the width {width}, got {s0}")
    pitch = s0 if rows > 1 else max(s0, width)
    dev = scores.device
    lengths_ptr = 0
    if lengths is not None:
        if not isinstance(lengths, _torch.Tensor):
            raise TypeError("lengths must be a torch tensor on the scores' device when scores are one")
        if lengths.device != dev:
            raise ValueError(
                f"lengths is on {lengths.device} but scores are on {dev}: move it with "
                "lengths.to(scores.device)"
            )
        if lengths.dtype is not _torch.int32:
            if lengths.dtype is not _torch.int64:
                raise TypeError(
                    f"lengths must be int32 or int64, got {str(lengths.dtype).replace('torch.', '')}"
                )
            lengths = lengths.to(_torch.int32)
        if lengths.dim() != 1 or lengths.shape[0] != rows:
            raise ValueError(
                f"lengths must have shape [{rows}] (one per row of scores), got {list(lengths.shape)}"
            )
        if rows > 1 and lengths.stride(0) != 1:
            lengths = lengths.contiguous()
        lengths_ptr = lengths.data_ptr()
    if out is None:
        out = _torch.empty((rows, k), dtype=_torch.int32, device=dev)
        out_pitch = k
    else:
        out_pitch = _torch_out(out, rows, k, dev)
    if rows == 0:
        return out
    if width == 0:
        out[:rows, :k].fill_(-1)
        return out
    if check and _capturing():
        raise ValueError(
            "check=True reads the status word back, which a CUDA graph capture does not allow: "
            "use topk.Selector and call its check() after replaying"
        )
    _nvrtc.preload()
    _native.cuda_select(
        dev.index,
        _torch_stream(dev.index),
        scores.data_ptr(),
        rows,
        width,
        pitch,
        lengths_ptr,
        out.data_ptr(),
        out_pitch,
        k,
        check,
    )
    return out


def _torch_out(out, rows: int, k: int, dev) -> int:
    if not isinstance(out, _torch.Tensor):
        raise TypeError("out must be a torch tensor when scores are one")
    if out.dtype is not _torch.int32:
        raise TypeError(
            f"out must be int32, got {str(out.dtype).replace('torch.', '')}: allocate it with "
            "dtype=torch.int32"
        )
    if out.device != dev:
        raise ValueError(f"out is on {out.device} but scores are on {dev}: allocate it on {dev}")
    if out.dim() != 2 or out.shape[0] < rows or out.shape[1] < k:
        raise ValueError(
            f"out must be at least [{rows}, {k}] ([rows, k]), got shape {list(out.shape)}: "
            "allocate a larger output"
        )
    o0, o1 = out.stride()
    if rows == 0:
        return k
    if k > 1 and o1 != 1:
        raise ValueError(f"out needs column stride 1, got strides {[o0, o1]}")
    if rows > 1 and o0 < k:
        raise ValueError(f"out needs a row stride of at least k = {k}, got {o0}")
    return o0 if rows > 1 else max(o0, k)


def _host(scores_v, k: int, lengths, out, make_out):
    """The CPU backend on host memory (NumPy arrays, CPU tensors, DLPack producers)."""
    rows, width, pitch = _arrays.check_scores(scores_v)
    lengths_v, bits, lstride = None, 0, 1
    if lengths is not None:
        lengths_v = _arrays.view(lengths, "lengths")
        lstride = _arrays.check_lengths(lengths_v, rows, scores_v)
        bits = 32 if lengths_v.dtype == "i32" else 64
    if out is None:
        out = make_out(rows, k)
    out_v = _arrays.view(out, "out")
    out_pitch = _arrays.check_out(out_v, rows, k, scores_v)
    if rows:
        _native.cpu_select(
            scores_v.ptr,
            rows,
            width,
            pitch,
            lengths_v.ptr if lengths_v is not None else 0,
            bits,
            lstride,
            out_v.ptr,
            out_pitch,
            k,
        )
    return out


def _device_out(scores, rows: int, k: int, index: int):
    """An output for a non-torch CUDA producer: the producer's own array type where known."""
    if type(scores).__module__.startswith("cupy"):
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(index):
            return cupy.empty((rows, k), dtype=cupy.int32)
    if _torch is not None:
        return _torch.empty((rows, k), dtype=_torch.int32, device=f"cuda:{index}")
    raise TypeError("pass out= (an int32 [rows, k] CUDA array): topk cannot allocate one for this producer")


def _dlpack_cuda(scores, scores_v, k: int, lengths, out, check: bool, stream: int):
    rows, width, pitch = _arrays.check_scores(scores_v)
    keep = []
    lengths_ptr = 0
    if lengths is not None:
        lv = _arrays.view(lengths, "lengths", stream)
        _arrays.check_lengths(lv, rows, scores_v)
        if lv.dtype == "i64" or (rows > 1 and lv.strides[0] != 1):
            if not hasattr(lengths, "astype"):
                raise TypeError("lengths on the GPU must be contiguous int32: convert them first")
            lengths = lengths.astype("int32")
            if rows > 1 and _arrays.view(lengths, "lengths", stream).strides[0] != 1:
                raise ValueError("lengths on the GPU must be contiguous: copy them first")
            lv = _arrays.view(lengths, "lengths", stream)
        keep.append((lengths, lv))
        lengths_ptr = lv.ptr
    if out is None:
        out = _device_out(scores, rows, k, scores_v.index)
    ov = _arrays.view(out, "out", stream)
    out_pitch = _arrays.check_out(ov, rows, k, scores_v)
    if rows and not width:
        out[:rows, :k] = -1
    elif rows:
        _nvrtc.preload()
        _native.cuda_select(
            scores_v.index, stream, scores_v.ptr, rows, width, pitch, lengths_ptr, ov.ptr,
            out_pitch, k, check,
        )
    del keep
    return out


def select(scores: Any, k: int, lengths: Any = None, *, out: Any = None, check: bool = False, **options: Any) -> Any:
    """Indices of the ``k`` largest valid scores of every row: int32 ``[rows, k]``, -1 padded.

    Row ``i`` selects among ``scores[i, :lengths[i]]`` (every row is full without ``lengths``).
    A row longer than ``k`` gets ``k`` distinct indices, in no particular order, of scores no
    smaller than any score left out (ties at rank ``k`` are broken any way); a row of ``L <= k``
    valid scores gets ``0, 1, ..., L - 1`` and then ``-1``. ``+-inf`` and subnormals order
    numerically and ``-0.0 == +0.0``; NaN among the valid scores is outside the contract.

    Args:
        scores: float32 ``[rows, width]``, column stride 1, row stride at least ``width`` (a
            view into a wider buffer is used in place): a PyTorch tensor (CUDA or CPU), a NumPy
            array, or any DLPack producer (CuPy, JAX, ...).
        k: 1 to 16384.
        lengths: int32 or int64 ``[rows]`` on the scores' device, each in ``[0, width]``.
        out: int32 ``[>= rows, >= k]`` on the scores' device, column stride 1; rows
            ``0..rows`` and columns ``0..k`` are written. Allocated when not given.
        check: on a GPU, synchronize and raise ``ValueError`` naming the offending row when the
            kernels reported NaN scores or bad lengths (the CPU always checks).

    Returns:
        ``out``: a tensor on the scores' device for PyTorch inputs, a NumPy array for host
        inputs, the producer's array type for CuPy.

    On a CUDA tensor the generated kernels run on the tensor's device and on
    ``torch.cuda.current_stream()``: no host synchronization, no read-back and, once the plan
    for the call's shape class exists, no device allocation besides ``out`` (pass ``out=`` to
    avoid that one). Such a call can be captured in a CUDA graph and runs under
    ``torch.compile(fullgraph=True)`` (as ``torch.ops.topk.select``). On the CPU it runs the
    CPU backend. Options the kernels lack yet (``values``, ``sorted``, ``deterministic``,
    ``starts``, ``offsets``, ``page_table``, ...) raise ``NotImplementedError``.
    """
    if options:
        reject_options(options, "topk.select")
    if _torch is not None and isinstance(scores, _torch.Tensor):
        k = check_k(k)
        if _compiling():
            if check:
                raise ValueError("check=True is not available under torch.compile: use topk.Selector.check()")
            if out is None:
                return _torch.ops.topk.select(scores, k, lengths)
            _torch.ops.topk.select_out(scores, k, lengths, out)
            return out
        if scores.is_cuda:
            return _torch_cuda(scores, k, lengths, out, check)
        scores_v = _arrays.view(scores, "scores")
        if scores_v.device != "cpu":
            raise TypeError(f"scores are on {scores.device}: topk runs on CUDA devices and the CPU")
        return _host(scores_v, k, lengths, out, lambda r, kk: _torch.empty((r, kk), dtype=_torch.int32))
    k = check_k(k)
    stream = _arrays.cupy_stream(scores)
    scores_v = _arrays.view(scores, "scores", stream)
    if scores_v.device == "cuda":
        return _dlpack_cuda(scores, scores_v, k, lengths, out, check, stream or 0)
    return _host(scores_v, k, lengths, out, lambda r, kk: _np.empty((r, kk), dtype=_np.int32))


def cuda_status(device: int = 0) -> Optional[str]:
    """None when device ``device`` can run the kernels; otherwise why not (driver, device,
    NVRTC, ...). Opens the device."""
    _nvrtc.preload()
    ok, why = _native.cuda_status(device)
    return None if ok else why
