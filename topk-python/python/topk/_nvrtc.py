"""Finding libnvrtc for the CUDA path.

The kernels are generated per shape class and compiled with NVRTC at run time. PyTorch's CUDA
wheels ship libnvrtc in the `nvidia-cuda-nvrtc` wheel (site-packages/nvidia/cu13/lib, or
nvidia/cuda_nvrtc/lib for CUDA 12). Loading it here, before the first GPU call, lets the
runtime find it by name without LD_LIBRARY_PATH. `TOPK_NVRTC` names a file to load instead.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import List

_loaded: List[ctypes.CDLL] = []
_tried = False


def _candidates() -> List[str]:
    found = []
    given = os.environ.get("TOPK_NVRTC")
    if given:
        found.append(given)
    for root in sys.path:
        for sub in ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"):
            lib = os.path.join(root or ".", sub)
            if os.path.isdir(lib):
                for name in sorted(os.listdir(lib)):
                    if name.startswith("libnvrtc.so."):
                        found.append(os.path.join(lib, name))
    return found


def preload() -> None:
    """Loads the first libnvrtc found (and its builtins beside it) once; quiet when none is."""
    global _tried
    if _tried:
        return
    _tried = True
    for path in _candidates():
        folder = os.path.dirname(path)
        try:
            for name in sorted(os.listdir(folder)):
                if name.startswith("libnvrtc-builtins.so."):
                    _loaded.append(ctypes.CDLL(os.path.join(folder, name), mode=ctypes.RTLD_GLOBAL))
            _loaded.append(ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))
            return
        except OSError:
            continue
