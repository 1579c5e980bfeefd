"""The call interface's CUDA path in Python (`topk._cuda_call`, `topk.Selector`, the compat
entry points), run without a GPU: CPU tensors stand in for CUDA ones and the launches are
recorded instead of made, with every array read at launch time (a converted copy is freed once
the call returns). What the kernels then write is test_gpu_call.py's business."""

from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import topk  # noqa: E402
from topk import _call, _cuda_call, _native, _select, compat  # noqa: E402
from topk._call import Options  # noqa: E402

ROWS, WIDTH, K = 4, 300, 8


def ints_at(ptr: int, n: int) -> list:
    return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_int32)), (n,)).tolist() if ptr else None


@pytest.fixture
def launches(monkeypatch):
    made = []

    def record(index, stream, scores, dtype, rows, width, pitch, lengths, out, out_pitch, k, io, buffers, check):
        values, starts, ends, seq_lens, next_n, offsets, paged, prior, boundary = buffers
        table, columns, table_pitch, page_size, page_rows, table_rows = paged
        groups = rows // next_n
        table_len = ((table_rows if page_rows else rows) - 1) * table_pitch + columns if table else 0
        made.append(dict(
            index=index, stream=stream, scores=scores, dtype=dtype, rows=rows, width=width, pitch=pitch,
            lengths=ints_at(lengths, rows), out=out, out_pitch=out_pitch, k=k, io=io, values=values,
            starts=ints_at(starts, rows), ends=ints_at(ends, rows), seq_lens=ints_at(seq_lens, groups),
            next_n=next_n, offsets=ints_at(offsets, rows), table=ints_at(table, table_len), columns=columns,
            table_pitch=table_pitch, page_size=page_size, page_rows=ints_at(page_rows, rows),
            table_rows=table_rows, prior=prior, boundary=boundary, check=check, pointers=buffers,
        ))
        return 0

    monkeypatch.setattr(_native, "cuda_select_call", record)
    monkeypatch.setattr(_select, "_raw_stream", lambda index: 4321)
    monkeypatch.setattr(_cuda_call._nvrtc, "preload", lambda: None)
    monkeypatch.setattr(_cuda_call, "_capturing", lambda: False)
    return made


def call(scores, k=K, lengths=None, out=None, check=False, **kw):
    """`topk.select` on a CUDA tensor, with a CPU tensor standing in."""
    names = ("values", "sorted", "deterministic", "starts", "ends", "relative_to_start", "seq_lens", "next_n",
             "offsets", "page_table", "page_size", "prior", "prior_bins", "boundary", "page_rows")
    defaults = dict(values=False, sorted=False, deterministic=False, relative_to_start=True, boundary=False)
    opts = Options(*[kw.get(n, defaults.get(n)) for n in names])
    return _select._torch_cuda_call(scores, k, lengths, out, opts, check)


def scores(rows=ROWS, width=WIDTH, dtype=torch.float32):
    return torch.randn(rows, width).to(dtype)


# ------------------------------------------------------------------------ the single source
def test_the_gpu_refusals_come_from_the_spec():
    """Every float32 interface is generated on the GPU; 16-bit scores are refused with the
    sentence of `topk_runtime::cuda::gpu_refusal` until the runtime takes them."""
    sources = ["lengths", "window", "window_absolute", "decode"]
    transforms = ["none", "offset", "paged", "paged_rows"]
    flags = [False, True]
    for v, s, d, r, t in itertools.product(flags, flags, flags, sources, transforms):
        assert _native.gpu_unsupported("f32", (v, s, d, r, t, "none", False)) is None
    for dtype in ("f16", "bf16"):
        why = _native.gpu_unsupported(dtype, _call.PLAIN_IO)
        if why is None:
            continue  # the kernels generate it: the GPU tests cover it
        assert f"`dtype={dtype}`" in why and "CPU" in why
        error = _call.gpu_refusal(dtype, _call.PLAIN_IO)
        assert isinstance(error, NotImplementedError) and why in str(error)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_scores_follow_the_spec(launches, dtype):
    name = {torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
    why = _native.gpu_unsupported(name, _call.PLAIN_IO)
    s = scores(dtype=dtype)
    if why is not None:
        with pytest.raises(NotImplementedError) as e:
            _select._torch_cuda(s, K, None, None, False)
        assert why in str(e.value)
        with pytest.raises(NotImplementedError):
            call(s, values=True)
        assert launches == []
    else:
        idx, vals = call(s, values=True)
        (c,) = launches
        assert c["dtype"] == name and vals.dtype == dtype and c["values"] == vals.data_ptr()


# ---------------------------------------------------------------------------- eager calls
def test_windows_pass_in_place_and_int64_is_converted(launches):
    s = scores()
    starts = torch.tensor([0, 5, 100, 299], dtype=torch.int32)
    ends = torch.tensor([300, 6, 200, 300])  # int64: converted on the stream
    out = call(s, starts=starts, ends=ends)
    (c,) = launches
    assert c["io"] == (False, False, False, "window", "none", "none", False)
    assert c["pointers"][1] == starts.data_ptr() and c["pointers"][2] != ends.data_ptr()
    assert c["starts"] == [0, 5, 100, 299] and c["ends"] == [300, 6, 200, 300]
    assert (c["scores"], c["rows"], c["width"], c["pitch"], c["lengths"], c["stream"]) == (
        s.data_ptr(), ROWS, WIDTH, WIDTH, None, 4321)
    assert out.shape == (ROWS, K) and out.dtype == torch.int32 and c["out"] == out.data_ptr()


def test_absolute_windows_offsets_values_sorted_ties(launches):
    s = scores()
    starts = torch.tensor([0, 1, 2, 3])
    strided = torch.tensor([[7, 0], [8, 0], [9, 0], [10, 0]], dtype=torch.int32)[:, 0]
    offsets = torch.tensor([2**40, -(2**40), 5, 0])  # saturated into int32: the kernels flag them
    out = torch.zeros(ROWS, 3 * K, dtype=torch.int32)[:, K : 2 * K]
    idx, vals = call(s, out=out, starts=starts, ends=strided + 100, offsets=offsets, values=True,
                     sorted=True, deterministic=True, relative_to_start=False, check=True)
    (c,) = launches
    assert c["io"] == (True, True, True, "window_absolute", "offset", "none", False) and c["check"]
    assert c["offsets"] == [2**31 - 1, -(2**31), 5, 0]
    assert c["ends"] == [107, 108, 109, 110]
    assert idx is out and c["out_pitch"] == 3 * K
    assert vals.shape == (ROWS, K) and vals.dtype == torch.float32 and vals.stride(0) == 3 * K
    assert c["values"] == vals.data_ptr()


def test_values_and_out_share_their_pitch(launches):
    s = scores()
    vals = torch.empty(ROWS, 2 * K)[:, :K]
    idx, got = call(s, values=vals)
    assert got is vals and idx.stride(0) == 2 * K and launches[0]["out_pitch"] == 2 * K
    with pytest.raises(ValueError, match="same row stride"):
        call(s, values=vals, out=torch.empty(ROWS, K, dtype=torch.int32))
    with pytest.raises(TypeError, match="values must be float32"):
        call(s, values=torch.empty(ROWS, K, dtype=torch.float16))


def test_decode_rows(launches):
    s = scores(rows=6)
    seq_lens = torch.tensor([50, 300, 10], dtype=torch.int32)
    call(s, seq_lens=seq_lens, next_n=2)
    (c,) = launches
    assert c["io"][3] == "decode" and c["seq_lens"] == [50, 300, 10] and c["next_n"] == 2
    with pytest.raises(ValueError, match="groups of next_n"):
        call(s, seq_lens=seq_lens, next_n=3)
    with pytest.raises(ValueError, match="at least 1"):
        call(s, seq_lens=seq_lens, next_n=0)


def test_page_tables_per_row_shared_and_converted(launches):
    s = scores()
    table = torch.arange(ROWS * 80, dtype=torch.int32).reshape(ROWS, 80)
    wide = torch.zeros(ROWS + 2, 100, dtype=torch.int32)
    wide[:, :80] = torch.arange(80)
    call(s, page_table=table, page_size=4)
    call(s, page_table=wide[:, :80], page_size=4)  # read in place at its row stride
    call(s, page_table=table[:1].long(), page_size=4)  # one shared row, int64: converted
    call(s, page_table=table.t().contiguous().t())  # column-strided: made contiguous
    a, b, c, d = launches
    assert (a["columns"], a["table_pitch"], a["page_size"], a["pointers"][6][0]) == (80, 80, 4, table.data_ptr())
    assert a["table"] == table.flatten().tolist() and a["io"][4] == "paged"
    assert (a["page_rows"], a["table_rows"]) == (None, 0)
    assert (b["columns"], b["table_pitch"], b["pointers"][6][0]) == (80, 100, wide.data_ptr())
    assert (c["columns"], c["table_pitch"], c["table"]) == (80, 0, list(range(80)))
    assert (d["columns"], d["table_pitch"], d["page_size"]) == (80, 80, 1) and d["table"] == table.flatten().tolist()


def test_page_rows_pass_the_map_and_the_whole_table(launches):
    """With a row map the table keeps all its rows (any number), each addressed at its pitch;
    int64 maps are saturated into int32 (so an entry beyond it still raises the status bit),
    int64, column-strided and expanded tables made contiguous, all of them."""
    s = scores()
    table = torch.arange(2 * 80, dtype=torch.int32).reshape(2, 80)
    wide = torch.zeros(3, 100, dtype=torch.int32)
    wide[:, :80] = torch.arange(80)
    rows32 = torch.tensor([1, 0, 1, 1], dtype=torch.int32)
    call(s, page_table=table, page_size=4, page_rows=rows32)
    call(s, page_table=wide[:, :80], page_rows=torch.tensor([2, 2, 0, 1]))  # in place; int64 map converted
    call(s, page_table=table.long(), page_rows=torch.tensor([0, 2**40, -(2**40), 1]))
    call(s, page_table=table[:1], page_rows=torch.zeros(ROWS, dtype=torch.int32))  # one row: pitch = columns
    call(s, page_table=table[:1].expand(6, 80), page_rows=rows32)  # row stride 0: made contiguous
    a, b, c, d, e = launches
    assert a["io"] == (False, False, False, "lengths", "paged_rows", "none", False)
    assert (a["columns"], a["table_pitch"], a["table_rows"], a["page_size"]) == (80, 80, 2, 4)
    assert a["pointers"][6][0] == table.data_ptr() and a["pointers"][6][4] == rows32.data_ptr()
    assert a["table"] == table.flatten().tolist() and a["page_rows"] == [1, 0, 1, 1]
    assert (b["columns"], b["table_pitch"], b["table_rows"], b["page_size"]) == (80, 100, 3, 1)
    assert b["pointers"][6][0] == wide.data_ptr() and b["page_rows"] == [2, 2, 0, 1]
    assert (c["table_pitch"], c["table_rows"], c["table"]) == (80, 2, table.flatten().tolist())
    assert c["page_rows"] == [0, 2**31 - 1, -(2**31), 1]
    assert (d["columns"], d["table_pitch"], d["table_rows"], d["table"]) == (80, 80, 1, list(range(80)))
    assert (e["table_pitch"], e["table_rows"]) == (80, 6) and e["table"] == list(range(80)) * 6


@pytest.mark.parametrize(
    "kw,error,match",
    [
        (dict(page_rows=torch.zeros(ROWS, dtype=torch.int32)), ValueError, "goes with page_table"),
        (dict(page_rows=torch.zeros(ROWS), page_table=torch.zeros(2, 10, dtype=torch.int32)), TypeError,
         "page_rows must be int32 or int64"),
        (dict(page_rows=torch.zeros(ROWS - 1, dtype=torch.int32), page_table=torch.zeros(2, 10, dtype=torch.int32)),
         ValueError, r"page_rows must have shape \[4\]"),
        (dict(page_rows=torch.zeros(ROWS, dtype=torch.int32), page_table=torch.zeros(10, dtype=torch.int32)),
         ValueError, r"\[table rows, pages\]"),
        (dict(page_rows=torch.zeros(ROWS, dtype=torch.int32), page_table=torch.zeros(0, 10, dtype=torch.int32)),
         ValueError, r"\[table rows, pages\]"),
        (dict(page_rows=torch.zeros(ROWS, dtype=torch.int32), page_table=torch.zeros(2, 0, dtype=torch.int32)),
         ValueError, r"\[table rows, pages\]"),
        (dict(page_rows=torch.zeros(ROWS, dtype=torch.int32), page_table=torch.zeros(2, 10)), TypeError,
         "page_table must be int32 or int64"),
        (dict(page_rows=torch.zeros(ROWS, dtype=torch.int32), page_table=torch.zeros(2, 10, dtype=torch.int32),
              offsets=torch.zeros(ROWS, dtype=torch.int32)), ValueError, "one index transform"),
    ],
)
def test_bad_page_rows_are_refused_before_any_launch(launches, kw, error, match):
    with pytest.raises(error, match=match):
        call(scores(), **kw)
    assert launches == []


def test_page_rows_status_names_the_row_from_a_cpu_rerun(monkeypatch, launches):
    """A row-map entry outside the table raises BAD_TRANSFORM on the GPU; check=True names the
    row by running the call's inputs through the CPU backend."""
    monkeypatch.setattr(_native, "cuda_select_call", lambda *a: 8)  # BAD_TRANSFORM
    table = torch.arange(2 * WIDTH, dtype=torch.int32).reshape(2, WIDTH)
    with pytest.raises(ValueError, match=r"status 0x8.*page_rows entry.*row 3: page_rows\[3\] is 5"):
        call(scores(), page_table=table, page_rows=torch.tensor([0, 1, 1, 5], dtype=torch.int32), check=True)


@pytest.mark.parametrize(
    "kw,error,match",
    [
        (dict(starts=torch.zeros(ROWS, dtype=torch.int32)), ValueError, "go together"),
        (dict(starts=torch.zeros(ROWS), ends=torch.zeros(ROWS, dtype=torch.int32)), TypeError, "int32 or int64"),
        (dict(starts=torch.zeros(3, dtype=torch.int32), ends=torch.zeros(3, dtype=torch.int32)), ValueError,
         r"shape \[4\]"),
        (dict(offsets=torch.zeros(ROWS, 2, dtype=torch.int32)), ValueError, r"shape \[4\]"),
        (dict(page_table=torch.zeros(2, 10, dtype=torch.int32)), ValueError, r"\[rows, pages\]"),
        (dict(page_table=torch.zeros(ROWS, 0, dtype=torch.int32)), ValueError, r"\[rows, pages\]"),
        (dict(page_table=torch.zeros(ROWS, 10), ), TypeError, "int32 or int64"),
        (dict(page_table=torch.zeros(ROWS, 10, dtype=torch.int32), page_size=0), ValueError, "at least 1"),
        (dict(offsets=torch.zeros(ROWS, dtype=torch.int32), page_table=torch.zeros(ROWS, 9, dtype=torch.int32)),
         ValueError, "one index transform"),
        (dict(next_n=2), ValueError, "goes with seq_lens"),
        (dict(relative_to_start=False), ValueError, "applies to row windows"),
    ],
)
def test_bad_arrays_are_refused_before_any_launch(launches, kw, error, match):
    s = scores()
    with pytest.raises(error, match=match):
        call(s, **kw)
    assert launches == []


def test_empty_calls(launches):
    idx, vals = call(scores(rows=0), values=True, starts=torch.zeros(0, dtype=torch.int32),
                     ends=torch.zeros(0, dtype=torch.int32))
    assert idx.shape == (0, K) and vals.shape == (0, K)
    idx, vals = call(scores(width=0), values=True)
    assert (idx == -1).all() and (vals == -float("inf")).all()
    assert launches == []


def test_status_bits_name_the_row_from_a_cpu_rerun(monkeypatch, launches):
    monkeypatch.setattr(_native, "cuda_select_call", lambda *a: 2)  # BAD_LENGTH
    s = scores()
    starts = torch.tensor([0, 50, 0, 0], dtype=torch.int32)
    ends = torch.tensor([300, 40, 300, 300], dtype=torch.int32)
    with pytest.raises(ValueError, match=r"status 0x2.*row 1 has the window"):
        call(s, starts=starts, ends=ends, check=True)


# ------------------------------------------------------------------ prior and boundary
PRIOR_IO = (False, True, True, "lengths", "none", "2/8", True)


def test_prior_and_boundary_follow_the_refusal(launches):
    """While `topk_runtime::cuda::gpu_refusal` names a row's prior and boundary output, a CUDA
    call with either raises NotImplementedError with its sentence, before anything is read or
    written."""
    for io in (PRIOR_IO, PRIOR_IO[:6] + (False,), PRIOR_IO[:5] + ("none", True)):
        why = _native.gpu_unsupported("f32", io)
        if why is None:
            continue  # the runtime runs them: test_gpu_call.py covers them
        assert "prior" in why and "CPU" in why
        s = scores()
        buf = torch.full((ROWS,), 7.0)
        kw = dict(prior=torch.zeros(ROWS)) if io[5] != "none" else {}
        with pytest.raises(NotImplementedError) as e:
            call(s, sorted=True, deterministic=True, boundary=buf if io[6] else False, **kw)
        assert why in str(e.value) and (buf == 7.0).all()
        with pytest.raises(NotImplementedError):
            topk.Selector(K, ROWS, WIDTH, device="cuda:0", prior=io[5] != "none", boundary=io[6])
    assert launches == []


@pytest.fixture
def unrefused(monkeypatch):
    """The GPU path as it will be once the runtime runs a row's prior and boundary output."""
    monkeypatch.setattr(_cuda_call, "gpu_refusal", lambda *a, **k: None)


def test_prior_and_boundary_pointers(launches, unrefused):
    s = scores()
    prior = torch.tensor([1.0, float("nan"), -float("inf"), 0.5])
    idx, b = call(s, prior=prior, boundary=True, sorted=True, deterministic=True)
    (c,) = launches
    assert c["io"] == (False, True, True, "lengths", "none", "2/8", True)
    assert c["prior"] == prior.data_ptr() and c["boundary"] == b.data_ptr()
    assert b.shape == (ROWS,) and b.dtype == torch.float32 and idx.shape == (ROWS, K)
    # In place: the boundary is the prior's buffer; margins as a pair; strided priors copied.
    state = torch.zeros(ROWS)
    idx, vals, got = call(s, prior=state, boundary=state, prior_bins=(1, 4), values=True)
    assert got is state and launches[1]["prior"] == launches[1]["boundary"] == state.data_ptr()
    assert launches[1]["io"][5:] == ("1/4", True) and launches[1]["values"] == vals.data_ptr()
    strided = torch.zeros(ROWS, 2)[:, 0]
    call(s, prior=strided)
    assert launches[2]["prior"] != strided.data_ptr() and launches[2]["boundary"] == 0
    assert launches[2]["io"][5:] == ("2/8", False)
    # Empty rows: NaN boundaries, no launch.
    idx, b = call(scores(width=0), prior=torch.zeros(ROWS), boundary=True)
    assert (idx == -1).all() and torch.isnan(b).all() and len(launches) == 3


@pytest.mark.parametrize(
    "kw,error,match",
    [
        (dict(prior=torch.zeros(ROWS, dtype=torch.float64)), TypeError, "prior must be float32"),
        (dict(prior=torch.zeros(ROWS - 1)), ValueError, r"prior must have shape \[4\]"),
        (dict(prior=torch.zeros(ROWS), prior_bins="9/2"), ValueError, "P <= R"),
        (dict(prior_bins="2/8"), ValueError, "goes with prior="),
        (dict(boundary=torch.zeros(ROWS - 1)), ValueError, "at least 4 elements"),
        (dict(boundary=torch.zeros(ROWS, dtype=torch.float16)), TypeError, "boundary must be float32"),
        (dict(boundary=torch.zeros(2 * ROWS)[::2]), ValueError, "stride 1"),
    ],
)
def test_bad_prior_and_boundary_are_refused_before_any_launch(launches, unrefused, kw, error, match):
    with pytest.raises(error, match=match):
        call(scores(), **kw)
    assert launches == []


# --------------------------------------------------------------------------------- Selector
class FakeCudaSelector:
    """Stands in for `_native.CudaSelector`: records its plan's form and its runs."""

    def __init__(self, device, k, max_rows, max_width, dtype="f32", io=None):
        self.form = (dtype, io)
        self.runs = []
        self.spec, self.family, self.workspace_bytes = "k=...", "persistent", 0

    def run(self, stream, scores, rows, width, pitch, lengths, live, out, out_pitch, buffers=None):
        self.runs.append(dict(lengths=lengths, live=live, out=out, out_pitch=out_pitch, buffers=buffers))


@pytest.fixture
def fake_selector(monkeypatch):
    monkeypatch.setattr(_native, "CudaSelector", FakeCudaSelector)
    monkeypatch.setattr(topk._selector._nvrtc, "preload", lambda: None)


def run_selector(sel, s, lengths=None, **kw):
    opts = sel._options(kw.pop("values", None), kw.pop("starts", None), kw.pop("ends", None),
                        kw.pop("seq_lens", None), kw.pop("next_n", None), kw.pop("offsets", None),
                        kw.pop("page_table", None), kw.pop("page_size", None), lengths,
                        kw.pop("prior", None), kw.pop("boundary", None), kw.pop("page_rows", None))
    return sel._launch(s, topk._arrays.view(s, "scores"), lengths, kw.pop("out", None), kw.pop("live_rows", None),
                       opts, 77)


def test_selector_plans_its_form_and_passes_arrays_in_place(fake_selector):
    plain = topk.Selector(K, ROWS, WIDTH, device="cuda:0")
    assert plain._native.form == ("f32", None)
    sel = topk.Selector(K, ROWS, WIDTH, device="cuda:0", values=True, sorted=True, rows="window",
                        relative_to_start=False, transform="paged")
    assert sel._native.form == ("f32", (True, True, False, "window_absolute", "paged", "none", False))
    s = scores()
    starts = torch.zeros(ROWS, dtype=torch.int32)
    ends = torch.full((ROWS,), WIDTH, dtype=torch.int32)
    table = torch.zeros(1, 100, dtype=torch.int32)
    live = torch.tensor([2], dtype=torch.int32)
    idx, vals = run_selector(sel, s, starts=starts, ends=ends, page_table=table, page_size=3, live_rows=live)
    (r,) = sel._native.runs
    assert r["buffers"] == (vals.data_ptr(), starts.data_ptr(), ends.data_ptr(), 0, 1, 0,
                            (table.data_ptr(), 100, 0, 3, 0, 0), 0, 0)
    assert r["live"] == live.data_ptr() and r["out"] == idx.data_ptr()


def test_selector_converts_nothing_and_takes_only_its_form(fake_selector):
    sel = topk.Selector(K, ROWS, WIDTH, device="cuda:0", rows="decode", transform="offset")
    s = scores()
    ok = dict(seq_lens=torch.tensor([100, 200], dtype=torch.int32), next_n=2,
              offsets=torch.zeros(ROWS, dtype=torch.int32))
    run_selector(sel, s, **ok)
    assert sel._native.runs[0]["buffers"][3:6] == (ok["seq_lens"].data_ptr(), 2, ok["offsets"].data_ptr())
    with pytest.raises(TypeError, match="contiguous int32"):
        run_selector(sel, s, **{**ok, "offsets": torch.zeros(ROWS, dtype=torch.int64)})
    with pytest.raises(TypeError, match="not planned for starts"):
        run_selector(sel, s, starts=torch.zeros(ROWS, dtype=torch.int32), **ok)
    with pytest.raises(TypeError, match="needs offsets"):
        run_selector(sel, s, seq_lens=ok["seq_lens"], next_n=2)
    with pytest.raises(TypeError, match="not planned for values"):
        run_selector(sel, s, values=True, **ok)
    with pytest.raises(TypeError, match="planned for float32"):
        run_selector(sel, s.half(), **ok)
    with pytest.raises(ValueError, match="rows must be one of"):
        topk.Selector(K, ROWS, WIDTH, device="cuda:0", rows="ragged")


def test_selector_with_prior_and_boundary(fake_selector, monkeypatch):
    monkeypatch.setattr(topk._selector, "gpu_refusal", lambda *a, **k: None)
    sel = topk.Selector(K, ROWS, WIDTH, device="cuda:0", sorted=True, deterministic=True, prior=True,
                        prior_bins="1/4", boundary=True)
    assert sel._native.form == ("f32", (False, True, True, "lengths", "none", "1/4", True))
    s = scores()
    state = torch.zeros(ROWS)
    idx, got = run_selector(sel, s, prior=state, boundary=state)
    assert got is state and sel._native.runs[0]["buffers"][7:] == (state.data_ptr(), state.data_ptr())
    idx, b = run_selector(sel, s, prior=state)
    assert sel._native.runs[1]["buffers"][7:] == (state.data_ptr(), b.data_ptr()) and b.shape == (ROWS,)
    with pytest.raises(TypeError, match="contiguous float32"):
        run_selector(sel, s, prior=torch.zeros(ROWS, 2)[:, 0])
    with pytest.raises(TypeError, match="needs prior="):
        run_selector(sel, s)


def test_selector_with_page_rows(fake_selector):
    sel = topk.Selector(K, ROWS, WIDTH, device="cuda:0", transform="paged_rows")
    assert sel._native.form == ("f32", (False, False, False, "lengths", "paged_rows", "none", False))
    s = scores()
    table = torch.zeros(3, 100, dtype=torch.int32)
    page_rows = torch.tensor([2, 0, 1, 2], dtype=torch.int32)
    run_selector(sel, s, page_table=table, page_size=5, page_rows=page_rows)
    assert sel._native.runs[0]["buffers"][6] == (table.data_ptr(), 100, 100, 5, page_rows.data_ptr(), 3)
    with pytest.raises(TypeError, match="needs page_rows"):
        run_selector(sel, s, page_table=table)
    with pytest.raises(TypeError, match="contiguous int32"):
        run_selector(sel, s, page_table=table, page_rows=page_rows.long())
    with pytest.raises(TypeError, match="contiguous int32"):
        run_selector(sel, s, page_table=table[:1].expand(3, 100), page_rows=page_rows)
    paged = topk.Selector(K, ROWS, WIDTH, device="cuda:0", transform="paged")
    with pytest.raises(TypeError, match="not planned for page_rows"):
        run_selector(paged, s, page_table=table[:1], page_rows=page_rows)


def test_cpu_selector_runs_the_interface():
    s = scores(rows=6)
    sel = topk.Selector(K, 6, WIDTH, device="cpu", values=True, sorted=True, deterministic=True,
                        rows="decode", transform="offset")
    seq_lens = torch.tensor([20, 300, 5], dtype=torch.int32)
    offsets = torch.arange(6, dtype=torch.int32) * 1000
    idx, vals = sel(s, seq_lens=seq_lens, next_n=2, offsets=offsets)
    want_idx, want_vals = topk.select(s, K, seq_lens=seq_lens, next_n=2, offsets=offsets, values=True,
                                      sorted=True, deterministic=True)
    assert torch.equal(idx, want_idx) and torch.equal(vals, want_vals)
    out = torch.full((6, K), 7, dtype=torch.int32)
    idx, vals = sel(s, seq_lens=seq_lens, next_n=2, offsets=offsets, out=out, live_rows=torch.tensor([4]))
    assert torch.equal(out[:4], want_idx[:4]) and (out[4:] == 7).all()
    # A row map may name any table row, so fewer live rows keep the whole table.
    sel = topk.Selector(K, 6, WIDTH, device="cpu", sorted=True, deterministic=True, transform="paged_rows")
    table = torch.stack([torch.randperm(WIDTH) + 1000 * r for r in range(3)]).to(torch.int32)
    page_rows = torch.tensor([2, 2, 1, 0, 0, 1], dtype=torch.int32)
    want = topk.select(s, K, page_table=table[page_rows.long()], sorted=True, deterministic=True)
    assert torch.equal(sel(s, page_table=table, page_rows=page_rows), want)
    out = torch.full((6, K), 7, dtype=torch.int32)
    sel(s, page_table=table, page_rows=page_rows, out=out, live_rows=torch.tensor([2]))
    assert torch.equal(out[:2], want[:2]) and (out[2:] == 7).all()


# ------------------------------------------------------------------------- compat on CUDA
def test_compat_passes_the_interface_to_the_fused_call(monkeypatch):
    """On CUDA tensors the entry points make one fused call (recorded here)."""
    made = []

    def record(scores, k, lengths=None, **kw):
        made.append(dict(k=k, lengths=lengths, **kw))
        return kw.get("out")

    monkeypatch.setattr(compat, "select", record)
    monkeypatch.setattr(compat, "_on_host", lambda x: False)
    logits = scores(rows=6)
    starts = torch.tensor([0, 0, 10, 10, 250, 300], dtype=torch.int32)
    ends = torch.tensor([5, 400, 50, 5, 300, 300], dtype=torch.int32)
    out = torch.empty(6, K, dtype=torch.int32)
    compat.top_k_per_row_prefill(logits, starts, ends, out, 6, WIDTH, 1, K)
    (p,) = made
    assert p["starts"] is not None and p["ends"].tolist() == [5, 300, 50, 10, 300, 300]
    made.clear()
    seq_lens = torch.tensor([10, 20, 30], dtype=torch.int32)
    compat.top_k_per_row_decode(logits, 2, seq_lens, out, 6, WIDTH, 1, K)
    assert made[0]["seq_lens"].tolist() == [10, 20, 30] and made[0]["next_n"] == 2
    made.clear()
    table = torch.zeros(6, 40, dtype=torch.int32)
    compat.topk_transform_paged_v2(logits, seq_lens.repeat(2), table, out, 8)
    assert made[0]["page_table"] is table and made[0]["page_size"] == 8
    made.clear()
    # FlashInfer's row_to_batch is the row map: passed as it is, the table not gathered.
    table = torch.zeros(2, WIDTH, dtype=torch.int32)
    row_to_batch = torch.tensor([0, 0, 1, 1, 0, 1], dtype=torch.int32)
    compat.top_k_page_table_transform(logits, table, seq_lens.repeat(2), K, row_to_batch)
    assert made[0]["page_table"] is table and made[0]["page_rows"] is row_to_batch and made[0]["page_size"] == 1
