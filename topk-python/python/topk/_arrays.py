"""Reading what callers pass: PyTorch tensors, NumPy arrays and any DLPack producer.

Each input becomes a `_View` (pointer, shape and strides in elements, dtype, device) after the
checks the operator contract needs; the error messages say what to change.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple, Optional, Tuple

from . import _native

try:  # PyTorch is optional.
    import torch as _torch
except ImportError:  # pragma: no cover - exercised where torch is missing
    _torch = None

import numpy as _np

_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = _native.dlpack_device_types()
MAX_K: int = _native.MAX_K

_NUMPY_DTYPES = {
    _np.dtype(_np.float32): "f32",
    _np.dtype(_np.float16): "f16",
    _np.dtype(_np.int32): "i32",
    _np.dtype(_np.int64): "i64",
}
_DTYPE_WORDS = {
    "f32": "float32",
    "f16": "float16",
    "bf16": "bfloat16",
    "f64": "float64",
    "i32": "int32",
    "i64": "int64",
}
# Score dtypes of the CPU backend; on the GPU, those `Spec::gpu_unsupported` does not name.
SCORE_DTYPES = ("f32", "f16", "bf16")


class _View(NamedTuple):
    ptr: int
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]  # in elements
    dtype: str  # "f32", "f16", "bf16", "i32", "i64" or another name
    device: str  # "cpu" or "cuda"
    index: int  # device ordinal (0 on the CPU)
    writable: bool
    keep: Any  # what must stay alive while `ptr` is used (a DLPack capsule, an array)


_TORCH_DTYPES = (
    {}
    if _torch is None
    else {
        _torch.float32: "f32",
        _torch.float16: "f16",
        _torch.bfloat16: "bf16",
        _torch.int32: "i32",
        _torch.int64: "i64",
    }
)


def torch_dtype_name(dtype: Any) -> str:
    return _TORCH_DTYPES.get(dtype) or str(dtype).replace("torch.", "")


def dtype_word(name: str) -> str:
    return _DTYPE_WORDS.get(name, name)


def is_tensor(x: Any) -> bool:
    return _torch is not None and isinstance(x, _torch.Tensor)


def cupy_stream(x: Any) -> Optional[int]:
    """CuPy's current stream pointer when `x` is a CuPy array, else None."""
    if type(x).__module__.startswith("cupy"):
        cupy = sys.modules.get("cupy")
        if cupy is not None:
            return int(cupy.cuda.get_current_stream().ptr)
    return None


def view(x: Any, name: str, stream: Optional[int] = None) -> _View:
    """Describes `x` (a tensor, an array or a DLPack producer). `stream` is the CUDA stream the
    caller will use, passed to `__dlpack__` so the producer orders its work before it."""
    if is_tensor(x):
        dev = x.device
        if dev.type not in ("cpu", "cuda"):
            raise TypeError(f"{name} is on device {dev}: topk runs on CUDA devices and the CPU")
        return _View(
            x.data_ptr(),
            tuple(x.shape),
            tuple(x.stride()),
            torch_dtype_name(x.dtype),
            dev.type,
            dev.index or 0,
            True,
            x,
        )
    if isinstance(x, _np.ndarray):
        dtype = _NUMPY_DTYPES.get(x.dtype)
        if dtype is None and x.dtype.name == "bfloat16" and x.dtype.itemsize == 2:
            dtype = "bf16"  # ml_dtypes' bfloat16 (JAX's NumPy arrays)
        if dtype is None:
            if x.dtype.byteorder not in ("=", "|") and x.dtype.newbyteorder("=") in _NUMPY_DTYPES:
                raise TypeError(f"{name} has non-native byte order: convert with .astype({x.dtype.newbyteorder('=')})")
            dtype = str(x.dtype)
        item = x.itemsize
        if any(s % item for s in x.strides):
            raise ValueError(f"{name} has strides {x.strides} that are not whole elements: copy it with numpy.ascontiguousarray")
        ptr, read_only = x.__array_interface__["data"]
        return _View(
            ptr,
            tuple(x.shape),
            tuple(s // item for s in x.strides),
            dtype,
            "cpu",
            0,
            not read_only,
            x,
        )
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        dev_type, dev_id = x.__dlpack_device__()
        dev_type = int(dev_type)
        if dev_type == _DL_CUDA:
            capsule = x.__dlpack__(stream=1 if not stream else stream)
        elif dev_type in (_DL_CPU, _DL_CUDA_HOST):
            capsule = x.__dlpack__()
        else:
            raise TypeError(
                f"{name} lives on DLPack device type {dev_type}: topk takes CUDA device memory "
                "and host memory"
            )
        ptr, shape, strides, dtype, dtype_dev, dtype_id, read_only = _native.dlpack_describe(capsule)
        device = "cuda" if dtype_dev == _DL_CUDA else "cpu"
        return _View(ptr, tuple(shape), tuple(strides), dtype, device, int(dtype_id), not read_only, capsule)
    raise TypeError(
        f"{name} must be a PyTorch tensor, a NumPy array or a DLPack producer "
        f"(__dlpack__), got {type(x).__name__}"
    )


def check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        try:
            k = int(k.__index__())  # NumPy and torch integer scalars
        except AttributeError:
            raise TypeError(f"k must be an int, got {type(k).__name__}") from None
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k = {k} is out of range: K must be in 1..={MAX_K}")
    return k


def check_scores(v: _View) -> Tuple[int, int, int]:
    """(rows, width, row pitch) of a score matrix view (float32, float16 or bfloat16)."""
    if v.dtype not in SCORE_DTYPES:
        raise TypeError(
            f"scores must be float32 (or float16 / bfloat16 on the CPU), got "
            f"{dtype_word(v.dtype)}: convert them first (torch: scores.float(), NumPy: "
            "scores.astype(numpy.float32))"
        )
    if len(v.shape) != 2:
        raise ValueError(f"scores must be 2-D [rows, width], got shape {list(v.shape)}: reshape to one row per query")
    rows, width = v.shape
    if rows == 0 or width == 0:
        return rows, width, width
    s0, s1 = v.strides
    if width > 1 and s1 != 1:
        raise ValueError(
            f"scores need column stride 1, got strides {list(v.strides)}: make the rows "
            "contiguous (torch: .contiguous(), NumPy: numpy.ascontiguousarray)"
        )
    pitch = s0 if rows > 1 else max(s0, width)
    if rows > 1 and s0 < width:
        raise ValueError(
            f"scores need a row stride of at least the width {width}, got {s0}: rows must not overlap"
        )
    return rows, width, pitch


def check_ints(v: _View, name: str, scores: _View, rows: Optional[int] = None) -> int:
    """The element stride of a 1-D int32 or int64 view on the scores' device, of shape
    ``[rows]`` when ``rows`` is given (one per row of scores)."""
    if v.dtype not in ("i32", "i64"):
        raise TypeError(f"{name} must be int32 or int64, got {dtype_word(v.dtype)}")
    if rows is not None and (len(v.shape) != 1 or v.shape[0] != rows):
        raise ValueError(f"{name} must have shape [{rows}] (one per row of scores), got {list(v.shape)}")
    if len(v.shape) != 1:
        raise ValueError(f"{name} must be 1-D, got shape {list(v.shape)}")
    same_device(v, scores, name)
    return v.strides[0] if v.shape[0] > 1 else 1


def check_lengths(v: _View, rows: int, scores: _View) -> int:
    """The element stride of a lengths view (int32 or int64, [rows]) on the scores' device."""
    return check_ints(v, "lengths", scores, rows)


def check_floats(v: _View, name: str, scores: _View, rows: int) -> int:
    """The element stride of a float32 ``[rows]`` view on the scores' device (a prior)."""
    if v.dtype != "f32":
        raise TypeError(
            f"{name} must be float32 (one per row, NaN for a row without one), got "
            f"{dtype_word(v.dtype)}: convert it first (torch: {name}.float(), NumPy: "
            f"{name}.astype(numpy.float32))"
        )
    if len(v.shape) != 1 or v.shape[0] != rows:
        raise ValueError(f"{name} must have shape [{rows}] (one per row of scores), got {list(v.shape)}")
    same_device(v, scores, name)
    return v.strides[0] if v.shape[0] > 1 else 1


def check_boundary(v: _View, rows: int, scores: _View) -> None:
    """A boundary output: float32 ``[>= rows]``, contiguous, writable, on the scores' device."""
    if v.dtype != "f32":
        raise TypeError(f"boundary must be float32, got {dtype_word(v.dtype)}: allocate it with dtype float32")
    if len(v.shape) != 1 or v.shape[0] < rows:
        raise ValueError(
            f"boundary must be 1-D with at least {rows} elements (one per row), got shape "
            f"{list(v.shape)}: allocate a larger output"
        )
    if not v.writable:
        raise ValueError("boundary is read-only: pass a writable array")
    same_device(v, scores, "boundary")
    if rows > 1 and v.strides[0] != 1:
        raise ValueError(f"boundary needs stride 1, got {v.strides[0]}: pass a contiguous array")


def check_out(v: _View, rows: int, k: int, scores: _View, name: str = "out", dtype: str = "i32") -> int:
    """The row pitch of an output view ``[>= rows, >= k]`` of ``dtype`` (int32 indices, or
    values in the scores' dtype)."""
    if v.dtype != dtype:
        raise TypeError(
            f"{name} must be {dtype_word(dtype)}, got {dtype_word(v.dtype)}: allocate it with "
            f"dtype {dtype_word(dtype)}"
        )
    if len(v.shape) != 2 or v.shape[0] < rows or v.shape[1] < k:
        raise ValueError(
            f"{name} must be at least [{rows}, {k}] ([rows, k]), got shape {list(v.shape)}: "
            "allocate a larger output"
        )
    if not v.writable:
        raise ValueError(f"{name} is read-only: pass a writable array")
    same_device(v, scores, name)
    if rows == 0:
        return k
    s0, s1 = v.strides
    if k > 1 and s1 != 1:
        raise ValueError(f"{name} needs column stride 1, got strides {list(v.strides)}")
    pitch = s0 if rows > 1 else max(s0, k)
    if rows > 1 and s0 < k:
        raise ValueError(f"{name} needs a row stride of at least k = {k}, got {s0}")
    return pitch


def same_device(v: _View, scores: _View, name: str) -> None:
    if (v.device, v.index) != (scores.device, scores.index):
        where = lambda x: "cpu" if x.device == "cpu" else f"cuda:{x.index}"  # noqa: E731
        raise ValueError(
            f"{name} is on {where(v)} but scores are on {where(scores)}: put every input on one device"
        )
