"""The call interface on CUDA tensors (skipped without a usable GPU): every option of
`topk.select` and `topk.Selector` on the GPU against the CPU backend on the same rows.

With `sorted=True, deterministic=True` the outputs are canonical, so indices and values must be
byte-equal to the CPU's; otherwise the GPU's output is verified by `reference.check_call` (the
selected values are the top-K multiset, the indices are written as the transform says, values
bit for bit, order and tie rules as asked) and, with lowest ties, its index sets equal the
CPU's. Scores outside every row's window are NaN and every call passes `check=True` (or
`Selector.check`), so a kernel that reads outside a window fails. Also: every kernel family the
planner picks, CUDA graph capture and replay with new windows, tables and row counts,
`torch.compile(fullgraph=True)`, the status bits with the row named, the compat entry points on
CUDA against the same entry points on the CPU (and inside a graph capture), a row's prior and
boundary output (a decode loop against the CPU, adversarial priors, a captured Selector), and
16-bit scores and the prior as `topk_runtime::cuda::gpu_refusal` says (compared like float32, or refused with its
sentence where it names them). Run on a GPU host by bench/python_gpu.sh.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import topk  # noqa: E402
from topk import _call, _native, compat  # noqa: E402
from reference import check_call, row_windows  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible to PyTorch", allow_module_level=True)
_WHY = topk.cuda_status(0)
if _WHY is not None:
    pytest.skip(f"the kernels cannot run here: {_WHY}", allow_module_level=True)

DEV = torch.device("cuda", 0)
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
BITS = {"f32": (torch.int32, np.uint32), "f16": (torch.int16, np.uint16), "bf16": (torch.int16, np.uint16)}


def refused(dtype: str) -> bool:
    """Whether the GPU refuses `dtype` scores (then the test asserts the refusal's text)."""
    why = _native.gpu_unsupported(dtype, _call.PLAIN_IO)
    if why is None:
        return False
    s = torch.randn(4, 1000, device=DEV).to(DTYPES[dtype])
    with pytest.raises(NotImplementedError) as e:
        topk.select(s, 8, sorted=True)
    assert why in str(e.value)
    return True


# ---------------------------------------------------------------------------------- inputs
def adversarial_rows(rows: int, width: int, k: int, seed: int) -> torch.Tensor:
    """float64 rows on the CPU: random, heavy ties at every rank, +-inf, signed zeros only,
    subnormals, all equal, few levels, repeating."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=g, dtype=torch.float64)
    kinds = 8
    for r in range(rows):
        kind = r % kinds
        if kind == 1:
            x[r] = torch.round(x[r] * 4) / 4
        elif kind == 2:
            x[r, ::97] = float("inf")
            x[r, 1::89] = -float("inf")
        elif kind == 3:
            x[r] = torch.where(x[r] > 0, 0.0, -0.0)
            x[r, : k // 2] = 1.0
        elif kind == 4:
            x[r] = x[r] * 1e-40
        elif kind == 5:
            x[r] = 0.5
        elif kind == 6:
            x[r] = torch.floor(x[r] * 1.5)
        elif kind == 7:
            x[r] = torch.arange(width, dtype=torch.float64) % 7
    return x


def call_arrays(src: str, tf: str, rows: int, width: int, k: int, seed: int, page_size: int):
    """(keyword arguments, reference arguments, windows) of one call on the CPU: every row
    source and transform, with lengths and windows at 0, 1, K - 1, K, K + 1, the row's end and
    middle, decode groups of 3 (2 where the row count is not a multiple of 3) and page tables of
    distinct pages (`paged_rows`: a table of fewer rows than the scores, read through a row map;
    the reference gets the table gathered row by row)."""
    g = np.random.default_rng(seed)
    edge = [0, 1, k - 1, k, k + 1, width, width // 2, width - 1]
    lens = np.array([edge[r] if r < len(edge) else g.integers(0, width + 1) for r in range(rows)], np.int64)
    kw, ref = {}, {}
    if src == "lengths":
        kw["lengths"] = torch.from_numpy(lens.astype(np.int32))
        ref["lengths"] = lens
    elif src.startswith("window"):
        starts = np.array([g.integers(0, width - n + 1) for n in lens], np.int64)
        starts[: min(rows, 3)] = [width - lens[r] for r in range(min(rows, 3))]  # at the row's end
        ends = starts + lens
        kw["starts"], kw["ends"] = torch.from_numpy(starts.astype(np.int32)), torch.from_numpy(ends.astype(np.int32))
        ref["starts"], ref["ends"] = starts, ends
        if src == "window_abs":
            kw["relative_to_start"] = False
    elif src == "decode":
        next_n = 3 if rows % 3 == 0 else 2
        assert rows % next_n == 0
        seq = np.array([g.integers(next_n - 1, width + 1) for _ in range(rows // next_n)], np.int64)
        seq[0] = next_n - 1  # lengths 0, 1, 2
        seq[-1] = width  # the last row is the whole width
        kw["seq_lens"], kw["next_n"] = torch.from_numpy(seq.astype(np.int32)), next_n
        ref["seq_lens"], ref["next_n"] = seq, next_n
    windows = row_windows(rows, width, **ref)
    tref = {}
    if tf == "offset":
        offsets = g.integers(0, 1 << 24, rows).astype(np.int32)
        kw["offsets"] = torch.from_numpy(offsets)
        tref["offsets"] = offsets
    elif tf == "paged_rows":
        pages = -(-width // page_size)
        table_rows = rows // 3 + 1
        table = np.stack([g.permutation(pages) + pages * r for r in range(table_rows)]).astype(np.int32)
        page_rows = g.integers(0, table_rows, rows).astype(np.int32)
        kw["page_table"], kw["page_size"] = torch.from_numpy(table), page_size
        kw["page_rows"] = torch.from_numpy(page_rows)
        tref["table"], tref["page_size"] = table[page_rows], page_size
    elif tf.startswith("paged"):
        pages = -(-width // page_size)
        table_rows = 1 if tf == "paged_shared" else rows
        table = np.stack([g.permutation(pages) + pages * r for r in range(table_rows)]).astype(np.int32)
        kw["page_table"], kw["page_size"] = torch.from_numpy(table), page_size
        tref["table"], tref["page_size"] = table, page_size
    return kw, tref, windows


def masked(x: torch.Tensor, windows) -> torch.Tensor:
    """`x` with NaN outside each row's window (never read by a correct kernel)."""
    out = torch.full_like(x, float("nan"))
    for r, (start, n) in enumerate(windows):
        out[r, start : start + n] = x[r, start : start + n]
    return out


def to_dev(kw: dict) -> dict:
    return {n: v.to(DEV) if isinstance(v, torch.Tensor) else v for n, v in kw.items()}


def compare(dtype, scores_cpu, k, kw, tref, windows, got, sorted_, deterministic, values, absolute, label):
    """The GPU's output `got` against the CPU backend's on the same call."""
    want = topk.select(scores_cpu, k, **kw, sorted=sorted_, deterministic=deterministic, values=values)
    got_idx, got_vals = got if values else (got, None)
    want_idx, want_vals = want if values else (want, None)
    got_idx = got_idx.cpu()
    ints, np_bits = BITS[dtype]
    if sorted_ and deterministic:
        assert torch.equal(got_idx, want_idx), f"{label}: indices differ from the CPU's"
        if values:
            assert torch.equal(got_vals.cpu().view(ints), want_vals.view(ints)), f"{label}: values differ"
        return
    if deterministic:
        assert torch.equal(got_idx.sort(dim=1).values, want_idx.sort(dim=1).values), f"{label}: index sets differ"
    x = scores_cpu
    bits = x.view(ints).numpy().view(np_bits)
    neg_inf = torch.tensor(-float("inf"), dtype=x.dtype).view(ints).numpy().view(np_bits)[()]
    vals_bits = None if got_vals is None else got_vals.cpu().view(ints).numpy().view(np_bits)
    check_call(x.double().numpy(), bits, neg_inf, k, windows, got_idx.numpy(), vals_bits, sorted_=sorted_,
               deterministic=deterministic, absolute=absolute, **tref)


SOURCES = ["lengths", "window_rel", "window_abs", "decode"]
TRANSFORMS = ["none", "offset", "paged", "paged_shared", "paged_rows"]
OPTIONS = [(False, False, False), (True, False, False), (False, True, False), (False, False, True),
           (True, True, True), (False, True, True)]


# ------------------------------------------------------------------------------ the options
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("src,tf", list(itertools.product(SOURCES, TRANSFORMS)))
def test_every_option_against_the_cpu(dtype, src, tf):
    if dtype != "f32" and refused(dtype):
        return
    rows, width, k = 24, 3000, 64
    for n, (sorted_, deterministic, values) in enumerate(OPTIONS):
        page_size = [1, 3, 64][n % 3]
        kw, tref, windows = call_arrays(src, tf, rows, width, k, seed=n, page_size=page_size)
        x = masked(adversarial_rows(rows, width, k, seed=n), windows).to(DTYPES[dtype])
        got = topk.select(x.to(DEV), k, **to_dev(kw), sorted=sorted_, deterministic=deterministic,
                          values=values, check=True)
        label = f"{dtype} {src} {tf} sorted={sorted_} deterministic={deterministic} values={values}"
        compare(dtype, x, k, kw, tref, windows, got, sorted_, deterministic, values, src == "window_abs", label)


# One shape per kernel family of the default map (as test_gpu.py): (family, rows, width).
FAMILIES = [
    ("rowlocal_streaming", 64, 16384),
    ("persistent", 1024, 8192),
    ("rowlocal_streaming", 64, 32768),
    ("persistent", 512, 131072),
    ("cluster", 4, 262144),
    ("cluster", 16, 1 << 20),
    ("staged", 16, 1 << 22),
]


@pytest.mark.parametrize("family,rows,width", FAMILIES)
def test_every_family_writes_canonical_bytes(family, rows, width):
    k = 2048
    cc = torch.cuda.get_device_capability(DEV)
    if family == "cluster" and cc[0] < 9:
        pytest.skip("cluster kernels need compute capability 9.0")
    for n, (src, tf) in enumerate([("window_rel", "offset"), ("decode", "paged"), ("lengths", "none")]):
        rows_here = rows
        kw, tref, windows = call_arrays(src, tf, rows_here, width, k, seed=rows + n, page_size=64)
        sel = topk.Selector(k, rows_here, width, device=DEV, values=True, sorted=True, deterministic=True,
                            rows={"window_rel": "window"}.get(src, src), transform={"paged": "paged"}.get(tf, tf))
        assert sel.family == family, f"{rows_here} x {width}: planner chose {sel.family} ({sel.spec})"
        x = masked(adversarial_rows(rows_here, width, k, seed=n).float(), windows)
        dev_kw = to_dev(kw)
        dev_kw.pop("lengths", None)
        lengths = to_dev(kw).get("lengths")
        got = sel(x.to(DEV), lengths, **dev_kw)
        sel.check(x.to(DEV), lengths, **dev_kw)
        compare("f32", x, k, kw, tref, windows, got, True, True, True, False, f"{family} {src} {tf}")
        # The eager call (its own plan for the shape's bucket) writes the same bytes.
        eager = topk.select(x.to(DEV), k, **to_dev(kw), values=True, sorted=True, deterministic=True, check=True)
        assert torch.equal(eager[0], got[0]) and torch.equal(eager[1].view(torch.int32), got[1].view(torch.int32))


# --------------------------------------------------------------------- capture and replay
def test_selector_graph_replays_new_windows_tables_and_row_counts():
    rows, width, k = 96, 65536, 1024
    sel = topk.Selector(k, rows, width, device=DEV, values=True, sorted=True, deterministic=True,
                        rows="window", transform="paged")
    kw, _, windows = call_arrays("window_rel", "paged", rows, width, k, seed=1, page_size=16)
    dev = to_dev(kw)
    scores = masked(adversarial_rows(rows, width, k, seed=1).float(), windows).to(DEV)
    live = torch.tensor([rows], dtype=torch.int32, device=DEV)
    out = torch.full((rows, k), -7, dtype=torch.int32, device=DEV)
    vals = torch.full((rows, k), 7.0, device=DEV)
    args = dict(out=out, values=vals, live_rows=live, starts=dev["starts"], ends=dev["ends"],
                page_table=dev["page_table"], page_size=16)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        sel(scores, **args)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        sel(scores, **args)
    for m, seed in ((rows, 2), (50, 3), (1, 4), (0, 5)):
        kw, tref, windows = call_arrays("window_rel", "paged", rows, width, k, seed=seed, page_size=16)
        x = masked(adversarial_rows(rows, width, k, seed=seed).float(), windows)
        scores.copy_(x.to(DEV))
        for name in ("starts", "ends", "page_table"):
            args[name].copy_(kw[name].to(DEV))
        live.fill_(m)
        out.fill_(-7)
        vals.fill_(7.0)
        graph.replay()
        torch.cuda.synchronize()
        sel.check(scores, **{n: args[n] for n in ("starts", "ends", "page_table")}, page_size=16)
        if m:
            part = {n: (v[:m] if n != "page_size" else v) for n, v in kw.items()}
            compare("f32", x[:m], k, part, None, windows[:m], (out[:m], vals[:m]), True, True, True, False,
                    f"replay with {m} live rows")
        assert (out[m:] == -7).all() and (vals[m:] == 7.0).all(), "rows past the live count were written"


def test_eager_interface_call_inside_a_capture_plans_on_first_use():
    rows, width, k = 40, 70_000, 300
    kw, tref, windows = call_arrays("decode", "offset", 39, width, k, seed=9, page_size=1)
    x = masked(adversarial_rows(39, width, k, seed=9).float(), windows)
    scores, dev = x.to(DEV), to_dev(kw)
    out = torch.empty(39, k, dtype=torch.int32, device=DEV)
    vals = torch.empty(39, k, device=DEV)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        topk.select(scores, k, **dev, out=out, values=vals, sorted=True, deterministic=True)
    out.fill_(-7)
    graph.replay()
    torch.cuda.synchronize()
    compare("f32", x, k, kw, tref, windows, (out, vals), True, True, True, False, "captured eager call")
    with pytest.raises(ValueError, match="check=True"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            topk.select(scores, k, **dev, sorted=True, check=True)


def test_torch_compile_fullgraph_with_the_interface():
    rows, width, k = 64, 131072, 2048
    kw, tref, windows = call_arrays("window_abs", "offset", rows, width, k, seed=11, page_size=1)
    x = masked(adversarial_rows(rows, width, k, seed=11).float(), windows)
    dev = to_dev(kw)

    def f(s, starts, ends, offsets):
        idx, vals = topk.select(s, k, starts=starts, ends=ends, offsets=offsets, relative_to_start=False,
                                values=True, sorted=True, deterministic=True)
        return idx, vals * 2

    compiled = torch.compile(f, fullgraph=True)
    idx, twice = compiled(x.to(DEV), dev["starts"], dev["ends"], dev["offsets"])
    compare("f32", x, k, kw, tref, windows, (idx, twice / 2), True, True, True, True, "torch.compile")


# ------------------------------------------------------------------ prior and boundary
PRIOR_IO = (True, True, True, "lengths", "none", "2/8", True)


def test_prior_and_boundary_against_the_cpu():
    """A decode loop on the GPU, each step's boundary the next step's prior (written in place),
    rows growing: every step byte-equal to the CPU backend with the same prior and to the GPU
    without one, boundaries equal to the CPU's; adversarial priors give the same bytes. While
    `topk_runtime::cuda::gpu_refusal` names the prior, the call raises its sentence instead."""
    why = _native.gpu_unsupported("f32", PRIOR_IO)
    if why is not None:
        with pytest.raises(NotImplementedError) as e:
            topk.select(torch.randn(4, 1000, device=DEV), 8, prior=torch.zeros(4, device=DEV), boundary=True)
        assert why in str(e.value)
        with pytest.raises(NotImplementedError):
            topk.Selector(8, 4, 1000, device=DEV, prior=True, boundary=True)
        return
    k, width = 512, 40_000
    g = torch.Generator().manual_seed(21)
    canon = dict(values=True, sorted=True, deterministic=True)

    def same_boundary(a, b):
        a, b = a.cpu(), b.cpu()
        return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num().view(torch.int32),
                                                                  b.nan_to_num().view(torch.int32))

    x = adversarial_rows(16, width, k, seed=21).float()
    lengths = torch.randint(0, width + 1, (16,), generator=g, dtype=torch.int32)
    lengths[:3] = torch.tensor([k, k + 1, width], dtype=torch.int32)
    state = torch.full((16,), float("nan"), device=DEV)
    for step in range(6):
        dev_x, dev_l = x.to(DEV), lengths.to(DEV)
        prior_cpu = state.cpu()
        idx, vals, b = topk.select(dev_x, k, dev_l, prior=state, boundary=state, check=True, **canon)
        want = topk.select(x, k, lengths, prior=prior_cpu, boundary=True, **canon)
        plain = topk.select(dev_x, k, dev_l, check=True, **canon)
        assert b is state
        assert torch.equal(idx.cpu(), want[0]) and torch.equal(vals.cpu().view(torch.int32), want[1].view(torch.int32))
        assert torch.equal(idx, plain[0]), f"step {step}: the prior changed the indices"
        assert same_boundary(state, want[2]), f"step {step}: boundary differs from the CPU's"
        # Rows grow: old rows drift and see one more token; new rows have no prior.
        x = torch.cat([x + 0.01 * torch.randn(x.shape, generator=g), torch.randn(4, width, generator=g)])
        lengths = torch.cat([(lengths + 1).clamp(max=width),
                             torch.randint(0, width + 1, (4,), generator=g, dtype=torch.int32)])
        state = torch.cat([state, torch.full((4,), float("nan"), device=DEV)])
    # Adversarial priors and margins: the same bytes, the same boundary.
    dev_x, dev_l = x.to(DEV), lengths.to(DEV)
    rows = x.shape[0]
    want = topk.select(dev_x, k, dev_l, boundary=True, check=True, **canon)
    f32_max = torch.finfo(torch.float32).max
    garbage = torch.randint(-(2**31), 2**31 - 1, (rows,), generator=g, dtype=torch.int32).view(torch.float32)
    for name, prior in [("nan", float("nan")), ("+inf", float("inf")), ("-inf", -float("inf")),
                        ("max", f32_max), ("-max", -f32_max), ("zero", 0.0), ("garbage", garbage)]:
        prior = prior.to(DEV) if isinstance(prior, torch.Tensor) else torch.full((rows,), prior, device=DEV)
        for bins in ("0/0", "2/8", (64, 64)):
            got = topk.select(dev_x, k, dev_l, prior=prior, prior_bins=bins, boundary=True, check=True, **canon)
            assert torch.equal(got[0], want[0]), f"prior {name} {bins}: indices differ"
            assert torch.equal(got[1].view(torch.int32), want[1].view(torch.int32)), f"prior {name} {bins}: values"
            assert same_boundary(got[2], want[2]), f"prior {name} {bins}: boundary differs"
    # A Selector captured in a graph replays the step with the state carried on the device.
    sel = topk.Selector(k, rows, width, device=DEV, prior=True, boundary=True, **canon)
    state = want[2].clone()
    out = torch.empty(rows, k, dtype=torch.int32, device=DEV)
    vals = torch.empty(rows, k, device=DEV)
    sel(dev_x, dev_l, prior=state, boundary=state, out=out, values=vals)  # warm-up outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        sel(dev_x, dev_l, prior=state, boundary=state, out=out, values=vals)
    for _ in range(2):
        graph.replay()
        torch.cuda.synchronize()
        sel.check(dev_x, dev_l)
        assert torch.equal(out, want[0]) and same_boundary(state, want[2])


# --------------------------------------------------------------------------- status bits
def test_bad_windows_and_page_entries_are_reported_with_the_row():
    rows, width, k = 8, 20_000, 64
    x = torch.randn(rows, width, device=DEV)
    starts = torch.zeros(rows, dtype=torch.int32, device=DEV)
    ends = torch.full((rows,), width, dtype=torch.int32, device=DEV)
    ends[5] = width + 1
    with pytest.raises(ValueError, match=r"status.*row 5"):
        topk.select(x, k, starts=starts, ends=ends, check=True)
    ends[5] = width
    x[3, 777] = float("nan")
    with pytest.raises(ValueError, match=r"NaN.*row 3, column 777"):
        topk.select(x, k, starts=starts, ends=ends, sorted=True, check=True)
    x[3, 777] = 0.0
    table = torch.arange(rows * width, dtype=torch.int32, device=DEV).reshape(rows, width)
    table[6] = -1
    with pytest.raises(ValueError, match=r"transform.*row 6"):
        topk.select(x, k, page_table=table, check=True)
    # A row-map entry outside the table: its row is selected as empty, the others as without it.
    page_rows = torch.tensor([0, 1, 2, 3, 4, 5, 7, 8], dtype=torch.int32, device=DEV)
    out = torch.full((rows, k), 7, dtype=torch.int32, device=DEV)
    topk.select(x, k, page_table=table, page_rows=page_rows, out=out)
    with pytest.raises(ValueError, match=r"transform.*row 7: page_rows\[7\] is 8"):
        topk.select(x, k, page_table=table, page_rows=page_rows, check=True)
    assert (out[7] == -1).all()
    want = topk.select(x[:7], k, page_table=table, page_rows=page_rows[:7], check=True)
    assert torch.equal(rows_sorted(out[:7]), rows_sorted(want))
    sel = topk.Selector(k, rows, width, device=DEV, transform="paged_rows")
    sel(x, page_table=table, page_rows=page_rows)
    with pytest.raises(ValueError, match=r"row 7: page_rows\[7\] is 8"):
        sel.check(x, page_table=table, page_rows=page_rows)
    page_rows[7] = 0
    sel(x, page_table=table, page_rows=page_rows)
    sel.check(x, page_table=table, page_rows=page_rows)
    sel = topk.Selector(k, rows, width, device=DEV, transform="offset")
    offsets = torch.zeros(rows, dtype=torch.int32, device=DEV)
    offsets[2] = 2**31 - 10
    sel(x, offsets=offsets)
    with pytest.raises(ValueError, match=r"row 2: offset"):
        sel.check(x, offsets=offsets)
    offsets[2] = 0
    sel(x, offsets=offsets)
    sel.check(x, offsets=offsets)


def test_arrays_on_another_device_or_of_the_wrong_kind_are_refused():
    x = torch.randn(4, 1000, device=DEV)
    with pytest.raises(ValueError, match="move it there"):
        topk.select(x, 8, starts=torch.zeros(4, dtype=torch.int32), ends=torch.ones(4, dtype=torch.int32))
    with pytest.raises(TypeError, match="int32 or int64"):
        topk.select(x, 8, offsets=torch.zeros(4, device=DEV))
    sel = topk.Selector(8, 4, 1000, device=DEV, rows="window")
    with pytest.raises(TypeError, match="contiguous int32"):
        sel(x, starts=torch.zeros(4, dtype=torch.int64, device=DEV), ends=torch.ones(4, dtype=torch.int32, device=DEV))


# ------------------------------------------------------------------------ compat on CUDA
def distinct(rows: int, width: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    s = torch.randperm(rows * width, generator=g).reshape(rows, width).float()
    lengths = torch.randint(0, width + 1, (rows,), generator=g, dtype=torch.int32)
    lengths[:4] = torch.tensor([width, 2048, 5, 0], dtype=torch.int32)
    return s, lengths


def rows_sorted(x: torch.Tensor) -> torch.Tensor:
    return x.cpu().sort(dim=1).values


def test_compat_entry_points_on_cuda_match_the_cpu():
    k, rows, width = 2048, 48, 131072
    s, lengths = distinct(rows, width, 31)
    g = torch.Generator().manual_seed(5)
    d = lambda t: t.to(DEV)  # noqa: E731
    # SGLang paged transform, page sizes 1 and 64.
    for page_size in (1, 64):
        table = torch.randperm(rows * (width // page_size), generator=g).reshape(rows, -1).to(torch.int32)
        cpu_out = torch.empty(rows, k, dtype=torch.int32)
        gpu_out = torch.empty(rows, k, dtype=torch.int32, device=DEV)
        compat.topk_transform_paged_v2(s, lengths, table, cpu_out, page_size)
        compat.topk_transform_paged_v2(d(s), d(lengths), d(table), gpu_out, page_size, compat.plan_topk_v2(d(lengths)))
        assert torch.equal(rows_sorted(gpu_out), rows_sorted(cpu_out)), f"SGLang page size {page_size}"
    # FlashInfer ragged offsets and page table (with a row_to_batch map).
    offsets = torch.randint(0, 1 << 20, (rows,), generator=g, dtype=torch.int32)
    assert torch.equal(rows_sorted(compat.top_k_ragged_transform(d(s), d(offsets), d(lengths), k)),
                       rows_sorted(compat.top_k_ragged_transform(s, offsets, lengths, k)))
    table = torch.randperm(4 * width, generator=g).reshape(4, width).to(torch.int32)
    r2b = torch.randint(0, 4, (rows,), generator=g, dtype=torch.int32)  # the row map, fused
    assert torch.equal(rows_sorted(compat.top_k_page_table_transform(d(s), d(table), d(lengths), k, d(r2b))),
                       rows_sorted(compat.top_k_page_table_transform(s, table, lengths, k, r2b)))
    # vLLM prefill windows (ends past the width and before the start), decode with next_n 1 and 3,
    # persistent_topk.
    starts = torch.tensor([0] * 16 + [40000] * 16 + [90000] * 16, dtype=torch.int32)
    ends = starts + lengths
    ends[5] = starts[5] - 3
    cpu_out = torch.empty(rows, k, dtype=torch.int32)
    gpu_out = torch.empty(rows, k, dtype=torch.int32, device=DEV)
    compat.top_k_per_row_prefill(s, starts, ends, cpu_out, rows, width, 1, k)
    compat.top_k_per_row_prefill(d(s), d(starts), d(ends), gpu_out, rows, width, 1, k)
    assert torch.equal(rows_sorted(gpu_out), rows_sorted(cpu_out)), "vLLM prefill"
    for next_n in (1, 3):
        seq = lengths[: rows // next_n].clamp(min=next_n - 1)
        compat.top_k_per_row_decode(s, next_n, seq, cpu_out, rows, width, 1, k)
        compat.top_k_per_row_decode(d(s), next_n, d(seq), gpu_out, rows, width, 1, k)
        assert torch.equal(rows_sorted(gpu_out), rows_sorted(cpu_out)), f"vLLM decode next_n {next_n}"
    compat.persistent_topk(s, lengths, cpu_out, None, k, 100_000)
    compat.persistent_topk(d(s), d(lengths), gpu_out, None, k, 100_000)
    assert torch.equal(rows_sorted(gpu_out), rows_sorted(cpu_out)), "vLLM persistent_topk"


def test_compat_prefill_is_captured_and_replays_new_windows():
    k, rows, width = 512, 32, 65536
    s, lengths = distinct(rows, width, 41)
    scores = s.to(DEV)
    starts = torch.zeros(rows, dtype=torch.int32, device=DEV)
    ends = lengths.to(DEV)
    out = torch.empty(rows, k, dtype=torch.int32, device=DEV)
    compat.top_k_per_row_prefill(scores, starts, ends, out, rows, width, 1, k)  # plan outside
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        compat.top_k_per_row_prefill(scores, starts, ends, out, rows, width, 1, k)
    new_starts = torch.randint(0, width // 2, (rows,), dtype=torch.int32)
    new_ends = new_starts + torch.randint(0, width // 2, (rows,), dtype=torch.int32)
    starts.copy_(new_starts)
    ends.copy_(new_ends)
    graph.replay()
    torch.cuda.synchronize()
    want = torch.empty(rows, k, dtype=torch.int32)
    compat.top_k_per_row_prefill(s, new_starts, new_ends, want, rows, width, 1, k)
    assert torch.equal(rows_sorted(out), rows_sorted(want))
