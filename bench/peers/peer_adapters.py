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
  With `selector_in_graphs` (the envelope benchmark) the eager call stays `topk.select` and the
  captured call is a `topk.Selector` planned for the call's rows and width, as a serving engine
  captures it.
- vllm.indexer, vllm.decode, vllm.prefill: vLLM 0.33's entry points from the kit's `vllm/`
  folder (`indexer_select`: what its sparse indexer runs; `decode_select`: top_k_per_row_decode,
  run on decode and speculative-decode calls; `prefill_select`: top_k_per_row_prefill, run on
  prefill chunks, windows and trace calls), already in the contract. The indexer entry gets
  `max_seq_len` = the batch's longest row, read in the eager call as vLLM computes it on the
  host. vLLM returns one cached output buffer per shape, so the graphs of all input copies
  write the same tensor; the copies hold the same scores, so each copy's check still checks
  the output of a replay on exactly those scores.

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

PEER_NAMES = ("torch", "flashinfer", "sglang", "topk", "vllm")
# vLLM entry point -> (function of vllm_peer.py, call kinds (call_shapes.Call.kind) vLLM uses it
# for; None: every call).
VLLM_ENTRIES = {
    "indexer": ("indexer_select", None),
    "decode": ("decode_select", ("decode", "spec")),
    "prefill": ("prefill_select", ("prefill", "window", "trace")),
}
VLLM_DIR = "vllm"
VLLM_SCRIPT = "vllm_peer.py"
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

    def not_applicable(self, call) -> str | None:
        """Why the peer does not run this call (None: it does). An entry point that a framework
        uses only for some kinds of calls says so here."""
        return None


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

    def __init__(self, selector_in_graphs: bool = False):
        super().__init__()
        self._routes: dict = {}
        self.selector_in_graphs = selector_in_graphs
        # (rows, width, k, device) -> Selector of the call being run; one kept at a time.
        self._selector_key = None
        self._selector = None
        try:
            import topk

            why = topk.cuda_status(torch.cuda.current_device())
            self.error = None if why is None else f"topk cannot use the GPU: {why}"
            self.topk = topk
        except Exception as e:  # noqa: BLE001
            self.error = f"import topk failed (install the wheel of scripts/python-wheel.sh): {first_line(e)}"

    def select(self, scores, lengths, k):
        if self.selector_in_graphs:
            selector = self.selector(scores.shape[0], scores.shape[1], k, scores.device.index)
            if torch.cuda.is_current_stream_capturing():
                return selector(scores, lengths)
        return self.topk.select(scores, k, lengths)

    def selector(self, rows, width, k, device=None):
        """The Selector planned for this call (planned here, outside any capture, on the first
        eager call of the shape)."""
        device = torch.cuda.current_device() if device is None else device
        key = (rows, width, k, device)
        if self._selector_key != key:
            self._selector = None  # its workspace is freed before the next one is planned
            self._selector = self.topk.Selector(k, rows, width, device=device)
            self._selector_key = key
        return self._selector

    def route(self, rows, width, k):
        key = (rows, width, k)
        if key not in self._routes:
            try:
                if self.selector_in_graphs:
                    sel = self.selector(rows, width, k)
                else:
                    sel = self.topk.Selector(k, rows, width, device=torch.cuda.current_device())
                self._routes[key] = f"{sel.family}: {sel.spec}"
            except Exception as e:  # noqa: BLE001
                self._routes[key] = f"unknown ({type(e).__name__}: {first_line(e)})"
        return self._routes[key]


class VllmEntry(Peer):
    """One of vLLM's entry points (VLLM_ENTRIES); `module` is the kit's vllm_peer.py."""

    def __init__(self, entry: str, module, error: str | None):
        super().__init__()
        if entry not in VLLM_ENTRIES:
            raise ValueError(f"unknown vLLM entry {entry!r}; known: {', '.join(VLLM_ENTRIES)}")
        self.entry = entry
        self.name = f"vllm.{entry}"
        self.function, self.kinds = VLLM_ENTRIES[entry]
        self.module = module
        self.error = error
        self._max_len: dict = {}
        self._routes: dict = {}

    def not_applicable(self, call):
        if self.kinds is None or call.kind in self.kinds:
            return None
        return f"vLLM runs {self.function} on {', '.join(self.kinds)} calls, not on {call.kind}"

    def select(self, scores, lengths, k):
        fn = getattr(self.module, self.function)
        if self.entry != "indexer":
            return fn(scores, lengths, k)
        key = (lengths.data_ptr(), lengths.numel())
        if not torch.cuda.is_current_stream_capturing():
            # vLLM's host-side "max context length in the batch"; the eager call comes first.
            self._max_len[key] = int(lengths.max())
            self._describe(scores, k, self._max_len[key])
        return fn(scores, lengths, k, max_seq_len=self._max_len[key])

    def _describe(self, scores, k, max_len):
        """The path of this call (it depends on max_seq_len too), named for route()."""
        key = (scores.shape[0], scores.shape[1], k)
        try:
            self._routes[key] = self.module.describe("indexer", scores, k, max_len)
        except Exception as e:  # noqa: BLE001 - the route is informative only
            self._routes[key] = f"unknown ({type(e).__name__}: {first_line(e)})"

    def route(self, rows, width, k):
        if self.entry != "indexer":
            return {"decode": "top_k_per_row_decode (next_n 1, seqLens = lengths)",
                    "prefill": "top_k_per_row_prefill (rowStarts 0, rowEnds = lengths)"}[self.entry]
        return self._routes.get((rows, width, k),
                                "indexer_select (path named after the eager call)")


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


def sha256_file(path: str) -> str:
    if not os.path.isfile(path):
        return "missing"
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def sglang_build(kit_dir: str, module) -> dict:
    """Which SGLang module the kit loads (SGL_TOPK_V2_SO) and the cluster constants it names:
    the prebuilt one bakes C16_OCC1=0, the one rebuilt on the GPU the probed values."""
    so = os.environ.get("SGL_TOPK_V2_SO", "sgl_topk_v2.so")
    path = os.path.join(kit_dir, so)
    return {
        "module": os.path.abspath(path),
        "sha256": sha256_file(path),
        "baked_c8_occ2": getattr(module, "SGL_BAKED_C8_OCC2", None),
        "baked_c16_occ1": getattr(module, "SGL_BAKED_C16_OCC1", None),
        "rebuilt_on_target": os.path.basename(so) != "sgl_topk_v2.so",
        "build_note": os.environ.get("SGL_BUILD_NOTE", ""),
    }


def kit_versions(kit_dir: str, module) -> dict:
    """Upstream versions named in the kit's docstring and hashes of its binaries."""
    doc = module.__doc__ or ""
    out: dict = {}
    for key, pattern in (("flashinfer", r"FlashInfer\s+([0-9][\w.]*)"),
                         ("sglang", r"SGLang\s+([0-9][\w.]*)")):
        m = re.search(pattern, doc)
        out[f"{key}_version"] = m.group(1) if m else "unknown"
    out["sha256"] = {name: sha256_file(os.path.join(kit_dir, name))
                     for name in ("fi_topk.so", "sgl_topk_v2.so")}
    out["sglang_build"] = sglang_build(kit_dir, module)
    out["dlpack_exchange_api"] = bool(getattr(module, "_HAS_EXCHANGE_API", False))
    return out


def load_vllm(kit_dir: str):
    """(vllm_peer module or None, error or None, info dict) from the kit's vllm/ folder."""
    folder = os.path.join(kit_dir, VLLM_DIR)
    script = os.path.join(folder, VLLM_SCRIPT)
    info: dict = {"dir": os.path.abspath(folder)}
    if not os.path.isfile(script):
        return None, f"no {VLLM_DIR}/{VLLM_SCRIPT} in the kit folder {kit_dir!r}", info
    try:
        spec = importlib.util.spec_from_file_location("vllm_peer", script)
        module = importlib.util.module_from_spec(spec)
        sys.modules["vllm_peer"] = module
        spec.loader.exec_module(module)
        info["build_info"] = module.lib().vllm_topk_build_info().decode(errors="replace")
    except Exception as e:  # noqa: BLE001
        return None, f"loading vLLM's ops failed: {type(e).__name__}: {first_line(e)}", info
    m = re.search(r"v?([0-9]+\.[0-9]+\.[0-9][\w.]*)", module.__doc__ or "")
    info["version"] = m.group(1) if m else "unknown"
    info["sha256"] = {os.path.basename(module.SO_PATH): sha256_file(module.SO_PATH)}
    return module, None, info


def expand_peer_names(names: list[str]) -> list[str]:
    """`vllm` stands for all its entries (vllm.indexer, vllm.decode, vllm.prefill)."""
    out = []
    for n in names:
        out += [f"vllm.{e}" for e in VLLM_ENTRIES] if n == "vllm" else [n]
    return out


def build_peers(names: list[str], kit_dir: str, selector_in_graphs: bool = False):
    """Peer objects in the order asked for, and the kit info (None when no kit peer asked)."""
    names = expand_peer_names(names)
    known = PEER_NAMES + tuple(f"vllm.{e}" for e in VLLM_ENTRIES)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown peer(s) {unknown}; known: {', '.join(known)}")
    kit = kit_error = kit_info = None
    vllm = vllm_error = None
    if any(n.startswith("vllm.") for n in names):
        vllm, vllm_error, vllm_info = load_vllm(kit_dir)
    if any(n in ("flashinfer", "sglang") for n in names):
        kit, kit_error, kit_info = load_kit(kit_dir)
        if kit is not None and "sglang" in names:
            try:
                kit_info["sgl_constants"] = kit.check_sgl_constants()
            except Exception as e:  # noqa: BLE001
                kit_info["sgl_constants"] = {"error": first_line(e)}
    if vllm is not None or vllm_error is not None:
        kit_info = dict(kit_info or {}, vllm=vllm_info)
        if vllm_error:
            kit_info["vllm"]["error"] = vllm_error
    peers = []
    for n in names:
        if n == "torch":
            peers.append(TorchTopK())
        elif n == "topk":
            peers.append(TopkPython(selector_in_graphs))
        elif n == "flashinfer":
            peers.append(FlashInfer(kit, kit_error))
        elif n == "sglang":
            peers.append(SGLang(kit, kit_error))
        else:
            peers.append(VllmEntry(n.split(".", 1)[1], vllm, vllm_error))
    return peers, kit_info
