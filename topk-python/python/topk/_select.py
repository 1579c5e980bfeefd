"""`topk.select`: one call, any input kind, the operator contract of the README and, on the
CPU, the call interface of ``docs/interface.md``.

The eager CUDA path on torch tensors is kept short on purpose: it runs on every step of a
serving loop, so it reads each tensor attribute once, compares dtypes by identity and device
ordinals as ints, and takes the slow path (conversions, messages) only when a check fails.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Optional

from . import _arrays, _cuda_call, _native, _nvrtc
from ._arrays import MAX_K, _torch, check_k
from ._call import PLAIN, Options, form, host_select, result

# Keyword arguments that mean something elsewhere, with what to do here instead.
_HINTS = {
    "largest": (NotImplementedError, "selecting the smallest scores is not implemented: negate the scores"),
    "return_values": (TypeError, "pass values=True"),
    "row_starts": (TypeError, "pass starts= and ends="),
    "row_ends": (TypeError, "pass starts= and ends="),
}


def reject_options(options: Dict[str, Any], where: str) -> None:
    for name in options:
        if name in _HINTS:
            error, what = _HINTS[name]
            raise error(f"{where}() got the keyword argument {name!r}: {what}")
    raise TypeError(f"{where}() got an unexpected keyword argument {next(iter(options))!r}")


if _torch is not None:
    _Tensor = _torch.Tensor
    _F32, _I32, _I64 = _torch.float32, _torch.int32, _torch.int64
    _is_compiling = getattr(getattr(_torch, "compiler", None), "is_compiling", None) or (lambda: False)
    _raw_stream = getattr(_torch._C, "_cuda_getCurrentRawStream", None) or (
        lambda i: _torch.cuda.current_stream(i).cuda_stream
    )
else:  # pragma: no cover - exercised where torch is missing
    _Tensor = ()
    _is_compiling = lambda: False  # noqa: E731


def _compiling() -> bool:
    return bool(_is_compiling())


def _capturing() -> bool:
    return bool(_torch is not None and _torch.cuda.is_current_stream_capturing())


def _torch_stream(index: int) -> int:
    return _raw_stream(index)


def _torch_cuda(scores, k: int, lengths, out, check: bool):
    """The eager CUDA path on torch tensors: checks, then the plan's launch on the current
    stream (nothing else is enqueued for contiguous int32 lengths and a given `out`)."""
    if scores.dtype is not _F32:
        return _torch_cuda_other_dtype(scores, k, lengths, out, check)
    shape = scores.shape
    if len(shape) != 2:
        raise ValueError(f"scores must be 2-D [rows, width], got shape {list(shape)}")
    rows, width = shape
    pitch, s1 = scores.stride()
    index = scores.get_device()
    if (s1 != 1 and width > 1) or pitch < width:
        if not rows or not width:  # an empty tensor's strides say nothing
            pitch = width
        elif s1 != 1 and width > 1:
            raise ValueError(f"scores need column stride 1, got strides {[pitch, s1]}: use scores.contiguous()")
        elif rows > 1:
            raise ValueError(f"scores need a row stride of at least the width {width}, got {pitch}")
        else:
            pitch = width
    lengths_ptr = 0
    if lengths is not None:
        if (
            lengths.__class__ is not _Tensor
            or lengths.dtype is not _I32
            or lengths.get_device() != index
            or lengths.shape != (rows,)
            or not lengths.is_contiguous()
        ):
            lengths = _torch_lengths(lengths, rows, scores)
        lengths_ptr = lengths.data_ptr()
    if out is None:
        out = scores.new_empty((rows, k), dtype=_I32)
        out_pitch = k
    else:
        out_pitch = _torch_out(out, rows, k, index)
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
        index, _raw_stream(index), scores.data_ptr(), rows, width, pitch, lengths_ptr,
        out.data_ptr(), out_pitch, k, check,
    )
    return out


def _torch_cuda_other_dtype(scores, k: int, lengths, out, check: bool):
    """16-bit scores take the call-interface path (which raises what the kernels do not
    generate yet); other dtypes are refused."""
    name = _arrays.torch_dtype_name(scores.dtype)
    if name in _arrays.SCORE_DTYPES:
        return _torch_cuda_call(scores, k, lengths, out, PLAIN, check)
    raise TypeError(
        f"scores must be float32 (or float16 / bfloat16), got {_arrays.dtype_word(name)}: convert "
        "them with scores.float()"
    )


def _torch_cuda_call(scores, k: int, lengths, out, opts: Options, check: bool):
    """The call interface on a CUDA tensor: the fused kernels on the current stream."""
    index = scores.get_device()
    stream = _raw_stream(index)
    return _cuda_call.select_call(scores, _arrays.view(scores, "scores"), k, lengths, out, opts, check, stream)


def _torch_lengths(lengths, rows: int, scores):
    """Lengths that are not contiguous int32 on the scores' device: checked, then converted
    (one more kernel on the stream for int64 or strided lengths)."""
    if not isinstance(lengths, _Tensor):
        raise TypeError("lengths must be a torch tensor on the scores' device when scores are one")
    if lengths.device != scores.device:
        raise ValueError(
            f"lengths is on {lengths.device} but scores are on {scores.device}: move it with "
            "lengths.to(scores.device)"
        )
    if lengths.dtype is not _I32 and lengths.dtype is not _I64:
        raise TypeError(f"lengths must be int32 or int64, got {str(lengths.dtype).replace('torch.', '')}")
    if lengths.dim() != 1 or lengths.shape[0] != rows:
        raise ValueError(f"lengths must have shape [{rows}] (one per row of scores), got {list(lengths.shape)}")
    return lengths.to(_I32).contiguous()


def _torch_out(out, rows: int, k: int, index: int) -> int:
    """The row pitch of a torch `out` on device `index` (checked)."""
    if out.__class__ is not _Tensor and not isinstance(out, _Tensor):
        raise TypeError("out must be a torch tensor when scores are one")
    if out.dtype is not _I32:
        raise TypeError(
            f"out must be int32, got {str(out.dtype).replace('torch.', '')}: allocate it with "
            "dtype=torch.int32"
        )
    if out.get_device() != index:
        raise ValueError(f"out is on {out.device} but scores are on cuda:{index}: allocate it on cuda:{index}")
    shape = out.shape
    if len(shape) != 2 or shape[0] < rows or shape[1] < k:
        raise ValueError(
            f"out must be at least [{rows}, {k}] ([rows, k]), got shape {list(shape)}: "
            "allocate a larger output"
        )
    o0, o1 = out.stride()
    if rows == 0:
        return k
    if k > 1 and o1 != 1:
        raise ValueError(f"out needs column stride 1, got strides {[o0, o1]}")
    if o0 < k:
        if rows > 1:
            raise ValueError(f"out needs a row stride of at least k = {k}, got {o0}")
        return k
    return o0


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
    if scores_v.dtype != "f32":
        return _cuda_call.select_call(scores, scores_v, k, lengths, out, PLAIN, check, stream)
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


def _host_tensor(scores, k: int, lengths, out, opts: Options):
    scores_v = _arrays.view(scores, "scores")
    if scores_v.device != "cpu":
        raise TypeError(f"scores are on {scores.device}: topk runs on CUDA devices and the CPU")
    return host_select(scores, scores_v, k, lengths, out, opts)


def _compiled_call(scores, k: int, lengths, out, opts: Options, check: bool):
    """Under torch.compile: the registered op of the call interface (given outputs are
    filled from its results)."""
    if check:
        raise ValueError("check=True is not available under torch.compile: use topk.Selector.check()")
    io = form(opts, lengths, check_bins=False)
    o = opts
    args = (
        scores, k, lengths, o.starts, o.ends, o.seq_lens, o.offsets, o.page_table, io[0],
        io[1], io[2], o.relative_to_start is True, 1 if o.next_n is None else int(o.next_n),
        1 if o.page_size is None else int(o.page_size), o.prior, "" if o.prior is None else io[5],
        o.page_rows,
    )
    bound = None
    if io[6]:
        idx, vals, bound = _torch.ops.topk.select_call_boundary(*args)
    else:
        idx, vals = _torch.ops.topk.select_call(*args)
    if out is not None:
        out[: idx.shape[0], :k].copy_(idx)
        idx = out
    if not io[0]:
        vals = None
    elif o.values is not True:
        o.values[: vals.shape[0], :k].copy_(vals)
        vals = o.values
    if bound is not None and o.boundary is not True:
        o.boundary[: bound.shape[0]].copy_(bound)
        bound = o.boundary
    return result(idx, vals, bound)


def _on_cuda(scores: Any) -> bool:
    """Whether a non-torch input lives in CUDA device memory (asked without exporting it)."""
    device = getattr(scores, "__dlpack_device__", None)
    if device is None:
        return False
    try:
        return int(device()[0]) == _arrays._DL_CUDA
    except Exception:  # an odd producer: view() reports it
        return False


def select(
    scores: Any,
    k: int,
    lengths: Any = None,
    *,
    out: Any = None,
    values: Any = False,
    sorted: bool = False,  # noqa: A002
    deterministic: bool = False,
    starts: Any = None,
    ends: Any = None,
    relative_to_start: bool = True,
    seq_lens: Any = None,
    next_n: Optional[int] = None,
    offsets: Any = None,
    page_table: Any = None,
    page_size: Optional[int] = None,
    page_rows: Any = None,
    prior: Any = None,
    prior_bins: Any = None,
    boundary: Any = False,
    check: bool = False,
    **options: Any,
) -> Any:
    """Indices of the ``k`` largest valid scores of every row: int32 ``[rows, k]``, -1 padded.

    Row ``i`` selects among ``scores[i, :lengths[i]]`` (every row is full without ``lengths``).
    A row longer than ``k`` gets ``k`` distinct indices, in no particular order, of scores no
    smaller than any score left out (ties at rank ``k`` are broken any way); a row of ``L <= k``
    valid scores gets ``0, 1, ..., L - 1`` and then ``-1``. ``+-inf`` and subnormals order
    numerically and ``-0.0 == +0.0``; NaN among the valid scores is outside the contract.

    Args:
        scores: ``[rows, width]``, column stride 1, row stride at least ``width`` (a view into
            a wider buffer is used in place): a PyTorch tensor (CUDA or CPU), a NumPy array,
            or any DLPack producer (CuPy, JAX, ...). float32; float16 and bfloat16 on the CPU
            (on CUDA once the kernels generate them: until then ``NotImplementedError`` says so).
        k: 1 to 16384.
        lengths: int32 or int64 ``[rows]`` on the scores' device, each in ``[0, width]``.
        out: int32 ``[>= rows, >= k]`` on the scores' device, column stride 1; rows
            ``0..rows`` and columns ``0..k`` are written. Allocated when not given.
        check: on a GPU, synchronize and raise ``ValueError`` naming the offending row when the
            kernels reported NaN scores or bad lengths (the CPU always checks).

    The call interface (``docs/interface.md``), fused into the selection on CUDA inputs (the
    arrays are read on the device: no copy, no synchronization, graph-capturable) and on the
    CPU:

    Args:
        values: ``True`` to also return the selected scores, ``[rows, k]`` in the scores'
            dtype, bit for bit, ``-inf`` beside ``-1``; or an array ``[>= rows, >= k]`` of that
            dtype to write them into. The call then returns ``(indices, values)``.
        sorted: each row descending by value (the ``-1`` padding last).
        deterministic: among the scores equal to the K-th largest, the lowest positions win,
            so a row's index set is a function of the scores alone; with ``sorted`` as well the
            output bytes are (equal values in ascending position order).
        starts, ends: row windows instead of ``lengths``: int32 / int64 ``[rows]``; row ``i``
            selects among ``scores[i, starts[i]:ends[i]]`` (``0 <= start <= end <= width``).
        relative_to_start: with windows, write indices relative to the window's start (as
            vLLM, SGLang and FlashInfer do; the default) or, ``False``, as positions in the row.
        seq_lens, next_n: speculative-decode rows instead of ``lengths`` (vLLM's convention):
            one int32 / int64 sequence length per group of ``next_n`` rows (default 1); row
            ``i`` is valid on ``[0, seq_lens[i // next_n] - next_n + 1 + i % next_n)``.
        offsets: write index ``t`` of row ``i`` as ``t + offsets[i]`` (int32 / int64
            ``[rows]``; FlashInfer's ragged transform).
        page_table, page_size: write index ``t`` of row ``i`` as
            ``page_table[i, t // P] * P + t % P`` with ``P = page_size`` (default 1, a
            token-to-slot table; any size). ``page_table`` is int32 / int64 ``[rows, pages]``,
            or ``[1, pages]`` shared by every row. ``-1`` padding stays ``-1``.
        page_rows: with ``page_table``, row ``i`` reads the table row ``page_rows[i]`` instead
            of row ``i``: ``page_table[page_rows[i], t // P] * P + t % P`` (FlashInfer's
            ``row_to_batch``: a request's query rows share its table row). int32 / int64
            ``[rows]``; the table then has any number of rows, and every entry must name one
            (``0 <= page_rows[i] < page_table.shape[0]``).
        prior: float32 ``[rows]`` on the scores' device: each row's prior boundary (NaN: none
            for that row), typically the ``boundary`` the same row wrote at the previous decode
            step. A row whose prior brackets its K-th largest score is selected in one pass;
            the output never depends on the prior (exact, and byte-equal with ``sorted`` and
            ``deterministic``, whatever it holds), only the time does.
        prior_bins: the prior's margins, ``"P/R"`` or ``(P, R)``: the cutoff P coarse bins
            below the prior's bin and the rescue band down to R bins (``P <= R <= 64``);
            ``Prior::SUGGESTED`` (``"2/8"``) by default. Only with ``prior``.
        boundary: ``True`` to also return each row's K-th largest score as float32
            ``[rows]`` (NaN for a row of ``L <= k``, ``-0.0`` as ``+0.0``): the next step's
            prior; or a contiguous float32 array ``[>= rows]`` to write it into (it may be the
            ``prior`` array itself, updated in place). The call then returns it last:
            ``(indices, boundary)`` or ``(indices, values, boundary)``.

    The arrays are int32 or int64 on the scores' device (on CUDA, int64 or strided ones are
    converted to contiguous int32 on the stream). Every transformed index must be a
    non-negative int32, and windows, decode lengths and lengths must lie in ``[0, width]``: on
    the CPU ``ValueError`` names the row otherwise (and nothing is written); on CUDA such a row
    is selected as empty (an index the transform cannot make is written as -1) and the kernels'
    status bit is raised, which ``check=True`` reports with the row; a ``page_rows`` entry
    outside the table's rows is such an error too (on CUDA its whole row is selected as empty,
    all -1). With ``values`` on CUDA,
    ``out`` and ``values`` share one row stride (the kernels write both at one pitch).

    A CUDA call raises ``NotImplementedError`` with the reason for what the GPU path does not
    run (``topk_runtime::cuda::gpu_refusal``: what code generation lacks, and any path held back
    until its GPU tests pass).

    Returns:
        ``out``, or ``(out, values)``, ``(out, boundary)``, ``(out, values, boundary)`` with
        ``values`` / ``boundary``: tensors on the scores' device for PyTorch inputs, NumPy
        arrays for host inputs, the producer's array type for CuPy.

    On a CUDA tensor the generated kernels run on the tensor's device and on
    ``torch.cuda.current_stream()``: no host synchronization, no read-back and, once the plan
    for the call's shape class exists, no device allocation besides ``out`` (pass ``out=`` to
    avoid that one) and nothing enqueued but the plan's kernels (one launch, except for the
    staged family of very wide rows; int64 or strided arrays add one conversion each). Such a
    call can be captured in a CUDA graph and runs under ``torch.compile(fullgraph=True)`` (as
    ``torch.ops.topk.select``, or ``torch.ops.topk.select_call`` with interface arguments).
    On the CPU it runs the CPU backend.
    """
    if options:
        reject_options(options, "topk.select")
    plain = (
        (values is False or values is None)
        and not sorted
        and not deterministic
        and starts is None
        and ends is None
        and relative_to_start is True
        and seq_lens is None
        and next_n is None
        and offsets is None
        and page_table is None
        and page_size is None
        and page_rows is None
        and prior is None
        and prior_bins is None
        and (boundary is False or boundary is None)
    )
    if k.__class__ is not int or not 0 < k <= MAX_K:
        k = check_k(k)
    if isinstance(scores, _Tensor):
        if plain:
            if _is_compiling():
                if check:
                    raise ValueError("check=True is not available under torch.compile: use topk.Selector.check()")
                if out is None:
                    return _torch.ops.topk.select(scores, k, lengths)
                _torch.ops.topk.select_out(scores, k, lengths, out)
                return out
            if scores.is_cuda:
                return _torch_cuda(scores, k, lengths, out, check)
        opts = PLAIN if plain else Options(
            values, sorted, deterministic, starts, ends, relative_to_start, seq_lens, next_n,
            offsets, page_table, page_size, prior, prior_bins, boundary, page_rows,
        )
        if not plain and _is_compiling():
            return _compiled_call(scores, k, lengths, out, opts, check)
        if not plain and scores.is_cuda:
            return _torch_cuda_call(scores, k, lengths, out, opts, check)
        return _host_tensor(scores, k, lengths, out, opts)
    opts = PLAIN if plain else Options(
        values, sorted, deterministic, starts, ends, relative_to_start, seq_lens, next_n,
        offsets, page_table, page_size, prior, prior_bins, boundary, page_rows,
    )
    stream = _arrays.cupy_stream(scores)
    scores_v = _arrays.view(scores, "scores", stream)
    if scores_v.device == "cuda":
        if not plain:
            return _cuda_call.select_call(scores, scores_v, k, lengths, out, opts, check, stream or 0)
        return _dlpack_cuda(scores, scores_v, k, lengths, out, check, stream or 0)
    return host_select(scores, scores_v, k, lengths, out, opts)


def cuda_status(device: int = 0) -> Optional[str]:
    """None when device ``device`` can run the kernels; otherwise why not (driver, device,
    NVRTC, ...). Opens the device."""
    _nvrtc.preload()
    ok, why = _native.cuda_status(device)
    return None if ok else why
