"""PyTorch on the CPU: tensors through `topk.select`, the registered custom ops, tracing under
`torch.compile(fullgraph=True)`, the compat entry points on tensors, and torch-specific errors.
Skipped where PyTorch is not installed."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import topk  # noqa: E402
from topk import compat  # noqa: E402
from reference import check, check_call, row_windows, same_sets, select_reference  # noqa: E402

GEN = torch.Generator().manual_seed(11)


def scores_and_lengths(rows: int, width: int, k: int):
    scores = torch.randn(rows, width, generator=GEN)
    lengths = torch.randint(0, width + 1, (rows,), generator=GEN, dtype=torch.int32)
    lengths[: min(rows, 3)] = torch.tensor([width, k, 1][: min(rows, 3)], dtype=torch.int32)
    return scores, lengths


def test_cpu_tensors():
    scores, lengths = scores_and_lengths(6, 20000, 512)
    out = topk.select(scores, 512, lengths)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.int32 and out.shape == (6, 512)
    check(scores.numpy(), lengths.numpy(), out.numpy(), 512)
    out64 = topk.select(scores, 512, lengths.long())
    assert torch.equal(out, out64)


def test_strided_tensor_view():
    wide = torch.randn(8, 6000, generator=GEN)
    view = wide[1::2, 500:5500]
    check(view.numpy(), None, topk.select(view, 100).numpy(), 100)


def test_custom_ops_are_registered():
    scores, lengths = scores_and_lengths(4, 3000, 64)
    out = torch.ops.topk.select(scores, 64, lengths)
    check(scores.numpy(), lengths.numpy(), out.numpy(), 64)
    buf = torch.full((4, 64), 5, dtype=torch.int32)
    torch.ops.topk.select_out(scores, 64, lengths, buf)
    check(scores.numpy(), lengths.numpy(), buf.numpy(), 64)


def test_fake_tensor_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        s = torch.empty(7, 1000)
        out = torch.ops.topk.select(s, 33, None)
        assert out.shape == (7, 33) and out.dtype == torch.int32


def test_torch_compile_fullgraph_traces_the_op():
    def f(s, l):
        idx = topk.select(s, 128, l)
        return torch.gather(s, 1, idx.clamp(min=0).long()), idx

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    scores, lengths = scores_and_lengths(5, 4000, 128)
    values, idx = compiled(scores, lengths)
    check(scores.numpy(), lengths.numpy(), idx.numpy(), 128)
    assert torch.equal(values, torch.gather(scores, 1, idx.clamp(min=0).long()))


def test_half_precision_cpu_tensors_and_the_custom_op():
    scores, lengths = scores_and_lengths(4, 3000, 64)
    for dtype in (torch.float16, torch.bfloat16):
        half = scores.to(dtype)
        out = topk.select(half, 64, lengths)
        check(half.float().numpy(), lengths.numpy(), out.numpy(), 64)
        assert torch.equal(torch.ops.topk.select(half, 64, lengths), out)


def test_interface_options_under_torch_compile_fullgraph():
    # A call with interface options traces to torch.ops.topk.select_call.
    def f(s, l):
        return topk.select(s, 64, l, sorted=True, deterministic=True, values=True)

    scores, lengths = scores_and_lengths(4, 3000, 64)
    idx, vals = torch.compile(f, fullgraph=True, backend="aot_eager")(scores, lengths)
    want_idx, want_vals = f(scores, lengths)
    assert torch.equal(idx, want_idx) and torch.equal(vals, want_vals)
    s = scores.numpy()
    check_call(s.astype(np.float64), s.view(np.uint32), np.array(-np.inf, np.float32).view(np.uint32),
               64, row_windows(4, 3000, lengths=lengths.numpy()), idx.numpy(),
               vals.numpy().view(np.uint32), sorted_=True, deterministic=True)


def test_select_call_op_and_its_fake_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    scores, lengths = scores_and_lengths(4, 3000, 64)
    starts = torch.tensor([0, 10, 100, 2999], dtype=torch.int32)
    ends = torch.tensor([3000, 500, 100, 3000], dtype=torch.int32)
    offsets = torch.tensor([5, 0, 7, 1 << 20], dtype=torch.int32)
    idx, vals = torch.ops.topk.select_call(scores, 64, None, starts, ends, None, offsets, None,
                                           True, True, True, False, 1, 1)
    want_idx, want_vals = topk.select(scores, 64, starts=starts, ends=ends, offsets=offsets, values=True,
                                      sorted=True, deterministic=True, relative_to_start=False)
    assert torch.equal(idx, want_idx) and torch.equal(vals, want_vals)
    idx, none = torch.ops.topk.select_call(scores.half(), 64, lengths, None, None, None, None, None,
                                           False, False, False, True, 1, 1)
    assert none.shape == (4, 0) and none.dtype == torch.float16 and idx.shape == (4, 64)
    with FakeTensorMode():
        s = torch.empty(7, 1000, dtype=torch.bfloat16)
        i, v = torch.ops.topk.select_call(s, 33, None, None, None, None, None, None, True, False, False,
                                          True, 1, 1)
        assert i.shape == (7, 33) and i.dtype == torch.int32 and v.shape == (7, 33) and v.dtype == torch.bfloat16


def test_select_call_op_takes_the_page_table_row_map():
    scores, lengths = scores_and_lengths(4, 3000, 64)
    table = torch.stack([torch.randperm(750) + 1000 * r for r in range(2)]).to(torch.int32)
    page_rows = torch.tensor([1, 0, 1, 1], dtype=torch.int32)
    want = topk.select(scores, 64, lengths, page_table=table[page_rows.long()], page_size=4, sorted=True,
                       deterministic=True)
    # page_rows is the last argument: calls without it keep their places.
    idx, _ = torch.ops.topk.select_call(scores, 64, lengths, None, None, None, None, table, False, True, True,
                                        True, 1, 4, None, "", page_rows)
    assert torch.equal(idx, want)
    idx, _, b = torch.ops.topk.select_call_boundary(scores, 64, lengths, None, None, None, None, table, False,
                                                    True, True, True, 1, 4, None, "", page_rows)
    assert torch.equal(idx, want) and b.shape == (4,)
    with pytest.raises(ValueError, match="page_rows= goes with page_table="):
        torch.ops.topk.select_call(scores, 64, lengths, None, None, None, None, None, False, True, True,
                                   True, 1, 4, None, "", page_rows)


def test_interface_under_torch_compile_writes_given_outputs():
    def f(s, starts, ends, table, out, vals):
        return topk.select(s, 32, starts=starts, ends=ends, page_table=table, page_size=4, out=out,
                           values=vals, sorted=True, deterministic=True)

    scores, _ = scores_and_lengths(3, 1000, 32)
    starts = torch.tensor([0, 100, 900], dtype=torch.int32)
    ends = torch.tensor([1000, 400, 920], dtype=torch.int32)
    table = torch.arange(3 * 250, dtype=torch.int32).reshape(3, 250).flip(1).contiguous()
    out = torch.full((3, 32), 9, dtype=torch.int32)
    vals = torch.full((3, 32), 9.0)
    idx, v = torch.compile(f, fullgraph=True, backend="aot_eager")(scores, starts, ends, table, out, vals)
    assert idx is out and v is vals
    want_idx, want_vals = f(scores, starts, ends, table, None, True)
    assert torch.equal(out, want_idx) and torch.equal(vals, want_vals)

    def mapped(s, starts, ends, table, page_rows):
        return topk.select(s, 32, starts=starts, ends=ends, page_table=table, page_size=4, page_rows=page_rows,
                           sorted=True, deterministic=True)

    page_rows = torch.tensor([2, 2, 0], dtype=torch.int32)
    got = torch.compile(mapped, fullgraph=True, backend="aot_eager")(scores, starts, ends, table, page_rows)
    assert torch.equal(got, mapped(scores, starts, ends, table[page_rows.long()], None))


def test_prior_and_boundary_ops_and_their_fake_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    scores, lengths = scores_and_lengths(4, 3000, 64)
    prior = torch.tensor([0.0, float("nan"), float("inf"), -1.0])
    want = topk.select(scores, 64, lengths, values=True, sorted=True, deterministic=True, boundary=True)
    # The prior goes through select_call (two outputs, as before) ...
    idx, vals = torch.ops.topk.select_call(scores, 64, lengths, None, None, None, None, None, True, True, True,
                                           True, 1, 1, prior, "1/4")
    assert torch.equal(idx, want[0]) and torch.equal(vals, want[1])
    # ... and the boundary through select_call_boundary (a third output).
    idx, none, b = torch.ops.topk.select_call_boundary(scores, 64, lengths, None, None, None, None, None, False,
                                                       True, True, True, 1, 1, prior, "")
    assert torch.equal(idx, want[0]) and none.shape == (4, 0)
    assert torch.equal(b.isnan(), want[2].isnan()) and torch.equal(b.nan_to_num(), want[2].nan_to_num())
    with FakeTensorMode():
        s = torch.empty(7, 1000, dtype=torch.bfloat16)
        i, v, bb = torch.ops.topk.select_call_boundary(s, 33, None, None, None, None, None, None, True, False,
                                                       False, True, 1, 1, torch.empty(7), "2/8")
        assert i.shape == (7, 33) and v.dtype == torch.bfloat16 and bb.shape == (7,) and bb.dtype == torch.float32


def test_decode_step_under_torch_compile_fullgraph():
    """One decode step (the prior in, the boundary out, written in place) traced whole."""
    def step(s, lengths, state, out):
        return topk.select(s, 64, lengths, prior=state, boundary=state, out=out, values=True, sorted=True,
                           deterministic=True)

    def fresh(s, lengths, prior):
        return topk.select(s, 64, lengths, prior=prior, boundary=True, sorted=True, deterministic=True,
                           prior_bins=(1, 4))

    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    compiled_fresh = torch.compile(fresh, fullgraph=True, backend="aot_eager")
    scores, lengths = scores_and_lengths(5, 3000, 64)
    state = torch.full((5,), float("nan"))
    out = torch.full((5, 64), 9, dtype=torch.int32)
    for _ in range(3):
        want_idx, want_vals, want_b = topk.select(scores, 64, lengths, values=True, sorted=True,
                                                  deterministic=True, boundary=True)
        idx, vals, b = compiled(scores, lengths, state, out)
        assert idx is out and b is state and torch.equal(out, want_idx) and torch.equal(vals, want_vals)
        assert torch.equal(state.nan_to_num(7.0), want_b.nan_to_num(7.0))
        idx, b = compiled_fresh(scores, lengths, state)
        assert torch.equal(idx, want_idx) and torch.equal(b.nan_to_num(7.0), want_b.nan_to_num(7.0))
        scores = scores + 0.01 * torch.randn(scores.shape, generator=GEN)


def test_compat_on_tensors():
    k = 16
    rows, width = 6, 400
    scores = torch.randperm(rows * width, generator=GEN).reshape(rows, width).float()
    lengths = torch.tensor([0, 1, 16, 400, 250, 17], dtype=torch.int32)
    offsets = torch.tensor([5, 0, 100, 7, 9, 1000], dtype=torch.int32)
    want = select_reference(scores.numpy(), lengths.numpy(), k)
    got = compat.top_k_ragged_transform(scores, offsets, lengths, k)
    assert same_sets(got.numpy(), np.where(want >= 0, want + offsets.numpy()[:, None], -1))
    out = torch.zeros(rows, k, dtype=torch.int32)
    compat.topk_transform_paged_v2(scores, lengths, None, out, 1, compat.plan_topk_v2(lengths))
    assert same_sets(out.numpy(), want)
    table = torch.randint(0, 1 << 16, (rows, width // 4), generator=GEN, dtype=torch.int32)
    compat.topk_transform_paged_v2(scores, lengths, table, out, 4, None)
    t = table.numpy()
    paged = np.where(want >= 0, t[np.arange(rows)[:, None], np.maximum(want, 0) // 4] * 4 + want % 4, -1)
    assert same_sets(out.numpy(), paged)
    idx = torch.zeros(rows, k, dtype=torch.int32)
    starts = torch.tensor([0, 0, 50, 50, 50, 100], dtype=torch.int32)
    ends = torch.tensor([10, 400, 300, 60, 66, 400], dtype=torch.int32)
    compat.top_k_per_row_prefill(scores, starts, ends, idx, rows, width, 1, k)
    for i in range(rows):
        ref = select_reference(scores[i : i + 1, int(starts[i]) : int(ends[i])].numpy(), None, k)
        assert same_sets(idx[i : i + 1].numpy(), ref)
    compat.top_k_per_row_decode(scores, 2, torch.tensor([3, 400, 120], dtype=torch.int32), idx, rows, width, 1, k)
    ends = [3 - 2 + 1, 3, 400 - 1, 400, 120 - 1, 120]
    assert same_sets(idx.numpy(), select_reference(scores.numpy(), np.array(ends), k))
    compat.persistent_topk(scores, lengths, idx, None, k, 200)
    assert same_sets(idx.numpy(), select_reference(scores.numpy(), np.minimum(lengths.numpy(), 200), k))


@pytest.mark.parametrize(
    "call,error,match",
    [
        (lambda: topk.select(torch.randn(3, 10, dtype=torch.float64), 2), TypeError, "float32"),
        (lambda: topk.select(torch.randn(3, 10).to(torch.int32), 2), TypeError, "float32"),
        (lambda: topk.select(torch.randn(3, 10).t(), 2), ValueError, "column stride"),
        (lambda: topk.select(torch.randn(10), 2), ValueError, "2-D"),
        (lambda: topk.select(torch.randn(3, 10), 2, torch.tensor([1, 2, 3], dtype=torch.int16)), TypeError, "int32 or int64"),
        (lambda: topk.select(torch.randn(3, 10), 2, out=torch.zeros(3, 1, dtype=torch.int32)), ValueError, "at least"),
        (lambda: topk.select(torch.randn(3, 10), 2, out=torch.zeros(3, 2)), TypeError, "int32"),
        (lambda: topk.select(torch.randn(3, 10), 2, torch.tensor([1, 2, 11])), ValueError, "row 2 has length 11"),
        (lambda: topk.select(torch.randn(3, 10), 2, values=torch.zeros(3, 2, dtype=torch.float16)), TypeError, "values must be float32"),
        (lambda: topk.select(torch.randn(3, 10), 2, prior=torch.zeros(3, dtype=torch.float16)), TypeError, "prior must be float32"),
        (lambda: topk.select(torch.randn(3, 10), 2, prior=torch.zeros(2)), ValueError, r"prior must have shape \[3\]"),
        (lambda: topk.select(torch.randn(3, 10), 2, boundary=torch.zeros(2)), ValueError, "at least 3 elements"),
        (lambda: topk.select(torch.randn(3, 10), 2, boundary=torch.zeros(3, dtype=torch.float64)), TypeError, "boundary must be float32"),
    ],
)
def test_bad_tensor_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
