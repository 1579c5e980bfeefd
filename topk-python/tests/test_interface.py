"""The call interface on the CPU through `topk.select` (docs/interface.md): float16 and
bfloat16 scores, values, sorted order, lowest-index ties, row windows (relative and absolute
indices), decode rows, offset and paged transforms (with and without the row map `page_rows`),
each alone and combined, against the NumPy
reference of `reference.check_call`; the errors bad calls get; and the way CUDA inputs take to the GPU's call interface."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import topk
from reference import check_call, row_windows

RNG = np.random.default_rng(4242)
ROWS, WIDTH, K = 8, 700, 32

try:
    import torch
except ImportError:  # the bfloat16 cases need torch
    torch = None


# ------------------------------------------------------------------------------- inputs
class Scores:
    """Scores in one dtype, as passed to topk.select, with what the reference needs."""

    def __init__(self, dtype: str, rows: int = ROWS, width: int = WIDTH, seed: int = 0):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((rows, width))
        x[::2] = np.round(x[::2] * 3) / 3  # many ties, around rank K too
        x[1, ::5] = np.inf
        x[1, 2::7] = -np.inf
        x[3] = np.where(rng.random(width) < 0.5, 0.0, -0.0)
        x[3, ::50] = 1.0
        x[5] = x[5] * (1e-42 if dtype == "f32" else 1e-6)  # subnormals in f32 and f16
        self.dtype = dtype
        if dtype == "bf16":
            if torch is None:
                pytest.skip("bfloat16 scores are tested through torch")
            self.array = torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
            self.values64 = self.array.float().numpy().astype(np.float64)
            self.bits = self.array.view(torch.int16).numpy().view(np.uint16)
            self.neg_inf = np.uint16(0xFF80)
        else:
            np_dtype = {"f32": np.float32, "f16": np.float16}[dtype]
            self.array = x.astype(np_dtype)
            self.values64 = self.array.astype(np.float64)
            self.bits = self.array.view(np.uint32 if dtype == "f32" else np.uint16)
            self.neg_inf = np.array(-np.inf, np_dtype).view(self.bits.dtype)[()]

    def value_bits(self, values):
        """The bit patterns of a values output, which must have the scores' dtype."""
        if torch is not None and isinstance(values, torch.Tensor):
            want = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[self.dtype]
            assert values.dtype == want
            ints = torch.int32 if self.dtype == "f32" else torch.int16
            return values.view(ints).numpy().view(self.bits.dtype)
        assert values.dtype == self.array.dtype
        return values.view(self.bits.dtype)


def source(kind: str):
    """Row-source arguments of `kind` for ROWS x WIDTH, edge windows included."""
    if kind == "full":
        return {}, {}
    if kind == "lengths":
        lengths = np.array([0, 1, K - 1, K, K + 1, WIDTH, 250, 699], np.int32)
        return {"lengths": lengths}, {"lengths": lengths}
    if kind.startswith("window"):
        starts = np.array([0, 5, 0, WIDTH - K - 1, 100, 10, 300, WIDTH - 1], np.int64)
        ends = np.array([0, 6, WIDTH, WIDTH, 100 + K - 1, 10 + K, 650, WIDTH], np.int32)
        strided = np.repeat(starts, 2)[::2]  # int64 at stride 2, read in place
        args = {"starts": strided, "ends": ends}
        if kind == "window_abs":
            args["relative_to_start"] = False
        return args, {"starts": starts, "ends": ends}
    if kind == "decode":
        seq_lens = np.array([1, K + 1, WIDTH, 400], np.int32)  # lengths 0, 1, K, K+1, 699, 700, ...
        return {"seq_lens": seq_lens, "next_n": 2}, {"seq_lens": seq_lens, "next_n": 2}
    raise AssertionError(kind)


def transform(kind: str, rows: int = ROWS, width: int = WIDTH):
    """Transform arguments of `kind` and the reference's (tables map pages one to one; a table
    read through `page_rows` is the reference's gathered table)."""
    if kind == "none":
        return {}, {}
    if kind == "paged_rows5":
        size, table_rows = 5, 3
        pages = -(-width // size)
        table = np.stack([RNG.permutation(pages) + 5000 * r for r in range(table_rows)]).astype(np.int64)
        page_rows = np.array([2, 0, 0, 1, 2, 2, 1, 0][:rows], np.int32)
        return {"page_table": table, "page_size": size, "page_rows": page_rows}, \
            {"table": table[page_rows], "page_size": size}
    if kind == "offset":
        offsets = RNG.integers(0, 1_000_000, rows).astype(np.int64)
        return {"offsets": offsets}, {"offsets": offsets}
    if kind.startswith("paged"):
        size = {"paged3": 3, "paged_shared16": 16, "paged1": 1}[kind]
        pages = -(-width // size)
        table_rows = 1 if "shared" in kind else rows
        table = np.stack([RNG.permutation(pages) + 5000 * r for r in range(table_rows)]).astype(np.int32)
        return {"page_table": table, "page_size": size}, {"table": table, "page_size": size}
    raise AssertionError(kind)


SOURCES = ["full", "lengths", "window_rel", "window_abs", "decode"]
TRANSFORMS = ["none", "offset", "paged3", "paged_shared16", "paged_rows5"]


def run_and_check(dtype, src, tf, sorted_, deterministic, values, seed=1):
    s = Scores(dtype, seed=seed)
    args, ref_rows = source(src)
    targs, ref_tf = transform(tf)
    got = topk.select(s.array, K, **args, **targs, sorted=sorted_, deterministic=deterministic, values=values)
    got_values = None
    if values:
        got, got_values = got
        got_values = s.value_bits(got_values)
    if torch is not None and isinstance(got, torch.Tensor):
        got = got.numpy()
    assert got.dtype == np.int32 and got.shape == (ROWS, K)
    windows = row_windows(ROWS, WIDTH, **ref_rows)
    check_call(s.values64, s.bits, s.neg_inf, K, windows, got, got_values, sorted_=sorted_,
               deterministic=deterministic, absolute=src == "window_abs", **ref_tf)
    return got, got_values


# -------------------------------------------------------------------------------- tests
@pytest.mark.parametrize(
    "src,tf,sorted_,deterministic,values",
    list(itertools.product(SOURCES, TRANSFORMS, [False, True], [False, True], [False, True])),
)
def test_float32_every_combination(src, tf, sorted_, deterministic, values):
    run_and_check("f32", src, tf, sorted_, deterministic, values)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("src,tf", list(itertools.product(SOURCES, TRANSFORMS)))
@pytest.mark.parametrize("sorted_,deterministic,values", [(False, False, False), (True, True, True), (True, False, True)])
def test_16_bit_scores(dtype, src, tf, sorted_, deterministic, values):
    run_and_check(dtype, src, tf, sorted_, deterministic, values)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_canonical_output_does_not_depend_on_the_dtype(dtype):
    # 16-bit scores and the same values widened to float32: one canonical output.
    s = Scores(dtype, seed=9)
    wide = s.values64.astype(np.float32)
    args, _ = source("lengths")
    idx16, val16 = topk.select(s.array, K, **args, sorted=True, deterministic=True, values=True)
    idx32, val32 = topk.select(wide, K, **args, sorted=True, deterministic=True, values=True)
    if torch is not None and isinstance(idx16, torch.Tensor):
        idx16, val16 = idx16.numpy(), val16.float().numpy()
    assert np.array_equal(np.asarray(idx16), idx32)
    assert np.array_equal(np.asarray(val16, np.float32), val32)


def test_page_rows_write_what_the_gathered_table_writes():
    """A table read through `page_rows` (any number of rows, a row shared by several score
    rows, int32 or int64 maps, strided ones, torch tensors) gives the bytes of the table gathered
    row by row."""
    s = Scores("f32", seed=7)
    args, _ = source("window_rel")
    table = np.stack([RNG.permutation(WIDTH // 4 + 1) + 1000 * r for r in range(5)]).astype(np.int32)
    canon = dict(sorted=True, deterministic=True, values=True)
    for page_rows in (np.array([4, 4, 0, 1, 4, 2, 3, 0], np.int32),
                      np.repeat(np.array([1, 0, 0, 0, 3, 3, 2, 4], np.int64), 2)[::2]):
        got = topk.select(s.array, K, **args, page_table=table, page_size=4, page_rows=page_rows, **canon)
        want = topk.select(s.array, K, **args, page_table=table[page_rows], page_size=4, **canon)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    one = topk.select(s.array, K, page_table=table[2:3], page_size=4, page_rows=np.zeros(ROWS, np.int32), **canon)
    shared = topk.select(s.array, K, page_table=table[2:3], page_size=4, **canon)
    assert np.array_equal(one[0], shared[0])
    if torch is None:
        return
    t = torch.from_numpy(s.array)
    got = topk.select(t, K, page_table=torch.from_numpy(table), page_size=4,
                      page_rows=torch.tensor([1, 2, 3, 4, 0, 1, 2, 3]), **canon)
    want = topk.select(t, K, page_table=torch.from_numpy(table[[1, 2, 3, 4, 0, 1, 2, 3]]), page_size=4, **canon)
    assert isinstance(got[0], torch.Tensor) and torch.equal(got[0], want[0])


def test_page_rows_out_of_range_write_nothing():
    out = np.full((3, 5), 7, np.int32)
    table = np.arange(200, dtype=np.int32).reshape(2, 100)
    with pytest.raises(ValueError, match=r"row 2: page_rows\[2\] is 2, but page_table has 2 rows"):
        topk.select(SC, 5, page_table=table, page_rows=I32(1, 0, 2), out=out)
    assert (out == 7).all(), "partial output left behind"


def test_deterministic_ties_take_the_lowest_positions():
    scores = np.zeros((3, 100), np.float32)
    scores[0, 50:] = 1.0  # 50 ones: K = 10 takes positions 50..59
    scores[1, ::2] = -0.0  # only zeros, signed: one value
    scores[2, [7, 3, 90]] = 2.0
    idx = topk.select(scores, 10, deterministic=True, sorted=True)
    assert idx[0].tolist() == list(range(50, 60))
    assert idx[1].tolist() == list(range(10))
    assert idx[2].tolist() == [3, 7, 90] + list(range(7))[:3] + [4, 5, 6, 8]


def test_values_into_a_strided_buffer_and_nothing_else_written():
    s = Scores("f16", seed=3)
    buf = np.full((ROWS, 3 * K), 7, np.float16)
    out = np.full((ROWS, 2 * K), 9, np.int32)
    idx, vals = topk.select(s.array, K, out=out[:, K // 2 :], values=buf[:, K : 2 * K + 1], sorted=True)
    assert vals.base is buf and idx.base is out
    check_call(s.values64, s.bits, s.neg_inf, K, row_windows(ROWS, WIDTH), idx, s.value_bits(vals),
               sorted_=True)
    assert (buf[:, :K] == 7).all() and (buf[:, 2 * K :] == 7).all(), "values written outside [:, :K]"
    assert (out[:, : K // 2] == 9).all() and (out[:, K // 2 + K :] == 9).all()


def test_torch_cpu_tensors_and_dlpack_producers():
    class DLPackOnly:
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, stream=None):
            return self._a.__dlpack__()

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()

    s = Scores("f16", seed=4)
    starts = np.array([0, 1, 2, 3, 4, 5, 6, 7], np.int32)
    ends = starts + 600
    idx, vals = topk.select(DLPackOnly(s.array), K, starts=DLPackOnly(starts), ends=ends, values=True)
    assert isinstance(idx, np.ndarray) and vals.dtype == np.float16
    windows = row_windows(ROWS, WIDTH, starts=starts, ends=ends)
    check_call(s.values64, s.bits, s.neg_inf, K, windows, idx, s.value_bits(vals))
    if torch is None:
        return
    t = torch.from_numpy(s.array)
    idx_t, vals_t = topk.select(t, K, starts=torch.from_numpy(starts), ends=torch.from_numpy(ends).long(),
                                values=True, sorted=True, deterministic=True)
    assert isinstance(idx_t, torch.Tensor) and vals_t.dtype == torch.float16
    check_call(s.values64, s.bits, s.neg_inf, K, windows, idx_t.numpy(), s.value_bits(vals_t),
               sorted_=True, deterministic=True)


def test_bfloat16_through_dlpack_writes_values_into_a_given_array():
    if torch is None:
        pytest.skip("needs torch for bfloat16 arrays")

    class DLPackOnly:
        def __init__(self, a):
            self._a = a

        def __dlpack__(self, stream=None):
            return self._a.__dlpack__()

        def __dlpack_device__(self):
            return self._a.__dlpack_device__()

    s = Scores("bf16", seed=6)
    vals = torch.empty(ROWS, K, dtype=torch.bfloat16)
    idx, got = topk.select(DLPackOnly(s.array), K, values=vals, sorted=True)
    assert got is vals and isinstance(idx, np.ndarray)
    check_call(s.values64, s.bits, s.neg_inf, K, row_windows(ROWS, WIDTH), idx, s.value_bits(vals), sorted_=True)
    try:
        import ml_dtypes  # noqa: F401  (with it, NumPy has a bfloat16 to allocate)
    except ImportError:
        with pytest.raises(TypeError, match="pass values= a bfloat16"):
            topk.select(DLPackOnly(s.array), K, values=True)


def test_nan_inside_a_window_is_reported_with_its_matrix_column_and_nothing_is_written():
    scores = RNG.standard_normal((3, 200)).astype(np.float32)
    scores[1, 150] = np.nan
    starts = np.array([0, 100, 0], np.int32)
    out = np.full((3, 5), 7, np.int32)
    vals = np.full((3, 5), 7, np.float32)
    with pytest.raises(ValueError, match="row 1, column 150 is NaN"):
        topk.select(scores, 5, starts=starts, ends=np.array([200, 200, 200], np.int32), out=out, values=vals)
    assert (out == 7).all() and (vals == 7).all(), "partial output left behind"
    # A NaN outside every window is never read.
    ok = topk.select(scores, 5, starts=starts, ends=np.array([200, 150, 200], np.int32))
    assert (ok >= 0).all()


SC = RNG.standard_normal((3, 100)).astype(np.float32)
I32 = lambda *v: np.array(v, np.int32)  # noqa: E731


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"starts": I32(0, 0, 0)}, ValueError, "go together"),
        ({"ends": I32(1, 1, 1)}, ValueError, "go together"),
        ({"starts": I32(0, 5, 0), "ends": I32(10, 4, 10)}, ValueError, "row 1 has the window"),
        ({"starts": I32(0, 0, 0), "ends": I32(10, 10, 101)}, ValueError, "row 2"),
        ({"starts": I32(0, 0), "ends": I32(1, 1)}, ValueError, r"shape \[3\]"),
        ({"starts": np.array([0.0, 0, 0]), "ends": I32(1, 1, 1)}, TypeError, "int32 or int64"),
        ({"starts": np.array([0, 0, 2**40]), "ends": I32(1, 1, 1)}, ValueError, "beyond the int32 range"),
        ({"starts": I32(0, 0, 0), "ends": I32(1, 1, 1), "seq_lens": I32(3)}, ValueError, "one row source"),
        ({"relative_to_start": False}, ValueError, "applies to row windows"),
        ({"next_n": 3}, ValueError, "goes with seq_lens"),
        ({"seq_lens": I32(5, 5), "next_n": 2}, ValueError, "groups of next_n"),
        ({"seq_lens": I32(5), "next_n": 0}, ValueError, "at least 1"),
        ({"seq_lens": I32(0), "next_n": 3}, ValueError, "row 0 has length -2"),
        ({"offsets": I32(0, 1)}, ValueError, r"shape \[3\]"),
        ({"offsets": I32(0, 2**31 - 50, 0)}, ValueError, "row 1: offset"),
        ({"offsets": I32(0, -1, 0)}, ValueError, "row 1: offset"),
        ({"offsets": I32(0, 0, 0), "page_table": np.zeros((3, 100), np.int32)}, ValueError, "one index transform"),
        ({"page_size": 4}, ValueError, "goes with page_table"),
        ({"page_table": np.zeros((3, 100), np.int32), "page_size": 0}, ValueError, "at least 1"),
        ({"page_table": np.zeros((3, 10), np.int32), "page_size": 4}, ValueError, "need page 24"),
        ({"page_table": np.zeros((2, 100), np.int32)}, ValueError, r"\[rows, pages\]"),
        ({"page_table": np.zeros(100, np.int32)}, ValueError, r"\[rows, pages\]"),
        ({"page_table": np.full((3, 100), -1, np.int32)}, ValueError, r"row \d: page-table entry \d+ holds -1"),
        ({"page_table": np.full((1, 100), 2**40)}, ValueError, "beyond the int32 range"),
        ({"page_rows": I32(0, 0, 0)}, ValueError, "page_rows= goes with page_table="),
        ({"page_rows": I32(0, 0, 0), "offsets": I32(0, 0, 0)}, ValueError, "page_rows= goes with page_table="),
        ({"page_rows": I32(0, 0, 0), "offsets": I32(0, 0, 0), "page_table": np.zeros((1, 100), np.int32)},
         ValueError, "one index transform"),
        ({"page_rows": np.zeros(3, np.float32), "page_table": np.zeros((1, 100), np.int32)}, TypeError,
         "page_rows must be int32 or int64"),
        ({"page_rows": I32(0, 0), "page_table": np.zeros((1, 100), np.int32)}, ValueError,
         r"page_rows must have shape \[3\]"),
        ({"page_rows": np.zeros((3, 1), np.int32), "page_table": np.zeros((1, 100), np.int32)}, ValueError,
         r"page_rows must have shape \[3\]"),
        ({"page_rows": I32(0, 1, 0), "page_table": np.zeros((1, 100), np.int32)}, ValueError,
         r"row 1: page_rows\[1\] is 1, but page_table has 1 rows"),
        ({"page_rows": I32(0, -1, 0), "page_table": np.zeros((4, 100), np.int32)}, ValueError,
         r"row 1: page_rows\[1\] is -1"),
        ({"page_rows": np.array([0, 0, 2**40]), "page_table": np.zeros((4, 100), np.int32)}, ValueError,
         r"row 2: page_rows\[2\] is 1099511627776"),
        ({"page_rows": I32(0, 0, 0), "page_table": np.zeros(100, np.int32)}, ValueError, r"\[table rows, pages\]"),
        ({"page_rows": I32(0, 0, 0), "page_table": np.zeros((0, 100), np.int32)}, ValueError,
         "page_table has 0 rows"),
        ({"page_rows": I32(0, 0, 0), "page_table": np.zeros((4, 10), np.int32), "page_size": 4}, ValueError,
         "need page 24"),
        ({"values": np.zeros((3, 5), np.float16)}, TypeError, "values must be float32"),
        ({"values": np.zeros((3, 4), np.float32)}, ValueError, "values must be at least"),
        ({"values": np.zeros((3, 5), np.float32)[:, ::-1]}, ValueError, "column stride"),
        ({"values": 1}, TypeError, "values must be"),
        ({"largest": False}, NotImplementedError, "negate"),
        ({"return_values": True}, TypeError, "values=True"),
    ],
)
def test_bad_calls(kwargs, error, match):
    with pytest.raises(error, match=match):
        topk.select(SC, 5, **kwargs)


def test_read_only_values_are_refused():
    vals = np.zeros((3, 5), np.float32)
    vals.setflags(write=False)
    with pytest.raises(ValueError, match="values is read-only"):
        topk.select(SC, 5, values=vals)


def test_cuda_producers_take_the_interface_path(monkeypatch):
    """A CUDA DLPack producer with interface arguments reaches the call interface's CUDA path
    (test_cuda_call_marshalling.py checks what it passes; test_gpu_call.py what it writes)."""
    from topk import _arrays, _cuda_call, _select

    class FakeCudaArray:
        pass

    fake = _arrays._View(1234, (3, 100), (100, 1), "f32", "cuda", 0, True, None)
    monkeypatch.setattr(_select._arrays, "view", lambda x, name, stream=None: fake)
    seen = []
    monkeypatch.setattr(_cuda_call, "select_call", lambda *a: seen.append(a) or "launched")
    assert topk.select(FakeCudaArray(), 5, sorted=True) == "launched"
    assert seen[0][1] is fake and seen[0][5].sorted is True
