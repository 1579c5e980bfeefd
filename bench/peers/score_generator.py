"""Scores generated on the GPU by the project's own generator kernel.

The CUDA source comes from `topk codegen --generator`, so the peers read exactly the matrices
our selector reads. It is compiled with NVRTC through cupy's binding with the same options the
runtime uses, and launched straight into torch memory (`cupy.asarray` of a torch tensor shares
it). cupy's RawModule is only the fallback: it appends its own `-arch` and `-ftz=true`, which
NVRTC may reject next to ours, and flush-to-zero could change the generated values.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import TYPE_CHECKING

from call_shapes import Call

if TYPE_CHECKING:
    import torch

KERNEL_NAME = "topk_generate"
# Profile codes of the generator ABI (topk-codegen generator::profile_code, names as
# topk-runtime data::Profile); the source's `#define TOPK_PROFILE_*` lines are checked against it.
PROFILE_CODES = {
    "indexer": 0, "iid": 1, "all-equal": 2, "two-values": 3, "ties-at-k": 4, "sorted-asc": 5,
    "sorted-desc": 6, "periodic": 7, "infinities": 8, "signed-zeros": 9, "subnormals": 10,
    "huge": 11, "tiny": 12,
}
NVRTC_OPTIONS = ("--gpu-architecture=sm_90a", "-std=c++17")
# Launch geometry. The kernel strides over rows (grid y) and columns (grid x), and every
# launch shape writes the same matrix; this one gives each row up to 64 blocks of 256 threads.
THREADS_PER_BLOCK = 256
MAX_BLOCKS_PER_ROW = 64
MAX_GRID_Y = 65535
_PROFILE_DEFINE = re.compile(r"^#define\s+TOPK_PROFILE_([A-Z0-9_]+)\s+(\d+)\s*$", re.MULTILINE)


def profile_codes_in_source(source: str) -> dict:
    """{profile name: code} from the generator source's `#define TOPK_PROFILE_*` lines."""
    return {m.group(1).lower().replace("_", "-"): int(m.group(2))
            for m in _PROFILE_DEFINE.finditer(source)}


def launch_shape(rows: int, width: int) -> tuple:
    """(grid, block) for `topk_generate` over rows x width."""
    grid_x = max(1, min(MAX_BLOCKS_PER_ROW, -(-width // THREADS_PER_BLOCK)))
    grid_y = max(1, min(rows, MAX_GRID_Y))
    return (grid_x, grid_y, 1), (THREADS_PER_BLOCK, 1, 1)


class GeneratorError(RuntimeError):
    """The generator source could not be compiled, launched, or produced unusable scores."""


class ScoreGenerator:
    """Compiled `topk_generate`; `fill` writes one call's rows into a torch tensor."""

    def __init__(self, source_path: str, options: tuple = NVRTC_OPTIONS):
        import cupy  # noqa: F401 - fails here, with the reason, when cupy is missing

        if not os.path.isfile(source_path):
            raise GeneratorError(
                f"generator source {source_path!r} not found; write it with "
                "`topk codegen --generator > gen.cu` and pass --gen-cu"
            )
        with open(source_path, encoding="utf-8") as f:
            self.source = f.read()
        if KERNEL_NAME not in self.source:
            raise GeneratorError(
                f"{source_path!r} has no kernel named {KERNEL_NAME}; is it the output of "
                "`topk codegen --generator`?"
            )
        declared = profile_codes_in_source(self.source)
        disagree = {n: (c, PROFILE_CODES.get(n)) for n, c in declared.items()
                    if PROFILE_CODES.get(n) != c}
        if disagree:
            raise GeneratorError(
                f"{source_path!r} declares profile codes {disagree} (source, expected); "
                "update PROFILE_CODES in score_generator.py to the generator's ABI"
            )
        self.info = {
            "source": os.path.abspath(source_path),
            "source_sha256": hashlib.sha256(self.source.encode()).hexdigest(),
            "kernel": KERNEL_NAME,
            "profile_defines_checked": sorted(declared),
        }
        self._kernel = self._compile(options)

    def _compile(self, options: tuple):
        import cupy

        errors = []
        try:
            cubin, version = compile_cubin(self.source, options)
            module = cupy.cuda.Module()
            module.load(cubin)
            self._module = module
            self.info["compiled_with"] = "nvrtc " + " ".join(options)
            self.info["nvrtc_version"] = version
            return module.get_function(KERNEL_NAME)
        except GeneratorError:
            raise
        except Exception as e:  # binding API differs in this cupy: try RawModule below
            errors.append(f"direct NVRTC: {type(e).__name__}: {e}")
        for opts in (tuple(options), ("-std=c++17",)):
            try:
                module = cupy.RawModule(code=self.source, options=opts)
                kernel = module.get_function(KERNEL_NAME)
                self._module = module
                self.info["compiled_with"] = "cupy.RawModule " + " ".join(opts)
                if opts != tuple(options):
                    self.info["compile_warning"] = (
                        "compiled with cupy's own -arch and -ftz=true, not " + " ".join(options)
                        + "; values that flush to zero may differ from the runtime's matrices"
                    )
                self.info["compile_errors"] = errors
                return kernel
            except Exception as e:  # noqa: BLE001 - every attempt's error is reported
                errors.append(f"cupy.RawModule{opts}: {type(e).__name__}: {e}")
        raise GeneratorError("could not compile the generator:\n  " + "\n  ".join(errors))

    def fill(self, out: torch.Tensor, lengths: torch.Tensor, call: Call, seed: int,
             profile: str, k: int) -> None:
        """Write call's rows into `out` [rows, width] (fp32, contiguous rows) on torch's
        current stream; `lengths` [rows] int32 on the same device."""
        import cupy
        import numpy as np
        import torch

        if profile not in PROFILE_CODES:
            raise GeneratorError(f"profile {profile!r}: expected one of {sorted(PROFILE_CODES)}")
        if out.dtype != torch.float32 or out.dim() != 2 or out.stride(1) != 1:
            raise GeneratorError("generator output must be a 2-D float32 tensor with unit stride")
        if tuple(out.shape) != (call.rows, call.width):
            raise GeneratorError(f"output {tuple(out.shape)} != call {call.rows}x{call.width}")
        if lengths.dtype != torch.int32 or lengths.numel() != call.rows:
            raise GeneratorError("lengths must be int32 with one entry per row")
        device = out.device.index if out.device.index is not None else torch.cuda.current_device()
        with cupy.cuda.Device(device):
            stream = cupy.cuda.ExternalStream(torch.cuda.current_stream(out.device).cuda_stream)
            args = (
                cupy.asarray(out),
                np.int64(out.stride(0)),
                np.int32(call.rows),
                np.int32(call.width),
                cupy.asarray(lengths),
                np.uint64(seed),
                np.int32(PROFILE_CODES[profile]),
                np.int32(k),
                np.int64(call.row_offset),
            )
            grid, block = launch_shape(call.rows, call.width)
            try:
                self._kernel(grid, block, args, stream=stream)
            except Exception as e:  # noqa: BLE001
                raise GeneratorError(f"launching {KERNEL_NAME} for {call.name} failed: {e}") from e
        torch.cuda.synchronize(out.device)


def lengths_tensor(call: Call, device) -> torch.Tensor:
    """The call's row lengths (`Call.lengths()`: the window rule or the explicit list) as the
    int32 tensor `fill` and the selectors take. The generator writes the profile value below
    each row's length and -inf from there to the width, so explicit lists need nothing more."""
    import torch

    lengths = call.lengths()
    in_range = not lengths or 0 <= min(lengths) <= max(lengths) <= call.width
    if len(lengths) != call.rows or not in_range:
        raise GeneratorError(
            f"{call.name}: lengths must be {call.rows} values in [0, {call.width}], got "
            f"{len(lengths)} in [{min(lengths, default=0)}, {max(lengths, default=0)}]"
        )
    return torch.tensor(lengths, dtype=torch.int32, device=device)


def compile_cubin(source: str, options: tuple) -> tuple:
    """(CUBIN bytes, NVRTC version) through cupy's NVRTC binding, with exactly `options`."""
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(source, "topk_generate.cu", (), ())
    try:
        try:
            nvrtc.compileProgram(prog, list(options))
        except nvrtc.NVRTCError as e:
            log = nvrtc.getProgramLog(prog)
            raise GeneratorError(
                f"NVRTC rejected the generator source with options {options}: {e}\n{log}"
            ) from e
        cubin = nvrtc.getCUBIN(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return cubin, ".".join(map(str, nvrtc.getVersion()))


def check_generated(scores: torch.Tensor, lengths: torch.Tensor,
                    chunk_bytes: int = 1 << 30) -> dict:
    """Counts what the verifier and the masked-dense peer rely on: no NaN anywhere and -inf
    past every row's length. Raises GeneratorError when either fails."""
    import torch

    m, n = scores.shape
    rows_per_chunk = max(1, chunk_bytes // (4 * n))
    col = torch.arange(n, device=scores.device).unsqueeze(0)
    nan = 0
    suffix_not_neg_inf = 0
    valid_neg_inf = 0
    valid_pos_inf = 0
    for r0 in range(0, m, rows_per_chunk):
        x = scores[r0:r0 + rows_per_chunk]
        valid = col < lengths[r0:r0 + rows_per_chunk].to(torch.int64).unsqueeze(1)
        nan += int(torch.isnan(x).sum())
        neg_inf = x == float("-inf")
        suffix_not_neg_inf += int((~valid & ~neg_inf).sum())
        valid_neg_inf += int((valid & neg_inf).sum())
        valid_pos_inf += int((valid & (x == float("inf"))).sum())
        del valid, neg_inf
    stats = {
        "nan": nan,
        "suffix_not_neg_inf": suffix_not_neg_inf,
        "valid_neg_inf": valid_neg_inf,
        "valid_pos_inf": valid_pos_inf,
    }
    if nan or suffix_not_neg_inf:
        raise GeneratorError(
            f"generated scores unusable: {nan} NaN, {suffix_not_neg_inf} entries past a row's "
            "length that are not -inf (the generator must write -inf there)"
        )
    return stats
