"""The PyTorch custom ops `torch.ops.topk.select` and `torch.ops.topk.select_out`.

Registered with `torch.library.custom_op` and a fake (meta) implementation, so that
`torch.compile(fullgraph=True)` traces them as single opaque nodes and CUDA graphs (including
piecewise capture) record the launch the real implementation makes on the current stream.
"""

from __future__ import annotations

from typing import Optional

import torch

from . import _arrays
from ._call import PLAIN, host_select
from ._select import _torch_cuda

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
