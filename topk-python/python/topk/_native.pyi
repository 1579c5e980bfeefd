"""Type stubs of the Rust extension (`topk-python/src/lib.rs`); internal to the package."""

from typing import List, Optional, Tuple

MAX_K: int
PRIOR_SUGGESTED: str  # `Prior::SUGGESTED` as "P/R"

# (values, sorted, deterministic, rows, transform, prior "none" or "P/R", boundary); transform
# one of "none", "offset", "paged", "paged_rows"
Io = Tuple[bool, bool, bool, str, str, str, bool]
# (page_table, page_columns, page_pitch, page_size, page_rows, page_table_rows)
Paged = Tuple[int, int, int, int, int, int]
# (values, starts, ends, seq_lens, next_n, offsets, paged, prior, boundary)
Buffers = Tuple[int, int, int, int, int, int, Paged, int, int]

def dlpack_describe(capsule: object) -> Tuple[int, List[int], List[int], str, int, int, bool]: ...
def dlpack_device_types() -> Tuple[int, int, int, int]: ...
def cpu_select(
    scores: int, dtype: str, rows: int, width: int, pitch: int, k: int, out: int, out_pitch: int,
    *,
    values: Optional[Tuple[int, int]] = None,
    lengths: Optional[Tuple[int, int, int, int]] = None,
    starts: Optional[Tuple[int, int, int, int]] = None,
    ends: Optional[Tuple[int, int, int, int]] = None,
    relative: bool = True,
    seq_lens: Optional[Tuple[int, int, int, int]] = None,
    next_n: int = 1,
    offsets: Optional[Tuple[int, int, int, int]] = None,
    page_table: Optional[Tuple[int, int, int, int, int, int]] = None,
    page_size: int = 1,
    sorted: bool = False,
    deterministic: bool = False,
    prior: Optional[Tuple[int, int, int]] = None,
    prior_bins: Optional[str] = None,
    boundary: Optional[int] = None,
    page_rows: Optional[Tuple[int, int, int, int]] = None,
) -> None:
    """1-D arrays are (ptr, bits, len, stride); the page table (ptr, bits, rows, columns,
    row stride, column stride); values (ptr, row pitch) in the scores' dtype; prior (ptr, len,
    stride) of float32 with the margins prior_bins ("P/R", PRIOR_SUGGESTED when not given);
    boundary a pointer to rows contiguous float32; page_rows (with page_table) the table row
    of each score row."""
def cpu_spec(k: int, width: int) -> str: ...
def prior_bins(text: str) -> str:
    """The margins "P/R" in canonical form; ValueError when a spec would refuse them."""
def cuda_select(
    device: int, stream: int, scores: int, rows: int, width: int, pitch: int, lengths: int,
    out: int, out_pitch: int, k: int, check: bool,
) -> None: ...
def cuda_select_call(
    device: int, stream: int, scores: int, dtype: str, rows: int, width: int, pitch: int,
    lengths: int, out: int, out_pitch: int, k: int, io: Io, buffers: Buffers, check: bool,
) -> int:
    """Returns the status bits with check, else 0."""
def gpu_unsupported(dtype: str, io: Io) -> Optional[str]: ...
def cuda_status(device: int) -> Tuple[bool, str]: ...
def release() -> None: ...

class CudaSelector:
    spec: str
    family: str
    source: str
    grid: int
    workspace_bytes: int
    def __init__(
        self, device: int, k: int, max_rows: int, max_width: int, dtype: str = "f32",
        io: Optional[Io] = None,
    ) -> None: ...
    def run(
        self, stream: int, scores: int, rows: int, width: int, pitch: int, lengths: int,
        live_rows: int, out: int, out_pitch: int,
        buffers: Optional[Buffers] = None,
    ) -> None: ...
    def take_status(self) -> int: ...
    def locate(self, scores: int, rows: int, width: int, pitch: int, lengths: int) -> Optional[str]: ...
    @staticmethod
    def status_error(bits: int, found: Optional[str] = None) -> ValueError: ...
