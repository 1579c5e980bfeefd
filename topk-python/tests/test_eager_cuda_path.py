"""The eager CUDA path's checks and launch arguments (`topk._select._torch_cuda`), run without a
GPU: CPU tensors stand in for CUDA ones (their device ordinal is -1 alike) and the launch is
recorded instead of made. What the kernels then do is test_gpu.py's business."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from topk import _native, _select  # noqa: E402


@pytest.fixture
def launches(monkeypatch):
    """The launches made, each as a dict; the lengths are read at launch time (a converted
    copy is freed once the call returns)."""
    made = []

    def record(index, stream, scores, rows, width, pitch, lengths, out, out_pitch, k, check):
        lens = None
        if lengths:
            lens = np.ctypeslib.as_array(ctypes.cast(lengths, ctypes.POINTER(ctypes.c_int32)), (rows,)).copy()
        made.append(dict(index=index, stream=stream, scores=scores, rows=rows, width=width, pitch=pitch,
                         lengths=lengths, lens=lens, out=out, out_pitch=out_pitch, k=k, check=check))

    monkeypatch.setattr(_native, "cuda_select", record)
    monkeypatch.setattr(_select, "_raw_stream", lambda index: 1234)
    monkeypatch.setattr(_select._nvrtc, "preload", lambda: None)
    monkeypatch.setattr(_select, "_capturing", lambda: False)
    return made


def test_contiguous_call_passes_its_tensors_in_place(launches):
    scores = torch.randn(6, 500)
    lengths = torch.tensor([500, 0, 1, 16, 17, 300], dtype=torch.int32)
    out = torch.empty(6, 16, dtype=torch.int32)
    assert _select._torch_cuda(scores, 16, lengths, out, False) is out
    (c,) = launches
    assert c == dict(index=-1, stream=1234, scores=scores.data_ptr(), rows=6, width=500, pitch=500,
                     lengths=lengths.data_ptr(), lens=c["lens"], out=out.data_ptr(), out_pitch=16, k=16,
                     check=False)
    assert c["lens"].tolist() == lengths.tolist()


def test_views_pitches_and_conversions(launches):
    wide = torch.randn(10, 900)
    view = wide[::2, 100:600]  # row stride 1800, read in place
    lengths64 = torch.arange(0, 500, 100)  # int64: converted to int32
    out = torch.zeros(5, 40, dtype=torch.int32)[:, 3:35]  # row stride 40
    _select._torch_cuda(view, 32, lengths64, out, True)
    strided = torch.tensor([[7, 0], [8, 0], [9, 0], [10, 0], [11, 0]], dtype=torch.int32)[:, 0]
    got = _select._torch_cuda(view, 32, strided, None, False)
    single = wide[:1, :50]
    _select._torch_cuda(single, 8, None, None, False)
    a, b, c = launches
    assert (a["scores"], a["pitch"], a["out_pitch"], a["check"]) == (view.data_ptr(), 1800, 40, True)
    assert a["lengths"] != lengths64.data_ptr() and a["lens"].tolist() == [0, 100, 200, 300, 400]
    assert b["lens"].tolist() == [7, 8, 9, 10, 11] and b["lengths"] != strided.data_ptr()
    assert got.shape == (5, 32) and got.dtype == torch.int32 and b["out"] == got.data_ptr() and b["out_pitch"] == 32
    assert (c["rows"], c["width"], c["pitch"], c["lengths"]) == (1, 50, 900, 0)


def test_empty_calls_launch_nothing(launches):
    assert _select._torch_cuda(torch.randn(0, 50), 4, None, None, False).shape == (0, 4)
    out = torch.full((3, 4), 7, dtype=torch.int32)
    _select._torch_cuda(torch.randn(3, 0), 4, None, out, False)
    assert (out == -1).all()
    assert launches == []


@pytest.mark.parametrize(
    "args,error,match",
    [
        ((torch.randn(3, 10, dtype=torch.float64), 2, None, None), TypeError, "float32"),  # 16-bit: test_cuda_call_marshalling
        ((torch.randn(10), 2, None, None), ValueError, "2-D"),
        ((torch.randn(10, 3).t(), 2, None, None), ValueError, "column stride"),
        ((torch.randn(3, 10).as_strided((3, 10), (5, 1)), 2, None, None), ValueError, "row stride"),
        ((torch.randn(3, 10), 2, np.zeros(3, np.int32), None), TypeError, "torch tensor"),
        ((torch.randn(3, 10), 2, torch.zeros(3, dtype=torch.int16), None), TypeError, "int32 or int64"),
        ((torch.randn(3, 10), 2, torch.zeros(4, dtype=torch.int32), None), ValueError, r"shape \[3\]"),
        ((torch.randn(3, 10), 2, None, torch.zeros(3, 2)), TypeError, "out must be int32"),
        ((torch.randn(3, 10), 2, None, torch.zeros(3, 1, dtype=torch.int32)), ValueError, "at least"),
        ((torch.randn(3, 10), 2, None, np.zeros((3, 2), np.int32)), TypeError, "torch tensor"),
        ((torch.randn(3, 10), 2, None, torch.zeros(2, 3, dtype=torch.int32).t()), ValueError, "column stride"),
    ],
)
def test_bad_input_is_refused_before_any_launch(launches, args, error, match):
    with pytest.raises(error, match=match):
        _select._torch_cuda(*args, False)
    assert launches == []
