"""The calls a serving engine makes, as the envelope benchmark runs them (K = 2048).

- decode: B rows (one per sequence) of width N; lengths uniform in [N/2, N] (seeded, `rand`)
  or all N (`full`).
- spec: speculative decode with next_n rows per sequence (vLLM's convention): row r of sequence
  s has length seq_len[s] - next_n + 1 + r % next_n, seq_len as in decode (`rand` or `full`).
- prefill: a chunk of M query rows of width N, with causal lengths ending at N (`causal`: row r
  has N - M + 1 + r) or starting at 1 (`from1`: row r has r + 1, the first chunk of a prompt in
  a buffer of width N).
- window: corners of the operator matrix (terminal causal windows, call_shapes.terminal_window).
- trace: the chunked-prefill traces of call_shapes (optional).

A grid of each kind comes from a preset (`default`, `quick`, `full`) and may be replaced by
explicit lists (`Grid.from_settings`, the envelope.sh variables). Pure Python, no torch: lists
and run-time estimates work on any machine.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass

from call_shapes import (KIB, MIB, Call, ShapeError, parse_size, terminal_window, trace_calls,
                         width_label)

DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DECODE_WIDTHS = (32 * KIB, 64 * KIB, 128 * KIB, 256 * KIB, MIB)
LENGTH_MODES = ("rand", "full")
SPEC_NEXT_N = (2, 4)
PREFILL_SHAPES = ((16384, 32 * KIB), (8192, 64 * KIB))
PREFILL_MODES = ("causal", "from1")
MATRIX_CORNERS = ((512, 128 * KIB), (4096, 128 * KIB), (2048, 256 * KIB), (512, MIB))
KINDS = ("decode", "spec", "prefill", "window", "trace")


@dataclass(frozen=True)
class Grid:
    """Which calls of each kind a run makes; an empty tuple leaves a kind out."""

    # decode: (batches, widths, length modes) products; several products may be listed.
    decode: tuple = ()
    # spec: (next_n values, sequence counts, widths, length modes) products.
    spec: tuple = ()
    prefill: tuple = ()          # (rows, width) pairs
    prefill_modes: tuple = PREFILL_MODES
    windows: tuple = ()          # (rows, width) pairs
    traces: tuple = ()           # call_shapes.TRACES names

    @staticmethod
    def preset(name: str) -> "Grid":
        if name not in PRESETS:
            raise ShapeError(f"preset {name!r}: expected one of {', '.join(PRESETS)}")
        return PRESETS[name]

    @staticmethod
    def from_settings(settings: dict) -> "Grid":
        """The preset named by settings['set'] (default: `default`) with each kind given in
        `settings` replaced. Keys (values as the envelope.sh variables take them):
        decode_batches, decode_widths, decode_lengths; spec_next_n, spec_batches, spec_widths,
        spec_lengths; prefill ('16384x32K,8192x64K'), prefill_lengths; matrix ('512x128K,...');
        traces ('trace245 trace430'). A list of `none` leaves the kind out. Setting any key of
        decode (or spec) replaces that kind by the product of the given lists, each missing
        list being the full one."""
        grid = Grid.preset(settings.get("set") or "default")
        s = {k: v for k, v in settings.items() if v is not None and k != "set"}
        unknown = sorted(set(s) - SETTING_KEYS)
        if unknown:
            raise ShapeError(f"unknown envelope setting(s) {unknown}; "
                             f"known: {sorted(SETTING_KEYS)}")
        changes: dict = {}
        if any(k.startswith("decode_") for k in s):
            batches = _ints(s.get("decode_batches"), DECODE_BATCHES, "decode_batches")
            widths = _sizes(s.get("decode_widths"), DECODE_WIDTHS, "decode_widths")
            modes = _modes(s.get("decode_lengths"), LENGTH_MODES, "decode_lengths")
            changes["decode"] = ((batches, widths, modes),) if batches and widths and modes else ()
        if any(k.startswith("spec_") for k in s):
            next_n = _ints(s.get("spec_next_n"), SPEC_NEXT_N, "spec_next_n")
            batches = _ints(s.get("spec_batches"), DECODE_BATCHES, "spec_batches")
            widths = _sizes(s.get("spec_widths"), DECODE_WIDTHS, "spec_widths")
            modes = _modes(s.get("spec_lengths"), LENGTH_MODES, "spec_lengths")
            changes["spec"] = (((next_n, batches, widths, modes),)
                               if next_n and batches and widths and modes else ())
        if "prefill" in s:
            changes["prefill"] = _shapes(s["prefill"], "prefill")
        if "prefill_lengths" in s:
            changes["prefill_modes"] = _modes(s["prefill_lengths"], PREFILL_MODES,
                                              "prefill_lengths")
        if "matrix" in s:
            changes["windows"] = _shapes(s["matrix"], "matrix")
        if "traces" in s:
            changes["traces"] = _words(s["traces"])
        return Grid(**{**grid.__dict__, **changes})


SETTING_KEYS = {"decode_batches", "decode_widths", "decode_lengths", "spec_next_n",
                "spec_batches", "spec_widths", "spec_lengths", "prefill", "prefill_lengths",
                "matrix", "traces"}


def _words(text: str) -> tuple:
    items = [w for w in text.replace(",", " ").split() if w]
    return () if items == ["none"] else tuple(items)


def _ints(text, default: tuple, what: str) -> tuple:
    if text is None:
        return default
    try:
        values = tuple(int(w) for w in _words(text))
    except ValueError:
        raise ShapeError(f"{what}={text!r}: expected integers, e.g. 1,8,64") from None
    if any(v < 1 for v in values):
        raise ShapeError(f"{what}={text!r}: every value must be at least 1")
    return values


def _sizes(text, default: tuple, what: str) -> tuple:
    if text is None:
        return default
    values = tuple(parse_size(w) for w in _words(text))
    if any(v < 1 for v in values):
        raise ShapeError(f"{what}={text!r}: widths must be positive")
    return values


def _modes(text, known: tuple, what: str) -> tuple:
    if text is None:
        return known
    values = _words(text)
    bad = [v for v in values if v not in known]
    if bad:
        raise ShapeError(f"{what}={text!r}: unknown {bad}; expected some of {', '.join(known)}")
    return values


def _shapes(text: str, what: str) -> tuple:
    out = []
    for item in _words(text):
        parts = item.lower().split("x")
        if len(parts) != 2:
            raise ShapeError(f"{what}: {item!r} is not MxN (e.g. 16384x32K)")
        out.append((parse_size(parts[0]), parse_size(parts[1])))
    return tuple(out)


# Presets. `default` is the representative subset sized for about four minutes per profile on
# one H200 (estimate_seconds); `full` is every combination the brief of the benchmark lists.
PRESETS = {
    "default": Grid(
        decode=((DECODE_BATCHES, DECODE_WIDTHS, ("rand",)),
                ((1, 8, 64), (64 * KIB, 256 * KIB, MIB), ("full",))),
        spec=(((2, 4), (1, 8, 64), (64 * KIB, 256 * KIB), ("rand",)),),
        prefill=PREFILL_SHAPES,
        windows=MATRIX_CORNERS,
    ),
    "quick": Grid(
        decode=(((1, 32, 256), (64 * KIB, 256 * KIB), ("rand",)),),
        spec=(((2,), (8,), (128 * KIB,), ("rand",)),),
        prefill=(PREFILL_SHAPES[0],),
        prefill_modes=("from1",),
        windows=(MATRIX_CORNERS[0],),
    ),
    "full": Grid(
        decode=((DECODE_BATCHES, DECODE_WIDTHS, LENGTH_MODES),),
        spec=((SPEC_NEXT_N, DECODE_BATCHES, DECODE_WIDTHS, LENGTH_MODES),),
        prefill=PREFILL_SHAPES,
        windows=MATRIX_CORNERS,
    ),
}


def call_rng(seed: int, name: str) -> random.Random:
    """The generator of one call's lengths: a function of the run's seed and the call's name
    only, so every call's lengths are the same whatever else the run holds."""
    digest = hashlib.sha256(f"topk-envelope/{seed}/{name}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "little"))


def sequence_lengths(count: int, width: int, mode: str, rng: random.Random) -> list:
    """`rand`: uniform integers in [ceil(N/2), N]; `full`: all N."""
    if mode == "full":
        return [width] * count
    if mode == "rand":
        low = (width + 1) // 2
        return [rng.randint(low, width) for _ in range(count)]
    raise ShapeError(f"length mode {mode!r}: expected one of {', '.join(LENGTH_MODES)}")


def spec_row_lengths(seq_lens: list, next_n: int) -> list:
    """Rows of speculative decode: row r of sequence s has seq_len[s] - next_n + 1 + r % next_n
    (vLLM's next_n layout: the sequence's next_n query tokens in order, each seeing itself)."""
    if next_n < 1:
        raise ShapeError(f"next_n must be at least 1, got {next_n}")
    short = [s for s in seq_lens if s < next_n]
    if short:
        raise ShapeError(f"sequence length {short[0]} below next_n={next_n}")
    return [s - next_n + 1 + r for s in seq_lens for r in range(next_n)]


def decode_call(batch: int, width: int, mode: str, seed: int) -> Call:
    name = f"dec-{batch}x{width_label(width)}-{mode}"
    lengths = sequence_lengths(batch, width, mode, call_rng(seed, name))
    return Call(name=name, rows=batch, width=width, first_length=lengths[0], row_offset=0,
                row_lengths=tuple(lengths), kind="decode", lengths_rule=_rule(mode, seed))


def spec_call(next_n: int, sequences: int, width: int, mode: str, seed: int) -> Call:
    rows = sequences * next_n
    name = f"spec{next_n}-{rows}x{width_label(width)}-{mode}"
    seq_lens = sequence_lengths(sequences, width, mode, call_rng(seed, name))
    lengths = spec_row_lengths(seq_lens, next_n)
    rule = (f"{sequences} sequences x next_n={next_n}: row r of sequence s has "
            f"seq_len[s] - {next_n - 1} + r % {next_n}; seq_len {_rule(mode, seed)}")
    return Call(name=name, rows=rows, width=width, first_length=lengths[0], row_offset=0,
                row_lengths=tuple(lengths), kind="spec", lengths_rule=rule)


def prefill_call(rows: int, width: int, mode: str) -> Call:
    if rows > width:
        raise ShapeError(f"prefill {rows}x{width}: more query rows than the width")
    label = f"{rows}x{width_label(width)}"
    if mode == "causal":
        return Call(name=f"pre-{label}-causal", rows=rows, width=width,
                    first_length=width - rows + 1, row_offset=0, kind="prefill",
                    lengths_rule="causal, ending at N: row r has N - M + 1 + r")
    if mode == "from1":
        return Call(name=f"pre-{label}-from1", rows=rows, width=width, first_length=1,
                    row_offset=0, kind="prefill", lengths_rule="causal from 1: row r has r + 1")
    raise ShapeError(f"prefill length mode {mode!r}: expected one of {', '.join(PREFILL_MODES)}")


def window_call(rows: int, width: int) -> Call:
    c = terminal_window(rows, width)
    return Call(name=f"mat-{c.name}", rows=c.rows, width=c.width, first_length=c.first_length,
                row_offset=0, kind="window", lengths_rule="terminal causal window")


def _rule(mode: str, seed: int) -> str:
    return f"uniform in [N/2, N], seed {seed}" if mode == "rand" else "all N"


def envelope_calls(grid: Grid, seed: int = 0) -> list:
    """The calls of `grid` in run order: decode, spec, prefill, windows, traces. Duplicates
    (the same name from two products) are kept once."""
    calls: list = []
    for batches, widths, modes in grid.decode:
        calls += [decode_call(b, n, m, seed) for m in modes for n in widths for b in batches]
    for next_ns, seqs, widths, modes in grid.spec:
        calls += [spec_call(t, s, n, m, seed)
                  for t in next_ns for m in modes for n in widths for s in seqs]
    calls += [prefill_call(m, n, mode) for m, n in grid.prefill for mode in grid.prefill_modes]
    calls += [window_call(m, n) for m, n in grid.windows]
    for t in grid.traces:
        calls += [Call(**{**c.__dict__, "kind": "trace"}) for c in trace_calls(t)]
    seen: set = set()
    unique = []
    for c in calls:
        if c.name not in seen:
            seen.add(c.name)
            unique.append(c)
    return unique


# --- run-time estimate -------------------------------------------------------------------
# A rough model of one call's cost in the driver (seconds), for sizing presets; the run itself
# reports what it took. Latency model per timed entry: a graph replay costs at least
# REPLAY_MIN_MS and reads the valid bytes at PEER_X_FLOOR times the floor (torch.topk:
# TORCH_X_FLOOR on the dense bytes). Verification and capture cost per input copy.
ESTIMATE = {
    "replay_min_ms": 0.012,
    "peer_x_floor": 2.5,
    "torch_x_floor": 12.0,
    "capture_ms_per_copy": 2.0,
    "verify_ms_fixed": 1.0,
    "verify_bytes_per_s": 0.3e12,
    "setup_s_per_call": 0.3,
    "setup_s_per_entry": 0.05,
    # imports, the generator's and the probes' NVRTC compiles, our plans' first compiles
    "process_start_s": 45.0,
}
FLOOR_BYTES_PER_S = 4.49e12
# Checked entries timed per call besides torch.topk: ours, FlashInfer, SGLang and two vLLM
# entries; then two unchecked probes (the empty kernel and the bare read).
CHECKED_ENTRIES = 5
PROBES = 2


def estimate_call_seconds(call: Call, reps: int, warmup: int, l2: int = 50 * MIB) -> float:
    """Estimated driver seconds for one call: per entry the eager call and its check, one
    capture and two checks per input copy, and `reps` timed rounds of graph_timing's size."""
    from graph_timing import input_copies, replays_per_round

    e = ESTIMATE
    copies = input_copies(call.dense_bytes, l2)
    floor_ms = call.valid_bytes / FLOOR_BYTES_PER_S * 1e3
    verify_ms = e["verify_ms_fixed"] + call.dense_bytes / e["verify_bytes_per_s"] * 1e3
    selector_ms = max(e["replay_min_ms"], e["peer_x_floor"] * floor_ms)
    torch_ms = max(e["replay_min_ms"],
                   e["torch_x_floor"] * call.dense_bytes / FLOOR_BYTES_PER_S * 1e3)
    entries = ([(selector_ms, True)] * CHECKED_ENTRIES + [(torch_ms, True)]
               + [(e["replay_min_ms"], False), (max(e["replay_min_ms"], floor_ms), False)])
    total_ms = 0.0
    for latency, checked in entries:
        total_ms += (reps * replays_per_round(latency, copies) + warmup * copies) * latency
        total_ms += copies * e["capture_ms_per_copy"]
        if checked:
            total_ms += (1 + 2 * copies) * verify_ms
    return total_ms / 1e3 + e["setup_s_per_call"] + e["setup_s_per_entry"] * len(entries)


def estimate_seconds(calls: list, reps: int, warmup: int) -> float:
    return ESTIMATE["process_start_s"] + sum(estimate_call_seconds(c, reps, warmup) for c in calls)


def format_call_list(calls: list, reps: int, warmup: int) -> str:
    """One line per call (name kind rows width min/max length, est. seconds) and the total."""
    lines = []
    for c in calls:
        lengths = c.lengths()
        lines.append(f"{c.name}\t{c.kind}\t{c.rows}\t{c.width}\t{min(lengths)}\t{max(lengths)}\t"
                     f"{estimate_call_seconds(c, reps, warmup):.1f}")
    total = estimate_seconds(calls, reps, warmup)
    lines.append(f"# {len(calls)} calls, estimated {total:.0f} s ({math.ceil(total / 60)} min) "
                 f"with reps={reps}, warmup={warmup}")
    return "\n".join(lines) + "\n"
