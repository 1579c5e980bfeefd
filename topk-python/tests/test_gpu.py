"""The CUDA path through the Python API (skipped without a usable GPU).

Exactness of every kernel family the planner picks (asserted through `Selector.family`), calls
smaller than a plan's capacity, CUDA graph capture and replay with new lengths and row counts,
`torch.compile(fullgraph=True)`, two streams, a second device, CuPy through DLPack, the status
word, and the compat entry points against the peers' own outputs when the peer kit is there:

    TOPK_PEERS_DIR=/path/to/peers python3 -m pytest topk-python/tests/test_gpu.py

(`run_peers.py` and `vllm/vllm_peer.py` in that folder; `tvm_ffi` importable for FlashInfer and
SGLang.)
"""

from __future__ import annotations

import importlib
import os
import sys

import pytest

torch = pytest.importorskip("torch")

import topk  # noqa: E402
from topk import compat  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible to PyTorch", allow_module_level=True)
_WHY = topk.cuda_status(0)
if _WHY is not None:
    pytest.skip(f"the kernels cannot run here: {_WHY}", allow_module_level=True)

DEV = torch.device("cuda", 0)
K = 2048


# ------------------------------------------------------------------------------ checking
def check_exact(scores: torch.Tensor, lengths, out: torch.Tensor, k: int, rows=None) -> None:
    """The operator contract on the GPU, row by row in bulk: padding, range, distinctness and
    min(selected) >= max(unselected) with the k-th value equal to a full sort's."""
    m = scores.shape[0] if rows is None else rows
    scores = scores[:m]
    width = scores.shape[1]
    lens = (torch.full((m,), width, device=scores.device) if lengths is None else lengths[:m]).long()
    idx = out[:m, :k].long()
    pos = torch.arange(k, device=scores.device)[None, :]
    slot = pos < lens.clamp(max=k)[:, None]
    short = lens <= k
    want_short = torch.where(pos < lens[:, None], pos, torch.full_like(pos, -1))
    bad_short = (short[:, None] & (idx != want_short)).any(dim=1)
    assert not bad_short.any(), f"short rows wrong: {bad_short.nonzero().flatten()[:8].tolist()}"
    assert not (~slot & (idx != -1)).any(), "padding is not -1"
    assert not (slot & ((idx < 0) | (idx >= lens[:, None]))).any(), "index outside [0, L)"
    srt = torch.where(slot, idx, width + pos).sort(dim=1).values
    assert not (srt[:, 1:] == srt[:, :-1]).any(), "duplicate indices"
    long_rows = (~short).nonzero().flatten()
    for chunk in long_rows.split(64):
        if chunk.numel() == 0:
            continue
        s = scores[chunk].double()  # -0.0 == +0.0
        L = lens[chunk]
        valid = torch.arange(width, device=s.device)[None, :] < L[:, None]
        picked = torch.gather(s, 1, idx[chunk])
        chosen = torch.zeros_like(valid)
        chosen.scatter_(1, idx[chunk], True)
        masked = torch.where(valid, s, torch.full_like(s, -float("inf")))
        rest = torch.where(valid & ~chosen, s, torch.full_like(s, -float("inf")))
        assert (picked.min(dim=1).values >= rest.max(dim=1).values).all(), "selected < unselected"
        kth = torch.topk(masked, k, dim=1).values[:, -1]
        assert torch.equal(picked.min(dim=1).values, kth), "k-th value differs from a full sort"


def adversarial(rows: int, width: int, k: int, seed: int):
    """Random rows with ties at rank K, +-inf, signed zeros, subnormals and ragged lengths."""
    g = torch.Generator(device=DEV).manual_seed(seed)
    s = torch.randn(rows, width, device=DEV, generator=g)
    if rows > 1:
        s[1] = torch.round(s[1] * 4) / 4  # heavy ties around every rank
    if rows > 2:
        s[2, ::97] = float("inf")
        s[2, 1::89] = -float("inf")
    if rows > 3:
        s[3] = torch.where(s[3] > 0, 0.0, -0.0)
        s[3, :k] = 1.0
    if rows > 4:
        s[4] = s[4] * 1e-40  # subnormals
    lengths = torch.randint(0, width + 1, (rows,), device=DEV, generator=g, dtype=torch.int32)
    edge = torch.tensor([width, k, k + 1, 0, width, 1, width // 2], dtype=torch.int32, device=DEV)
    lengths[: min(rows, 7)] = edge[: min(rows, 7)]
    return s, lengths


# One shape per kernel family of the default map (topk-runtime/src/policy/rules.rs):
# (family, rows, width). Cluster needs compute capability 9.0.
FAMILIES = [
    ("rowlocal_streaming", 64, 16384),
    ("persistent", 1024, 8192),
    ("rowlocal_streaming", 64, 32768),
    ("persistent", 512, 131072),
    ("persistent", 2048, 65536),
    ("cluster", 4, 262144),
    ("cluster", 16, 1 << 20),
    ("staged", 16, 1 << 22),
]


@pytest.mark.parametrize("family,rows,width", FAMILIES)
def test_every_family_is_exact(family, rows, width):
    cc = torch.cuda.get_device_capability(DEV)
    sel = topk.Selector(K, rows, width, device=DEV)
    if family == "cluster" and cc[0] < 9:
        pytest.skip("cluster kernels need compute capability 9.0")
    assert sel.family == family, f"{rows} x {width}: planner chose {sel.family} ({sel.spec})"
    scores, lengths = adversarial(rows, width, K, seed=rows + width)
    out = torch.full((rows, K), -7, dtype=torch.int32, device=DEV)
    sel(scores, lengths, out=out)
    sel.check(scores, lengths)
    check_exact(scores, lengths, out, K)
    # A smaller call on the same plan: fewer rows, narrower rows, a strided view.
    half_rows, half_width = max(1, rows // 2), width // 2
    view = scores[:half_rows, 3 : 3 + half_width]
    lens = lengths[:half_rows].clamp(max=half_width).contiguous()
    small = sel(view, lens)
    sel.check(view, lens)
    check_exact(view, lens, small, K)
    # The eager path (its own plan for the shape's bucket) agrees with the contract too.
    eager = topk.select(scores, K, lengths, check=True)
    check_exact(scores, lengths, eager, K)


@pytest.mark.parametrize("k", [1, 64, 512, 1000, 4096])
def test_other_k(k):
    scores, lengths = adversarial(96, 100_000, k, seed=k)
    check_exact(scores, lengths, topk.select(scores, k, lengths, check=True), k)


def test_int64_lengths_full_rows_and_out():
    scores, lengths = adversarial(8, 50_000, 256, seed=3)
    out = torch.zeros(10, 300, dtype=torch.int32, device=DEV)
    topk.select(scores, 256, lengths.long(), out=out)
    check_exact(scores, lengths, out, 256)
    check_exact(scores, None, topk.select(scores, 256), 256)


def test_status_word_reports_nan_bad_lengths_and_rows():
    scores, lengths = adversarial(8, 20_000, 64, seed=5)
    lengths[:] = 20_000
    scores[5, 1234] = float("nan")
    with pytest.raises(ValueError, match=r"NaN.*row 5, column 1234"):
        topk.select(scores, 64, lengths, check=True)
    scores[5, 1234] = 0.0
    lengths[6] = 20_001
    with pytest.raises(ValueError, match="row 6 has length 20001"):
        topk.select(scores, 64, lengths, check=True)
    lengths[6] = 5
    sel = topk.Selector(64, 8, 20_000, device=DEV)
    live = torch.tensor([9], dtype=torch.int32, device=DEV)
    sel(scores, lengths, live_rows=live)
    with pytest.raises(ValueError, match="live row count"):
        sel.check()
    sel(scores, lengths)
    sel.check()  # cleared by the check before


def test_cuda_graph_replays_with_new_lengths_and_row_count():
    rows, width, k = 256, 131072, K
    sel = topk.Selector(k, rows, width, device=DEV)
    scores = torch.randn(rows, width, device=DEV)
    lengths = torch.full((rows,), width, dtype=torch.int32, device=DEV)
    live = torch.tensor([rows], dtype=torch.int32, device=DEV)
    out = torch.full((rows, k), -7, dtype=torch.int32, device=DEV)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        sel(scores, lengths, out=out, live_rows=live)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        sel(scores, lengths, out=out, live_rows=live)
    for m, seed in ((rows, 1), (100, 2), (1, 3), (0, 4)):
        new_scores, new_lengths = adversarial(rows, width, k, seed)
        scores.copy_(new_scores)
        lengths.copy_(new_lengths)
        live.fill_(m)
        out.fill_(-7)
        graph.replay()
        torch.cuda.synchronize()
        check_exact(scores, lengths, out, k, rows=m)
        assert (out[m:] == -7).all(), "rows past the live count were written"
    sel.check()


def test_eager_select_inside_graph_capture_plans_on_first_use():
    scores, lengths = adversarial(40, 70_000, 300, seed=9)
    out = torch.empty(40, 300, dtype=torch.int32, device=DEV)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):  # first call of this shape class: planned during capture
        topk.select(scores, 300, lengths, out=out)
    out.fill_(-7)
    graph.replay()
    torch.cuda.synchronize()
    check_exact(scores, lengths, out, 300)
    with pytest.raises(ValueError, match="check=True"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            topk.select(scores, 300, lengths, check=True)


def test_torch_compile_fullgraph():
    def f(s, l):
        idx = topk.select(s, K, l)
        return idx, torch.gather(s, 1, idx.clamp(min=0).long())

    compiled = torch.compile(f, fullgraph=True)
    scores, lengths = adversarial(64, 131072, K, seed=11)
    idx, values = compiled(scores, lengths)
    check_exact(scores, lengths, idx, K)
    out = torch.empty(64, K, dtype=torch.int32, device=DEV)
    g = torch.compile(lambda s, l, o: torch.ops.topk.select_out(s, K, l, o), fullgraph=True)
    g(scores, lengths, out)
    check_exact(scores, lengths, out, K)


def test_two_streams_at_once():
    a_scores, a_len = adversarial(512, 131072, K, seed=21)
    b_scores, b_len = adversarial(512, 131072, K, seed=22)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    s1.wait_stream(torch.cuda.current_stream())
    s2.wait_stream(torch.cuda.current_stream())
    outs = {}
    for _ in range(3):
        with torch.cuda.stream(s1):
            outs["a"] = topk.select(a_scores, K, a_len)
        with torch.cuda.stream(s2):
            outs["b"] = topk.select(b_scores, K, b_len)
    torch.cuda.synchronize()
    check_exact(a_scores, a_len, outs["a"], K)
    check_exact(b_scores, b_len, outs["b"], K)


def test_second_device_and_current_device_unchanged():
    if torch.cuda.device_count() < 2:
        pytest.skip("one CUDA device")
    dev = torch.device("cuda", 1)
    torch.cuda.set_device(0)
    scores = torch.randn(32, 100_000, device=dev)
    lengths = torch.randint(0, 100_001, (32,), device=dev, dtype=torch.int32)
    out = topk.select(scores, 512, lengths, check=True)
    assert out.device == dev
    assert torch.cuda.current_device() == 0, "the call changed PyTorch's current device"
    check_exact(scores, lengths, out, 512)
    with pytest.raises(ValueError, match="different|cuda:0"):
        topk.select(scores, 512, lengths.to("cuda:0"))


def test_cupy_through_dlpack():
    cupy = pytest.importorskip("cupy")
    scores = cupy.random.standard_normal((16, 200_000), dtype=cupy.float32)
    lengths = cupy.random.randint(0, 200_001, 16).astype(cupy.int32)
    out = topk.select(scores, 1024, lengths, check=True)
    assert isinstance(out, cupy.ndarray) and out.dtype == cupy.int32
    torch.cuda.synchronize()
    t = torch.from_dlpack(scores)
    check_exact(t, torch.from_dlpack(lengths), torch.from_dlpack(out), 1024)
    out64 = topk.select(scores, 1024, lengths.astype(cupy.int64))
    check_exact(t, torch.from_dlpack(lengths), torch.from_dlpack(out64), 1024)


def test_interface_call_enqueues_one_kernel_and_nothing_else():
    from torch.profiler import ProfilerActivity, profile

    scores, lengths = adversarial(64, 131072, K, seed=18)
    starts = torch.zeros(64, dtype=torch.int32, device=DEV)
    offsets = torch.arange(64, dtype=torch.int32, device=DEV)
    out = torch.empty(64, K, dtype=torch.int32, device=DEV)
    vals = torch.empty(64, K, device=DEV)
    kw = dict(starts=starts, ends=lengths, offsets=offsets, out=out, values=vals, sorted=True, deterministic=True)
    topk.select(scores, K, **kw)  # plan and warm up
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            topk.select(scores, K, **kw)
        torch.cuda.synchronize()
    device = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    if not device:
        pytest.skip("torch.profiler recorded no device activity here (CUPTI unavailable)")
    assert len(device) == 5, f"expected one kernel per call, got {sorted(set(device))} x {len(device)}"


def test_eager_call_enqueues_one_kernel_and_nothing_else():
    from torch.profiler import ProfilerActivity, profile

    scores, lengths = adversarial(64, 131072, K, seed=17)
    out = torch.empty(64, K, dtype=torch.int32, device=DEV)
    topk.select(scores, K, lengths, out=out)  # plan and warm up
    torch.cuda.synchronize()
    calls = 10
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            topk.select(scores, K, lengths, out=out)
        torch.cuda.synchronize()
    device = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    if not device:
        pytest.skip("torch.profiler recorded no device activity here (CUPTI unavailable)")
    assert len(device) == calls, f"expected one kernel per call, got {sorted(set(device))} x {len(device)}"
    assert not [n for n in device if "memcpy" in n.lower() or "memset" in n.lower()], device
    check_exact(scores, lengths, out, K)


# ------------------------------------------------------------------ compat against the peers
PEERS = os.environ.get("TOPK_PEERS_DIR")


def _peer(module: str, sub: str = ""):
    if not PEERS or not os.path.isdir(os.path.join(PEERS, sub)):
        pytest.skip("TOPK_PEERS_DIR is not set to the peer kit")
    path = os.path.join(PEERS, sub)
    if path not in sys.path:
        sys.path.insert(0, path)
    try:
        return importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - a missing tvm_ffi or library skips
        pytest.skip(f"{module} does not load: {e}")


def distinct(rows: int, width: int, seed: int):
    """Scores without ties, so every exact selector returns the same sets."""
    g = torch.Generator(device=DEV).manual_seed(seed)
    s = torch.randperm(rows * width, device=DEV, generator=g).reshape(rows, width).float()
    lengths = torch.randint(0, width + 1, (rows,), device=DEV, generator=g, dtype=torch.int32)
    lengths[:4] = torch.tensor([width, K, 5, 0], dtype=torch.int32)
    return s, lengths


def same_sets(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.equal(a.sort(dim=1).values, b.sort(dim=1).values)


def exact_sets(scores: torch.Tensor, lengths: torch.Tensor, k: int) -> torch.Tensor:
    """The unique Top-K index sets of tie-free rows, -1 padded, sorted within each row."""
    cols = torch.arange(scores.shape[1], device=scores.device)
    masked = torch.where(cols[None, :] < lengths[:, None].long(), scores, float("-inf"))
    idx = masked.topk(k, dim=1).indices.to(torch.int32)
    idx = torch.where(idx < lengths[:, None], idx, torch.full_like(idx, -1))
    return idx.sort(dim=1).values


def assert_agrees_with_peer(ours, theirs, expected, what: str) -> None:
    """Ours must equal the exact sets; the peer must equal ours on every row where it is
    exact itself, and the rows where it is not are named (a peer's error, not ours)."""
    ours_s, theirs_s = ours.sort(dim=1).values, theirs.sort(dim=1).values
    bad_ours = (ours_s != expected).any(dim=1).nonzero().flatten().tolist()
    assert not bad_ours, f"{what}: our rows {bad_ours[:8]} are not the exact Top-K"
    peer_bad = (theirs_s != expected).any(dim=1).nonzero().flatten().tolist()
    if peer_bad:
        import warnings

        warnings.warn(f"{what}: the peer's rows {peer_bad[:8]} ({len(peer_bad)} in all) are "
                      "not the exact Top-K; ours are")
    good = (theirs_s == expected).all(dim=1)
    assert good.any(), f"{what}: the peer was exact on no row"
    assert torch.equal(ours_s[good], theirs_s[good])


def test_flashinfer_ragged_transform_matches_peer():
    peers = _peer("run_peers")
    scores, lengths = distinct(64, 131072, 31)
    offsets = torch.randint(0, 1 << 20, (64,), device=DEV, dtype=torch.int32)
    ours = compat.top_k_ragged_transform(scores, offsets, lengths, K)
    theirs = peers.fi_select(scores, lengths, K, offsets=offsets)
    assert same_sets(ours, theirs)


def test_sglang_paged_v2_matches_peer():
    peers = _peer("run_peers")
    scores, lengths = distinct(48, 131072, 32)
    raw = exact_sets(scores, lengths, K)
    tables = ((1, None), (64, torch.randperm(48 * (131072 // 64), device=DEV)
                          .reshape(48, 131072 // 64).to(torch.int32)))
    for page_size, table in tables:
        meta = peers.sgl_plan(lengths)
        theirs = torch.empty(48, K, dtype=torch.int32, device=DEV)
        peers._call(peers.sgl_module().topk_transform_paged, scores, lengths, table, theirs, page_size, meta, None)
        ours = torch.empty(48, K, dtype=torch.int32, device=DEV)
        compat.topk_transform_paged_v2(scores, lengths, table, ours, page_size, compat.plan_topk_v2(lengths))
        expected = raw
        if table is not None:
            # Distinct pages keep the slots distinct, so sorted slot sets compare exactly.
            slots = torch.gather(table, 1, (raw.clamp(min=0) // page_size).long())
            slots = slots * page_size + raw.clamp(min=0) % page_size
            expected = torch.where(raw >= 0, slots, raw).sort(dim=1).values
        assert_agrees_with_peer(ours, theirs, expected, f"page_size {page_size}")


def test_vllm_entry_points_match_peer():
    vllm = _peer("vllm_peer", "vllm")
    rows, width = 64, 131072
    scores, lengths = distinct(rows, width, 33)
    ours = torch.empty(rows, K, dtype=torch.int32, device=DEV)
    compat.persistent_topk(scores, lengths, ours, None, K, width)
    assert same_sets(ours, vllm.persistent_select(scores, lengths, K))
    compat.top_k_per_row_decode(scores, 1, lengths, ours, rows, scores.stride(0), 1, K)
    assert same_sets(ours, vllm.decode_select(scores, lengths, K))
    # Prefill with real row windows: requests starting at 0, 40000 and 90000.
    starts = torch.tensor([0] * 20 + [40000] * 24 + [90000] * 20, dtype=torch.int32, device=DEV)
    ends = torch.minimum(starts + lengths, torch.tensor(width, device=DEV)).to(torch.int32)
    theirs = torch.empty(rows, K, dtype=torch.int32, device=DEV)
    stream = torch.cuda.current_stream().cuda_stream
    rc = vllm.lib().vllm_top_k_per_row_prefill(
        scores.data_ptr(), starts.data_ptr(), ends.data_ptr(), theirs.data_ptr(), rows,
        scores.stride(0), 1, K, stream,
    )
    assert rc == 0
    compat.top_k_per_row_prefill(scores, starts, ends, ours, rows, scores.stride(0), 1, K)
    assert same_sets(ours, theirs)
