"""The calls a benchmark run makes: operator matrix, framework traces, custom shapes.

Every call is a block of `rows` score rows of width `width`. By default their lengths grow by
one per row: row r has length `first_length + r`. Terminal causal windows (operator matrix,
custom shapes) end at the width; trace calls end wherever the scheduler split the step. A call
may instead carry an explicit per-row list (`row_lengths`: decode batches, speculative decode;
see envelope_calls.py).

Pure Python (no torch) so that the shell driver can list shapes on any machine.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# Operator matrix (docs/design.md, "Data generators and the evaluation shapes"; paper §6.2).
MATRIX_ROWS = (512, 1024, 2048, 4096, 8192)
MATRIX_WIDTHS = (128 * KIB, 256 * KIB, 512 * KIB, 1024 * KIB)

# Chunked prefill traces (docs/design.md, "Data generators and the evaluation shapes"; paper
# §6.3): scheduler steps of this many query tokens, each step split into calls whose fp32 score
# block stays within the budget.
TRACE_STEP_TOKENS = 65536
TRACE_BUDGET_BYTES = 6 * GIB
SCORE_BYTES = 4
# name -> (prompt tokens T, number of calls the paper reports for it)
TRACES = {
    "trace245": (250880, 26),
    "trace430": (440320, 71),
}


class ShapeError(ValueError):
    """A shape list that cannot be benchmarked; the message says what to change."""


# Row-length lists up to this many rows are written out in full in a call's JSON; longer ones
# are summarized (count, min, max, sum, sha256) and regenerated from the call's rule.
JSON_LENGTHS_MAX_ROWS = 1024


@dataclass(frozen=True)
class Call:
    """One selector call: `rows` rows of width `width`, row r valid up to `first_length + r`,
    or up to `row_lengths[r]` when the call carries an explicit list."""

    name: str
    rows: int
    width: int
    first_length: int
    # Global row index of the call's first row in the generator's counter (row_offset + r).
    # 0 for every call: each call is generated as a matrix of its own, as `topk-bench bench`
    # generates it (topk-runtime DeviceMatrix::generate), so both read the same scores.
    row_offset: int
    # Trace the call belongs to (None for matrix and custom shapes) and its index there.
    trace: str | None = None
    index: int = 0
    # Explicit length of every row (None: the rule first_length + r). first_length is then the
    # first row's length, kept so that tools reading only first_length see a valid number.
    row_lengths: tuple | None = None
    # What the call stands for: window (terminal causal window), trace, decode, spec, prefill.
    kind: str = "window"
    # How the lengths were made, in words (e.g. "uniform in [N/2, N], seed 0").
    lengths_rule: str = ""

    def __post_init__(self):
        if self.row_lengths is not None:
            check_row_lengths(self.name, self.rows, self.width, self.row_lengths)

    @property
    def last_length(self) -> int:
        if self.row_lengths is not None:
            return self.row_lengths[-1]
        return self.first_length + self.rows - 1

    @property
    def valid_elements(self) -> int:
        """Sum of the row lengths: the scores a selector has to read at least once."""
        if self.row_lengths is not None:
            return sum(self.row_lengths)
        return self.rows * self.first_length + self.rows * (self.rows - 1) // 2

    @property
    def valid_bytes(self) -> int:
        return SCORE_BYTES * self.valid_elements

    @property
    def dense_bytes(self) -> int:
        return SCORE_BYTES * self.rows * self.width

    def lengths(self) -> list[int]:
        if self.row_lengths is not None:
            return list(self.row_lengths)
        return [self.first_length + r for r in range(self.rows)]

    def to_json(self) -> dict:
        d = asdict(self)
        d["valid_bytes"] = self.valid_bytes
        if self.row_lengths is None:
            del d["row_lengths"]
        else:
            d["row_lengths"] = lengths_summary(self.row_lengths)
        return d


def check_row_lengths(name: str, rows: int, width: int, lengths) -> None:
    """Raises ShapeError unless `lengths` has one integer in [0, width] per row."""
    if len(lengths) != rows:
        raise ShapeError(f"call {name}: {len(lengths)} row lengths for {rows} rows")
    bad = [x for x in lengths if not isinstance(x, int) or not 0 <= x <= width]
    if bad:
        raise ShapeError(f"call {name}: row length {bad[0]!r} outside [0, {width}]")


def lengths_summary(lengths) -> dict:
    """The JSON form of a length list: the list itself when short, always its statistics."""
    digest = hashlib.sha256(",".join(map(str, lengths)).encode()).hexdigest()
    out = {"count": len(lengths), "min": min(lengths), "max": max(lengths), "sum": sum(lengths),
           "sha256": digest}
    if len(lengths) <= JSON_LENGTHS_MAX_ROWS:
        out["values"] = list(lengths)
    return out


def width_label(n: int) -> str:
    """128K, 1M, or the plain number when it is not a whole multiple."""
    if n % MIB == 0:
        return f"{n // MIB}M"
    if n % KIB == 0:
        return f"{n // KIB}K"
    return str(n)


def terminal_window(rows: int, width: int) -> Call:
    """Row r of an M-row window ending at N has length N - M + r + 1
    (docs/design.md, "Data generators and the evaluation shapes").
    """
    if rows < 1 or width < 1:
        raise ShapeError(f"shape {rows}x{width}: rows and width must be positive")
    if rows > width:
        raise ShapeError(
            f"shape {rows}x{width}: a terminal causal window needs rows <= width "
            f"(row 0 would have length {width - rows + 1})"
        )
    return Call(
        name=f"{rows}x{width_label(width)}",
        rows=rows,
        width=width,
        first_length=width - rows + 1,
        row_offset=0,
    )


def matrix_calls() -> list[Call]:
    """The operator matrix, width-major (the order of the peers table)."""
    return [terminal_window(m, n) for n in MATRIX_WIDTHS for m in MATRIX_ROWS]


def rows_per_call(width: int, budget_bytes: int = TRACE_BUDGET_BYTES) -> int:
    """floor(budget / (4 N)): the most rows of width N one call may hold."""
    return budget_bytes // (SCORE_BYTES * width)


def trace_calls(name: str) -> list[Call]:
    """Chunked prefill of T tokens: steps of 65536 query tokens, step ending at e has width e,
    split in order into calls of at most floor(6 GiB / 4e) rows; query t has length t + 1.
    The same split as topk-bench shapes::trace."""
    if name not in TRACES:
        raise ShapeError(f"unknown trace {name!r}; known: {', '.join(sorted(TRACES))}")
    tokens, expected_calls = TRACES[name]
    calls: list[Call] = []
    step_start = 0
    while step_start < tokens:
        step_end = min(step_start + TRACE_STEP_TOKENS, tokens)
        limit = rows_per_call(step_end)
        if limit < 1:
            raise ShapeError(f"{name}: width {step_end} leaves no row within the budget")
        t0 = step_start
        while t0 < step_end:
            rows = min(limit, step_end - t0)
            index = len(calls)
            calls.append(
                Call(
                    name=f"{name}.c{index:02d}",
                    rows=rows,
                    width=step_end,
                    first_length=t0 + 1,
                    row_offset=0,
                    trace=name,
                    index=index,
                )
            )
            t0 += rows
        step_start = step_end
    if len(calls) != expected_calls:
        raise ShapeError(
            f"{name}: the split gives {len(calls)} calls but the paper reports {expected_calls}; "
            "the trace rules in call_shapes.py and docs/design.md (\"Data generators and the "
            "evaluation shapes\") disagree"
        )
    return calls


_SIZE = re.compile(r"^(\d+)([KkMm]?)$")


def parse_size(text: str) -> int:
    """'131072', '128K' or '1M' (binary multiples)."""
    m = _SIZE.match(text.strip())
    if not m:
        raise ShapeError(f"size {text!r}: expected an integer, optionally followed by K or M")
    scale = {"": 1, "k": KIB, "m": MIB}[m.group(2).lower()]
    return int(m.group(1)) * scale


def custom_calls(spec: str) -> list[Call]:
    """'MxN[,MxN...]', sizes as in parse_size."""
    calls = []
    for item in spec.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) != 2:
            raise ShapeError(f"custom shape {item!r}: expected MxN, e.g. 512x128K")
        calls.append(terminal_window(parse_size(parts[0]), parse_size(parts[1])))
    if not calls:
        raise ShapeError("custom: no shape given; expected custom:MxN[,MxN...]")
    return calls


def parse_shapes(spec: str) -> list[Call]:
    """`matrix`, `trace245`, `trace430` or `custom:MxN[,MxN...]`."""
    if spec == "matrix":
        return matrix_calls()
    if spec in TRACES:
        return trace_calls(spec)
    if spec.startswith("custom:"):
        return custom_calls(spec[len("custom:"):])
    raise ShapeError(
        f"--shapes {spec!r}: expected matrix, {', '.join(sorted(TRACES))} or custom:MxN[,MxN...]"
    )


def format_shape_table(calls: list[Call]) -> str:
    """Tab-separated list the shell driver reads: name rows width first_length row_offset."""
    lines = [
        f"{c.name}\t{c.rows}\t{c.width}\t{c.first_length}\t{c.row_offset}" for c in calls
    ]
    return "\n".join(lines) + "\n"
