"""What no selector can beat, measured the way the selectors are (graph_timing.py): the replay
of a captured empty kernel (the launch-bound limit of one graph replay) and the replay of a bare
read of the call's valid scores (one kernel that loads each valid score once with float4 loads,
keeps a running max per thread and writes it out so that the loads stay live).

The kernels are compiled with NVRTC through cupy, as score_generator compiles the generator, and
launched on torch's current stream, so that torch.cuda.graph captures them. Their arguments are
built before the capture: a launch inside it only calls cuLaunchKernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from score_generator import NVRTC_OPTIONS, GeneratorError, compile_cubin

if TYPE_CHECKING:
    import torch

EMPTY_KERNEL = "topk_empty"
READ_KERNEL = "topk_bare_read"
READ_THREADS = 256
# A block reads this many scores of a row per pass of the grid (2 float4 per thread), and the
# grid holds about BLOCKS_PER_SM blocks per SM, looping over the rows: enough loads in flight to
# reach the memory's rate without one block per tiny slice.
READ_SCORES_PER_BLOCK = 2048
READ_BLOCKS_PER_SM = 16
MAX_GRID_Y = 65535

SOURCE = r"""
extern "C" __global__ void topk_empty() {}

// Each valid score of rows [0, rows) (row r valid below lengths[r], row pitch `pitch` floats)
// is loaded once; out[block * blockDim.x + thread] gets the thread's max (-inf if none).
extern "C" __global__ void topk_bare_read(const float* __restrict__ x, long long pitch, int rows,
                                          const int* __restrict__ lengths, int vectorized,
                                          float* __restrict__ out) {
  const float neg_inf = __int_as_float(0xff800000);
  float m = neg_inf;
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
    const float* row = x + r * pitch;
    const long long len = lengths[r];
    long long done = 0;
    if (vectorized) {
      const float4* row4 = reinterpret_cast<const float4*>(row);
      const long long n4 = len >> 2;
#pragma unroll 2
      for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += step) {
        const float4 v = __ldcs(row4 + i);
        m = fmaxf(m, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
      }
      done = n4 << 2;
    }
    for (long long i = done + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < len; i += step)
      m = fmaxf(m, __ldcs(row + i));
  }
  out[((long long)blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x] = m;
}
"""


def read_grid(rows: int, max_length: int, sm_count: int) -> tuple:
    """(grid, block) of the bare read: enough blocks across a row to cover its longest length
    in READ_SCORES_PER_BLOCK slices (at most 1024), then rows up to about READ_BLOCKS_PER_SM
    blocks per SM in all."""
    across = max(1, min(1024, -(-max_length // READ_SCORES_PER_BLOCK)))
    down = max(1, min(rows, MAX_GRID_Y, (READ_BLOCKS_PER_SM * sm_count) // across))
    return (across, down, 1), (READ_THREADS, 1, 1)


class LimitKernels:
    """The compiled probes; `empty_call` and `read_call` make the per-copy callables that
    graph_timing.Replayer captures."""

    def __init__(self):
        import cupy

        try:
            cubin, version = compile_cubin(SOURCE, NVRTC_OPTIONS)
        except GeneratorError:
            raise
        except Exception as e:  # noqa: BLE001 - the reason goes into the report
            raise GeneratorError(
                f"compiling the limit kernels failed: {type(e).__name__}: {e}") from e
        self._module = cupy.cuda.Module()
        self._module.load(cubin)
        self._empty = self._module.get_function(EMPTY_KERNEL)
        self._read = self._module.get_function(READ_KERNEL)
        self.info = {"compiled_with": "nvrtc " + " ".join(NVRTC_OPTIONS), "nvrtc_version": version,
                     "read_threads": READ_THREADS, "read_scores_per_block": READ_SCORES_PER_BLOCK,
                     "read_blocks_per_sm": READ_BLOCKS_PER_SM}

    @staticmethod
    def _stream(device):
        import cupy
        import torch

        return cupy.cuda.ExternalStream(torch.cuda.current_stream(device).cuda_stream)

    def empty_call(self, device):
        """call_on_copy for the empty kernel (every copy launches the same kernel)."""
        import cupy

        def call(_i, _capturing):
            with cupy.cuda.Device(device.index):
                self._empty((1, 1, 1), (1, 1, 1), (), stream=self._stream(device))
            return None

        return call

    def read_call(self, copies: list, lengths: torch.Tensor, sm_count: int):
        """(call_on_copy, out) for the bare read of each copy's valid scores; `out` holds the
        thread maxima of the latest launch."""
        import cupy
        import numpy as np
        import torch

        x = copies[0]
        rows, _width = x.shape
        pitch = x.stride(0)
        vectorized = all(c.stride(0) == pitch and c.data_ptr() % 16 == 0 for c in copies) \
            and pitch % 4 == 0
        grid, block = read_grid(rows, int(lengths.max()) if rows else 0, sm_count)
        out = torch.empty(grid[0] * grid[1] * block[0], dtype=torch.float32, device=x.device)
        device = x.device
        args = [(cupy.asarray(c), np.int64(pitch), np.int32(rows), cupy.asarray(lengths),
                 np.int32(1 if vectorized else 0), cupy.asarray(out)) for c in copies]

        def call(i, _capturing):
            with cupy.cuda.Device(device.index):
                self._read(grid, block, args[i], stream=self._stream(device))
            return out

        return call, out, {"grid": list(grid), "block": list(block), "vectorized": vectorized}


def measure_limits(torch, kernels: LimitKernels, copies: list, lengths, reps: int, warmup: int,
                   sm_count: int) -> dict:
    """{'empty': timing, 'bare_read': timing + check} for one call's inputs. The bare read is
    checked after timing: the max of its thread maxima must equal the max of the scores (the
    suffix past each length is -inf, so that is the max of the valid scores)."""
    from graph_timing import Replayer, time_replays

    out: dict = {}
    for name in ("empty", "bare_read"):
        res: dict = {"status": None}
        stage = "setup"
        try:
            extra = {}
            if name == "empty":
                call, copies_n = kernels.empty_call(copies[0].device), 1
            else:
                call, result, extra = kernels.read_call(copies, lengths, sm_count)
                copies_n = len(copies)
            res.update(extra)
            call(0, False)
            torch.cuda.synchronize()
            stage = "capture"
            replayer = Replayer(call, copies_n)
            res["timing_mode"] = replayer.mode
            if replayer.note:
                res["note"] = replayer.note
            stage = "timing"
            res["timing"] = time_replays(replayer, reps, warmup)
            replayer.close()
            res["median_ms"] = res["timing"]["median_ms"]
            res["status"] = "ok"
            if name == "bare_read":
                stage = "checking the read"
                got, want = float(result.max()), float(copies[-1].max())
                if got != want:
                    res.update(status="wrong", error=f"read max {got} != scores max {want}")
        except Exception as e:  # noqa: BLE001 - reported, the selectors' numbers stand
            from peer_adapters import first_line

            res.update(status="error", stage=stage, error=f"{type(e).__name__}: {first_line(e)}")
            torch.cuda.synchronize()
        out[name] = res
    return out
