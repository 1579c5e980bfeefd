"""Exact Top-K selection for long, ragged score rows (sparse-attention indexers and the like).

    import topk
    idx = topk.select(scores, 2048, lengths)        # int32 [rows, 2048], -1 padded

`scores` may be a PyTorch tensor (CUDA: the generated kernels on the current stream; CPU: the
CPU backend), a NumPy array or any DLPack producer (CuPy, JAX). `topk.select` also takes the
call interface of docs/interface.md, fused into the selection on CUDA and on the CPU (`values=`,
`sorted=`, `deterministic=`, row windows `starts=`/`ends=`, decode rows `seq_lens=`/`next_n=`,
`offsets=`, `page_table=`/`page_size=` with an optional row map `page_rows=`; float16 /
bfloat16 scores on the CPU, and on CUDA where the kernels generate them). `topk.Selector` plans
once for capacities (and an interface), for CUDA graph capture; `torch.ops.topk.select` /
`select_out` / `select_call` are registered for `torch.compile`; `topk.compat` has drop-in
entry points with the argument lists of SGLang, FlashInfer and vLLM ops.
"""

from __future__ import annotations

from . import _native, compat
from ._arrays import MAX_K
from ._select import cuda_status, select
from ._selector import Selector

try:
    from importlib.metadata import version as _version

    __version__ = _version("topk")
except Exception:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

try:
    import torch as _torch  # noqa: F401
except ImportError:  # pragma: no cover - PyTorch is optional
    _torch = None

if _torch is not None:
    from . import _torch_ops

    _torch_ops.register()


def empty_cache() -> None:
    """Waits for every device this package used, then frees its cached plans, workspaces and
    device arrays (they are otherwise kept until the process ends). Selectors keep theirs."""
    _native.release()


__all__ = ["MAX_K", "Selector", "compat", "cuda_status", "empty_cache", "select"]

