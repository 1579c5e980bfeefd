"""The peers behind one interface: the timed call, the conversion to the contract, the route.

- torch: `torch.topk(x, k, dim=1, largest=True, sorted=False)` on the -inf-masked dense matrix
  (it has no lengths). Adapter, applied after timing: indices >= L (the -inf padding a row with
  L < K has to pick) become -1 and each row is sorted in descending order, which puts the -1
  slots last; the contract leaves the order inside a row open.
- flashinfer, sglang: `fi_select` / `sgl_select` of the prebuilt kit (run_peers.py), already in
  the contract (int32, -1 padded).
- topk: this project's Python package (`topk.select`, eager, on the current stream), timed in
  the same process and on the same tensors as the peers; install the wheel from
  `scripts/python-wheel.sh` first. Its numbers include what the Python API adds over a launch.

A peer that cannot be loaded keeps its error and is reported on every shape.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import os
import re
import subprocess
import sys

import torch

PEER_NAMES = ("torch", "flashinfer", "sglang", "topk")
TVM_FFI_WHEEL = "apache_tvm_ffi-*.whl"
DEFAULT_TVM_FFI_TARGET = "/tmp/tvmffi"


class Peer:
    name = ""

    def __init__(self):
        self.error: str | None = None

    @property
    def available(self) -> bool:
        return self.error is None

    def select(self, scores: torch.Tensor, lengths: torch.Tensor, k: int) -> torch.Tensor:
        """The timed call; allocates its output (inside a graph: from the graph's pool)."""
        raise NotImplementedError

    def to_contract(self, out: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Indices in the operator's contract (untimed)."""
        return out

    def route(self, rows: int, width: int, k: int) -> str:
        """Which kernel path the peer takes; may be called while a graph is being captured."""
        return ""


class TorchTopK(Peer):
    name = "torch"

    def select(self, scores, lengths, k):
        return torch.topk(scores, k, dim=1, largest=True, sorted=False).indices

    def to_contract(self, out, lengths):
        return torch_indices_to_contract(out, lengths)

    def route(self, rows, width, k):
        return "torch.topk on the masked dense matrix (lengths ignored)"


def torch_indices_to_contract(indices: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Masked-dense indices -> contract: picks past the row's length become -1, placed last."""
    idx = indices.to(torch.int32)
    idx = torch.where(idx >= lengths.to(torch.int32).unsqueeze(1), torch.full_like(idx, -1), idx)
    return torch.sort(idx, dim=1, descending=True).values


class KitPeer(Peer):
    """A peer from the kit's run_peers.py; `kit` is the imported module or None."""

    def __init__(self, kit, kit_error: str | None):
        super().__init__()
        self.kit = kit
        self.error = kit_error
        if self.kit is not None and self.error is None:
            self._probe()

    def _probe(self):
        raise NotImplementedError


class FlashInfer(KitPeer):
    name = "flashinfer"

    def _probe(self):
        try:
            self.kit.fi_module()
            self.cub_built = bool(self.kit.fi_cub_built())
            self.cap_major = torch.cuda.get_device_capability()[0]
            self._radix_routes = {}
        except Exception as e:  # noqa: BLE001
            self.error = f"loading fi_topk.so failed: {type(e).__name__}: {first_line(e)}"

    def select(self, scores, lengths, k):
        return self.kit.fi_select(scores, lengths, k)

    def route(self, rows, width, k):
        # The kit's wrapper picks CUB under other thresholds while a stream is capturing than
        # in eager mode; asked at the same moment, this names the path actually taken. The
        # radix choice queries the module, so it is asked once in eager mode and remembered
        # (the bench asks for the eager route before capturing).
        try:
            if self.kit._fi_use_cub(rows, width, torch.float32, self.cap_major) and self.cub_built:
                return "cub (DeviceBatchedTopK)"
            key = (rows, width, k)
            if key not in self._radix_routes:
                self._radix_routes[key] = self.kit.fi_algo_radix(rows, width, k)
            return self._radix_routes[key]
        except Exception as e:  # noqa: BLE001 - the route is informative only
            return f"unknown ({type(e).__name__}: {first_line(e)})"


class SGLang(KitPeer):
    name = "sglang"

    def _probe(self):
        try:
            self.kit.sgl_module()
        except Exception as e:  # noqa: BLE001
            self.error = f"loading sgl_topk_v2.so failed: {type(e).__name__}: {first_line(e)}"

    def select(self, scores, lengths, k):
        return self.kit.sgl_select(scores, lengths, k)

    def route(self, rows, width, k):
        try:
            return self.kit.sgl_algo(rows, width)
        except Exception as e:  # noqa: BLE001
            return f"unknown ({type(e).__name__}: {first_line(e)})"


class TopkPython(Peer):
    """This project's selector through its Python package."""

    name = "topk"

    def __init__(self):
        super().__init__()
        self._routes: dict = {}
        try:
            import topk

            why = topk.cuda_status(torch.cuda.current_device())
            self.error = None if why is None else f"topk cannot use the GPU: {why}"
            self.topk = topk
        except Exception as e:  # noqa: BLE001
            self.error = f"import topk failed (install the wheel of scripts/python-wheel.sh): {first_line(e)}"

    def select(self, scores, lengths, k):
        return self.topk.select(scores, k, lengths)

    def route(self, rows, width, k):
        key = (rows, width, k)
        if key not in self._routes:
            try:
                sel = self.topk.Selector(k, rows, width, device=torch.cuda.current_device())
                self._routes[key] = f"{sel.family}: {sel.spec}"
            except Exception as e:  # noqa: BLE001
                self._routes[key] = f"unknown ({type(e).__name__}: {first_line(e)})"
        return self._routes[key]


def first_line(e: BaseException, limit: int = 400) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else repr(e))[:limit]


def ensure_tvm_ffi(kit_dir: str) -> str:
    """Import tvm_ffi, installing the kit's wheel into a temp dir first when it is missing."""
    try:
        importlib.import_module("tvm_ffi")
        return "already importable"
    except ImportError:
        pass
    target = os.environ.get("TVM_FFI_TARGET", DEFAULT_TVM_FFI_TARGET)
    if not os.path.isdir(os.path.join(target, "tvm_ffi")):
        wheels = sorted(glob.glob(os.path.join(kit_dir, TVM_FFI_WHEEL)))
        if not wheels:
            raise RuntimeError(f"no {TVM_FFI_WHEEL} in the kit folder {kit_dir!r}")
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
               "--target", target, wheels[-1]]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(
                f"`{' '.join(cmd)}` failed ({proc.returncode}): {proc.stderr.strip()[-800:]}"
            )
    if target not in sys.path:
        sys.path.insert(0, target)
    importlib.import_module("tvm_ffi")
    return f"installed from the kit into {target}"


def load_kit(kit_dir: str):
    """(run_peers module or None, error or None, info dict)."""
    info: dict = {"dir": os.path.abspath(kit_dir)}
    script = os.path.join(kit_dir, "run_peers.py")
    if not os.path.isfile(script):
        return None, f"no run_peers.py in the kit folder {kit_dir!r} (copy the kit there)", info
    try:
        info["tvm_ffi"] = ensure_tvm_ffi(kit_dir)
        info["tvm_ffi_version"] = getattr(importlib.import_module("tvm_ffi"), "__version__",
                                          "unknown")
    except Exception as e:  # noqa: BLE001
        return None, f"tvm_ffi unavailable: {type(e).__name__}: {first_line(e)}", info
    try:
        spec = importlib.util.spec_from_file_location("run_peers", script)
        module = importlib.util.module_from_spec(spec)
        sys.modules["run_peers"] = module
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001
        return None, f"importing {script} failed: {type(e).__name__}: {first_line(e)}", info
    info.update(kit_versions(kit_dir, module))
    return module, None, info


def kit_versions(kit_dir: str, module) -> dict:
    """Upstream versions named in the kit's docstring and hashes of its binaries."""
    doc = module.__doc__ or ""
    out: dict = {}
    for key, pattern in (("flashinfer", r"FlashInfer\s+([0-9][\w.]*)"),
                         ("sglang", r"SGLang\s+([0-9][\w.]*)")):
        m = re.search(pattern, doc)
        out[f"{key}_version"] = m.group(1) if m else "unknown"
    hashes = {}
    for name in ("fi_topk.so", "sgl_topk_v2.so"):
        path = os.path.join(kit_dir, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                hashes[name] = hashlib.sha256(f.read()).hexdigest()
        else:
            hashes[name] = "missing"
    out["sha256"] = hashes
    out["dlpack_exchange_api"] = bool(getattr(module, "_HAS_EXCHANGE_API", False))
    return out


def build_peers(names: list[str], kit_dir: str):
    """Peer objects in the order asked for, and the kit info (None when no kit peer asked)."""
    unknown = [n for n in names if n not in PEER_NAMES]
    if unknown:
        raise ValueError(f"unknown peer(s) {unknown}; known: {', '.join(PEER_NAMES)}")
    kit = kit_error = kit_info = None
    if any(n not in ("torch", "topk") for n in names):
        kit, kit_error, kit_info = load_kit(kit_dir)
        if kit is not None and "sglang" in names:
            try:
                kit_info["sgl_constants"] = kit.check_sgl_constants()
            except Exception as e:  # noqa: BLE001
                kit_info["sgl_constants"] = {"error": first_line(e)}
    peers = []
    for n in names:
        if n == "torch":
            peers.append(TorchTopK())
        elif n == "topk":
            peers.append(TopkPython())
        elif n == "flashinfer":
            peers.append(FlashInfer(kit, kit_error))
        else:
            peers.append(SGLang(kit, kit_error))
    return peers, kit_info
