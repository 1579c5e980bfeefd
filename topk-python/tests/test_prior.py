"""A row's prior boundary and boundary output on the CPU through `topk.select` and
`topk.Selector` (docs/interface.md, "Prior boundary" and "Boundary output"): a decode loop that
carries each step's boundary to the next as its prior, with every output byte-equal to the same
call without a prior and every boundary equal to NumPy's K-th largest; adversarial priors; the
errors bad arguments get, with nothing written."""

from __future__ import annotations

import numpy as np
import pytest

import topk

try:
    import torch
except ImportError:
    torch = None

K = 48
F32_MAX = np.finfo(np.float32).max


def kth_largest(scores: np.ndarray, lengths, k: int) -> np.ndarray:
    """Each row's K-th largest valid score as float32, NaN for a row of L <= k, +0.0 for zero."""
    want = np.full(scores.shape[0], np.nan, np.float32)
    for r, n in enumerate(lengths):
        if n > k:
            want[r] = np.sort(scores[r, :n])[::-1][k - 1] + np.float32(0.0)  # -0.0 + 0.0 is +0.0
    return want


def same_floats(a, b) -> bool:
    """Equal as float32 bit patterns, any NaN equal to any NaN."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    nan = np.isnan(a)
    if a.shape != b.shape or (nan != np.isnan(b)).any():
        return False
    return bool((a[~nan].view(np.uint32) == b[~nan].view(np.uint32)).all())


def decode_step(rng, scores, lengths, width, new_rows):
    """The next step: every score drifts a little, every row sees one more token, new rows
    (sequences) join with fresh scores."""
    drift = scores + np.float32(0.02) * rng.standard_normal(scores.shape).astype(np.float32)
    fresh = rng.standard_normal((new_rows, width)).astype(np.float32)
    lengths = np.concatenate([np.minimum(lengths + 1, width), rng.integers(0, width + 1, new_rows)])
    return np.concatenate([drift, fresh]), lengths.astype(np.int32)


# -------------------------------------------------------------------------- the decode loop
@pytest.mark.parametrize("bins", [None, "0/0", (1, 4), "2/8", "8/64"])
def test_decode_loop_carries_the_boundary_as_the_next_prior(bins):
    rng = np.random.default_rng(7)
    width = 2500
    scores = rng.standard_normal((4, width)).astype(np.float32)
    scores[1] = np.round(scores[1] * 2) / 2  # heavy ties around rank K
    scores[2] = np.where(rng.random(width) < 0.5, np.float32(0.0), np.float32(-0.0))  # zeros only
    lengths = np.array([width, 1200, 900, K], np.int32)  # the last row short: boundary NaN
    prior = np.full(4, np.nan, np.float32)  # the first step has no prior
    seen_zero = False
    for step in range(8):
        got, vals, boundary = topk.select(scores, K, lengths, prior=prior, prior_bins=bins, boundary=True,
                                          values=True, sorted=True, deterministic=True)
        want, want_vals = topk.select(scores, K, lengths, values=True, sorted=True, deterministic=True)
        assert np.array_equal(got, want), f"step {step}: indices depend on the prior"
        assert np.array_equal(vals.view(np.uint32), want_vals.view(np.uint32)), f"step {step}: values differ"
        expect = kth_largest(scores, lengths, K)
        assert boundary.dtype == np.float32 and boundary.shape == (scores.shape[0],)
        assert same_floats(boundary, expect), f"step {step}: boundary {boundary} != {expect}"
        zero = boundary == 0
        assert not np.signbit(boundary[zero]).any(), "a zero boundary must be +0.0"
        seen_zero |= bool(zero.any())
        # The next step: rows grow; the old rows keep their boundary as the prior, new rows have none.
        scores, lengths = decode_step(rng, scores, lengths, width, new_rows=2)
        prior = np.concatenate([boundary, np.full(2, np.nan, np.float32)])
    assert seen_zero, "the all-zero row should give a +0.0 boundary"


def test_boundary_written_in_place_over_the_prior():
    rng = np.random.default_rng(11)
    scores = rng.standard_normal((6, 3000)).astype(np.float32)
    lengths = np.array([3000, 2000, 10, 48, 49, 2999], np.int32)
    state = np.full(6, np.nan, np.float32)
    for step in range(4):
        idx, got = topk.select(scores, K, lengths, prior=state, boundary=state, sorted=True, deterministic=True)
        assert got is state
        assert np.array_equal(idx, topk.select(scores, K, lengths, sorted=True, deterministic=True))
        assert same_floats(state, kth_largest(scores, lengths, K))
        scores = scores + np.float32(0.01) * rng.standard_normal(scores.shape).astype(np.float32)


def test_boundary_alone_and_with_windows_decode_rows_and_transforms():
    rng = np.random.default_rng(3)
    scores = rng.standard_normal((6, 1000)).astype(np.float32)
    idx, b = topk.select(scores, K, boundary=True)
    assert idx.shape == (6, K) and same_floats(b, kth_largest(scores, [1000] * 6, K))
    starts = np.array([0, 10, 500, 900, 0, 999], np.int32)
    ends = np.array([1000, 60, 700, 1000, 48, 1000], np.int32)
    offsets = np.arange(6, dtype=np.int32) * 10_000
    got = topk.select(scores, K, starts=starts, ends=ends, offsets=offsets, values=True, boundary=True,
                      prior=np.zeros(6, np.float32), prior_bins="1/4")
    want = topk.select(scores, K, starts=starts, ends=ends, offsets=offsets, values=True)
    assert len(got) == 3 and np.array_equal(np.sort(got[0], 1), np.sort(want[0], 1))
    windows = np.stack([np.pad(scores[r, s:e], (0, 1000 - (e - s))) for r, (s, e) in enumerate(zip(starts, ends))])
    assert same_floats(got[2], kth_largest(windows, ends - starts, K))
    seq_lens = np.array([100, 1000, 40], np.int32)
    _, b = topk.select(scores, K, seq_lens=seq_lens, next_n=2, boundary=True)
    decode_lengths = [seq_lens[r // 2] - 1 + r % 2 for r in range(6)]
    assert same_floats(b, kth_largest(scores, decode_lengths, K))


def test_16_bit_scores_write_their_kth_largest_as_float32():
    rng = np.random.default_rng(5)
    scores = rng.standard_normal((4, 800)).astype(np.float16)
    idx, b = topk.select(scores, K, boundary=True, prior=np.full(4, 0.5, np.float32), sorted=True,
                         deterministic=True)
    assert np.array_equal(idx, topk.select(scores, K, sorted=True, deterministic=True))
    assert same_floats(b, kth_largest(scores.astype(np.float32), [800] * 4, K))


def test_empty_rows_and_calls():
    scores = np.zeros((3, 0), np.float32)
    idx, b = topk.select(scores, 4, boundary=True, prior=np.zeros(3, np.float32))
    assert (idx == -1).all() and np.isnan(b).all()
    idx, b = topk.select(np.zeros((0, 10), np.float32), 4, boundary=True, prior=np.zeros(0, np.float32))
    assert idx.shape == (0, 4) and b.shape == (0,)


# -------------------------------------------------------------------- adversarial priors
ADVERSARIAL = {
    "+inf": np.inf,
    "-inf": -np.inf,
    "nan": np.nan,
    "f32 max": F32_MAX,
    "-f32 max": -F32_MAX,
    "zero": 0.0,
    "-zero": -0.0,
    "subnormal": 1e-42,
}


@pytest.mark.parametrize("bins", ["0/0", "2/8", (64, 64)])
def test_adversarial_priors_give_the_same_bytes(bins):
    rng = np.random.default_rng(13)
    rows, width = 8, 4000
    scores = rng.standard_normal((rows, width)).astype(np.float32)
    scores[1, ::3] = np.inf
    scores[2, ::5] = -np.inf
    scores[3] = np.round(scores[3])
    scores[4] *= np.float32(1e-40)
    scores[5] = 1.0
    lengths = np.array([4000, 3000, 2000, 1000, 3999, 500, 49, 48], np.int32)
    want = topk.select(scores, K, lengths, values=True, sorted=True, deterministic=True, boundary=True)
    exact = want[2]
    priors = {name: np.full(rows, v, np.float32) for name, v in ADVERSARIAL.items()}
    priors["garbage"] = rng.standard_normal(rows).astype(np.float32) * np.float32(1e30)
    priors["bits"] = rng.integers(0, 2**32, rows, dtype=np.uint64).astype(np.uint32).view(np.float32)
    priors["exact"] = exact.copy()
    priors["just above"] = np.nextafter(exact, np.float32(np.inf))
    priors["just below"] = np.nextafter(exact, np.float32(-np.inf))
    priors["mixed"] = np.array([np.inf, -np.inf, np.nan, F32_MAX, 0.0, exact[5], 1e-42, -1.0], np.float32)
    for name, prior in priors.items():
        got = topk.select(scores, K, lengths, prior=prior, prior_bins=bins, values=True, sorted=True,
                          deterministic=True, boundary=True)
        assert np.array_equal(got[0], want[0]), f"prior {name}: indices differ"
        assert np.array_equal(got[1].view(np.uint32), want[1].view(np.uint32)), f"prior {name}: values differ"
        assert same_floats(got[2], exact), f"prior {name}: boundary differs"
    assert same_floats(exact, kth_largest(scores, lengths, K))


# ------------------------------------------------------------------------------- torch
@pytest.mark.skipif(torch is None, reason="needs torch")
def test_torch_cpu_tensors_return_tensors():
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(5, 700, generator=g)
    lengths = torch.tensor([700, 600, 10, 100, 49], dtype=torch.int32)
    prior = torch.full((5,), float("nan"))
    idx, vals, b = topk.select(scores, K, lengths, prior=prior, boundary=True, values=True, sorted=True,
                               deterministic=True)
    assert isinstance(b, torch.Tensor) and b.dtype == torch.float32 and b.shape == (5,)
    want = topk.select(scores.numpy(), K, lengths.numpy(), values=True, sorted=True, deterministic=True, boundary=True)
    assert np.array_equal(idx.numpy(), want[0]) and same_floats(b.numpy(), want[2])
    buf = torch.full((8,), 7.0)
    _, got = topk.select(scores, K, lengths, prior=b, boundary=buf)
    assert got is buf and same_floats(buf[:5].numpy(), want[2]) and (buf[5:] == 7.0).all()


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_cpu_selector_takes_the_prior_and_writes_the_boundary():
    g = torch.Generator().manual_seed(4)
    scores = torch.randn(6, 900, generator=g)
    lengths = torch.tensor([900, 800, 10, 400, 49, 300], dtype=torch.int32)
    sel = topk.Selector(K, 6, 900, device="cpu", values=True, sorted=True, deterministic=True, prior=True,
                        prior_bins=(1, 4), boundary=True)
    prior = torch.full((6,), float("nan"))
    idx, vals, b = sel(scores, lengths, prior=prior)
    want = topk.select(scores, K, lengths, values=True, sorted=True, deterministic=True, boundary=True)
    assert torch.equal(idx, want[0]) and torch.equal(vals, want[1]) and same_floats(b.numpy(), want[2].numpy())
    out = torch.full((6, K), 7, dtype=torch.int32)
    state = b.clone()
    sel(scores, lengths, prior=state, boundary=state, out=out, live_rows=torch.tensor([4]))
    assert torch.equal(out[:4], want[0][:4]) and (out[4:] == 7).all()
    assert same_floats(state[:4].numpy(), want[2][:4].numpy()) and same_floats(state[4:].numpy(), b[4:].numpy())
    with pytest.raises(TypeError, match="needs prior="):
        sel(scores, lengths)
    plain = topk.Selector(K, 6, 900, device="cpu")
    with pytest.raises(TypeError, match="not planned for prior="):
        plain(scores, lengths, prior=prior)
    with pytest.raises(TypeError, match="not planned for boundary="):
        plain(scores, lengths, boundary=torch.empty(6))
    with pytest.raises(ValueError, match="goes with prior=True"):
        topk.Selector(K, 6, 900, device="cpu", prior_bins="2/8")


# ------------------------------------------------------------------------------- errors
SC = np.random.default_rng(1).standard_normal((3, 100)).astype(np.float32)
P = np.zeros(3, np.float32)


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"prior": np.zeros(3)}, TypeError, "prior must be float32"),
        ({"prior": np.zeros(3, np.int32)}, TypeError, "prior must be float32"),
        ({"prior": np.zeros(3, np.float16)}, TypeError, "prior must be float32"),
        ({"prior": np.zeros(2, np.float32)}, ValueError, r"prior must have shape \[3\]"),
        ({"prior": np.zeros(4, np.float32)}, ValueError, r"prior must have shape \[3\]"),
        ({"prior": np.zeros((3, 1), np.float32)}, ValueError, r"prior must have shape \[3\]"),
        ({"prior": [0.0, 0.0, 0.0]}, TypeError, "prior must be a PyTorch tensor"),
        ({"prior_bins": "2/8"}, ValueError, "prior_bins= goes with prior="),
        ({"prior": P, "prior_bins": "3/2"}, ValueError, "P <= R"),
        ({"prior": P, "prior_bins": "65/65"}, ValueError, "P <= R <= 64"),
        ({"prior": P, "prior_bins": "300/300"}, ValueError, "expected none or P/R"),
        ({"prior": P, "prior_bins": "two/eight"}, ValueError, "expected none or P/R"),
        ({"prior": P, "prior_bins": (1, 2, 3)}, TypeError, r"pair \(P, R\)"),
        ({"prior": P, "prior_bins": (1.0, 2.0)}, TypeError, r"pair \(P, R\)"),
        ({"prior": P, "prior_bins": 2}, TypeError, "prior_bins must be"),
        ({"boundary": np.zeros(3)}, TypeError, "boundary must be float32"),
        ({"boundary": np.zeros(2, np.float32)}, ValueError, "at least 3 elements"),
        ({"boundary": np.zeros((3, 1), np.float32)}, ValueError, "boundary must be 1-D"),
        ({"boundary": np.zeros(6, np.float32)[::2]}, ValueError, "stride 1"),
        ({"boundary": 1}, TypeError, "boundary must be"),
    ],
)
def test_bad_calls_write_nothing(kwargs, error, match):
    out = np.full((3, 5), 7, np.int32)
    vals = np.full((3, 5), 7, np.float32)
    buf = kwargs.get("boundary")
    before = None if not isinstance(buf, np.ndarray) else buf.copy()
    with pytest.raises(error, match=match):
        topk.select(SC, 5, out=out, values=vals, **kwargs)
    assert (out == 7).all() and (vals == 7).all(), "partial output left behind"
    if before is not None:
        assert np.array_equal(buf, before)


def test_read_only_boundary_is_refused_and_a_nan_score_writes_nothing():
    ro = np.zeros(3, np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="boundary is read-only"):
        topk.select(SC, 5, boundary=ro)
    bad = SC.copy()
    bad[1, 50] = np.nan
    b = np.full(3, 7.0, np.float32)
    out = np.full((3, 5), 7, np.int32)
    with pytest.raises(ValueError, match="row 1, column 50 is NaN"):
        topk.select(bad, 5, out=out, prior=P, boundary=b)
    assert (b == 7.0).all() and (out == 7).all(), "partial output left behind"


def test_calls_without_the_new_arguments_return_what_they_did():
    idx = topk.select(SC, 5)
    assert isinstance(idx, np.ndarray) and idx.shape == (3, 5)
    got = topk.select(SC, 5, values=True)
    assert isinstance(got, tuple) and len(got) == 2
    got = topk.select(SC, 5, boundary=False, values=True)
    assert isinstance(got, tuple) and len(got) == 2
    got = topk.select(SC, 5, prior=P)
    assert isinstance(got, np.ndarray) and np.array_equal(np.sort(got, 1), np.sort(idx, 1))
