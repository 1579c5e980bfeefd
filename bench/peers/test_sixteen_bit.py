"""Tests of sixteen_bit.py without a GPU: shape, dtype and profile parsing, the floor of 2-byte
scores, the report from a fake result, and (with torch, on the CPU with CUDA stand-ins) the
verifier on 16-bit ties and the per-entry flow."""

import contextlib
import io
import os
import sys
import time
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sixteen_bit as sb  # noqa: E402
from call_shapes import ShapeError  # noqa: E402

try:
    import torch
except ImportError:  # the GPU machine has torch; a bare CPU machine may not
    torch = None


class ParseTest(unittest.TestCase):
    def test_default_shapes_are_the_four_corners_as_terminal_windows(self):
        calls = sb.parse_shapes(sb.DEFAULT_SHAPES)
        self.assertEqual([(c.rows, c.width) for c in calls],
                         [(512, 131072), (2048, 262144), (512, 1048576), (4096, 262144)])
        self.assertEqual([c.name for c in calls], ["512x128K", "2048x256K", "512x1M", "4096x256K"])
        for c in calls:  # row r has length N - M + r + 1
            self.assertEqual(c.lengths()[0], c.width - c.rows + 1)
            self.assertEqual(c.lengths()[-1], c.width)

    def test_shape_spellings(self):
        self.assertEqual(sb.parse_shapes("512x128K, 8x1M"),
                         sb.parse_shapes("custom:512x131072,8x1048576"))
        for bad in ("", "512", "9x3", "4xK", ","):
            with self.assertRaises(ShapeError, msg=bad):
                sb.parse_shapes(bad)

    def test_dtypes_canonical_in_order_without_repeats(self):
        self.assertEqual(sb.parse_dtypes(sb.DEFAULT_DTYPES), ["f16", "bf16", "f32"])
        self.assertEqual(sb.parse_dtypes("bfloat16, half,F16,float32"), ["bf16", "f16", "f32"])
        for bad in ("", "f64", "f16,int8"):
            with self.assertRaises(ValueError, msg=bad):
                sb.parse_dtypes(bad)

    def test_profiles(self):
        self.assertEqual(sb.parse_profiles(sb.DEFAULT_PROFILES), ["indexer", "iid"])
        with self.assertRaises(ValueError):
            sb.parse_profiles("indexer,gaussian")


class FloorTest(unittest.TestCase):
    def test_two_bytes_a_16_bit_score_at_4_49_tb_s(self):
        (call,) = sb.parse_shapes("512x131072")
        elements = 512 * (131072 - 511) + 512 * 511 // 2  # lengths 130561 .. 131072
        self.assertEqual(call.valid_elements, elements)
        for d in ("f16", "bf16"):
            self.assertEqual(sb.valid_bytes(call, d), 2 * elements)
            self.assertAlmostEqual(sb.floor_us(call, d), 2 * elements / 4.49e12 * 1e6)
        self.assertAlmostEqual(sb.floor_us(call, "f32"), 2 * sb.floor_us(call, "f16"))
        self.assertAlmostEqual(sb.floor_us(call, "f16"), 29.834, places=3)

    def test_list_needs_no_gpu_and_prints_each_entry(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = sb.main(["--list", "--shapes", "512x128K,512x1M", "--dtypes", "f16,f32",
                          "--profiles", "iid"])
        self.assertEqual(rc, 0)
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[-1], "# 4 entries")
        self.assertEqual(lines[1].split("\t")[:3], ["iid", "512x128K", "f16"])
        self.assertEqual(lines[1].split("\t")[-1], "29.83")

    def test_bad_arguments_stop_before_the_gpu(self):
        with contextlib.redirect_stderr(io.StringIO()):
            for argv in (["--shapes", "9x3"], ["--dtypes", "f8"], ["--peers", "sglang"],
                         ["--shapes", "4x1024"],  # narrower than K
                         []):  # no --gen-cu
                self.assertEqual(sb.main(argv), sb.pb.EXIT_SETUP, argv)


def ok(us, **kw):
    return {"status": "ok", "median_ms": us / 1e3, "verify_eager": {"exact": True}, **kw}


def fake_doc():
    (a, b) = sb.parse_shapes("512x128K,512x1M")
    entries = []
    for call, d, peers in (
        (a, "f16", {"topk": ok(60.0, route="persistent: k=2048", route_eager="persistent: k=2048"),
                    "flashinfer": ok(150.0, route="radix: RadixTopKMultiCTA",
                                     route_eager="cub (DeviceBatchedTopK)"),
                    "torch": ok(600.0)}),
        (a, "bf16", {"topk": ok(40.0),
                     "flashinfer": {"status": "inexact", "stage": "after timing",
                                    "detail": "copy 0: 3/512 rows wrong",
                                    "verify": {"bad_rows": 3}},
                     "torch": {"status": "unavailable", "error": "not asked"}}),
        (b, "f32", {"topk": {"status": "error", "stage": "eager call", "error": "boom | x"},
                    "flashinfer": ok(900.0), "torch": ok(4000.0, timing_mode="eager")}),
    ):
        entries.append({"profile": "indexer", "dtype": d,
                        "call": dict(call.to_json(), valid_bytes=sb.valid_bytes(call, d)),
                        "floor_us": sb.floor_us(call, d), "peers": peers,
                        "ties": {"long_rows": 512, "rows_not_unique": 128,
                                 "tie_group_mean": 3.5, "tie_group_max": 40},
                        "data": {"valid_pos_inf": 0, "valid_neg_inf": 0}})
    meta = {"gpu": "fake", "k": 2048, "peers": list(sb.PEERS), "kit": {"flashinfer_version": "0.7"}}
    return {"schema": sb.SCHEMA, "meta": meta, "entries": entries, "problems": ["p1"]}


class ReportTest(unittest.TestCase):
    def test_rows_floor_ratios_speedups_and_verdicts(self):
        doc = fake_doc()
        rows = sb.build_report(doc)["rows"]
        r = rows[0]
        self.assertAlmostEqual(r["us"]["topk"], 60.0)
        floor = sb.floor_us(sb.parse_shapes("512x128K")[0], "f16")
        self.assertAlmostEqual(r["floor_us"], floor)
        self.assertAlmostEqual(r["x_floor"]["topk"], 60.0 / floor)
        self.assertAlmostEqual(r["speedup"]["flashinfer"], 2.5)
        self.assertAlmostEqual(r["speedup"]["torch"], 10.0)
        self.assertTrue(r["exact"])
        r = rows[1]
        self.assertIsNone(r["us"]["flashinfer"])
        self.assertIsNone(r["speedup"]["flashinfer"])
        self.assertTrue(r["verdicts"]["flashinfer"].startswith("INEXACT at after timing"))
        self.assertTrue(r["verdicts"]["torch"].startswith("unavailable"))
        self.assertFalse(r["exact"])  # an inexact peer; the unavailable one does not count
        r = rows[2]
        self.assertIsNone(r["us"]["topk"])
        self.assertEqual(r["speedup"], {"flashinfer": None, "torch": None})
        self.assertEqual(r["verdicts"]["topk"], "error at eager call: boom | x")

    def test_an_inexact_eager_call_is_not_called_exact(self):
        e = ok(10.0, verify_eager={"exact": False})
        self.assertIn("eager call INEXACT", sb.verdict(e))
        self.assertEqual(sb.verdict(None), "not run")

    def test_summary_is_the_geometric_mean_per_dtype(self):
        doc = fake_doc()
        s = sb.build_report(doc)["summary"]
        self.assertEqual(list(s), ["f16", "bf16", "f32"])
        self.assertAlmostEqual(s["f16"]["speedup"]["flashinfer"], 2.5)
        self.assertIsNone(s["bf16"]["speedup"]["torch"])
        self.assertIsNone(s["f32"]["ours_x_floor"])
        self.assertAlmostEqual(sb.geomean([2.0, 8.0, None]), 4.0)

    def test_markdown_table(self):
        text = sb.markdown(fake_doc())
        lines = text.splitlines()
        head = next(i for i, x in enumerate(lines) if x.startswith("| profile | shape |"))
        table = lines[head:head + 5]
        self.assertEqual(len({line.count("|") for line in table}), 1, table)  # same columns
        f16, bf16, f32 = table[2:]
        self.assertIn("| 29.8 | 60.0 | 2.01x | 150.0 (5.03x) | 600.0 (20.11x) | 2.50x | 10.00x "
                      "| yes |", f16)
        self.assertIn("INEXACT(3)", bf16)
        self.assertIn("n/a", bf16)
        self.assertIn("flashinfer: INEXACT at after timing", bf16)
        self.assertIn("ERROR", f32)
        self.assertIn("*", f32)  # timed eagerly
        self.assertIn("boom / x", f32)  # no stray column separator
        self.assertIn("- **f16** (1 entries): ours/floor 2.01x, vs flashinfer 2.50x, "
                      "vs torch 10.00x", text)
        self.assertIn("| indexer | 512x128K | f16 | 128/512 (25.0%) | 3.5 | 40 | 0 |", text)
        self.assertIn("flashinfer: radix: RadixTopKMultiCTA (eager call: cub "
                      "(DeviceBatchedTopK))", text)
        self.assertIn("- p1", text)


class FakeEvent:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


@contextlib.contextmanager
def fake_cuda():
    """torch.cuda's graphs, events and memory queries replaced: capture runs the call once."""
    import graph_timing

    class Graph:
        def replay(self):
            pass

    with contextlib.ExitStack() as stack:
        for name, value in (("synchronize", lambda *a, **k: None), ("Event", FakeEvent),
                            ("CUDAGraph", Graph),
                            ("graph", lambda g, **k: contextlib.nullcontext()),
                            ("empty_cache", lambda: None),
                            ("mem_get_info", lambda *a: (64 << 30, 80 << 30))):
            stack.enter_context(mock.patch.object(torch.cuda, name, value, create=True))
        stack.enter_context(mock.patch.object(graph_timing, "l2_bytes", lambda *a: 1 << 20))
        yield


def scores(rows, width, k, dtype, seed=0):
    """Random float32 scores in a narrow range (many ties once cast), -inf past each length of a
    terminal window, cast to dtype."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(rows, width, generator=g) * 4).to(dtype).float()
    lengths = torch.arange(width - rows + 1, width + 1, dtype=torch.int32)
    col = torch.arange(width).unsqueeze(0)
    x.masked_fill_(col >= lengths.to(torch.int64).unsqueeze(1), float("-inf"))
    return x, lengths


@unittest.skipIf(torch is None, "torch is not installed")
class SixteenBitTorchTest(unittest.TestCase):
    def test_the_verifier_takes_any_tie_break_of_16_bit_scores(self):
        from exactness import MISSED_LARGER, verify_selection

        for dtype in (torch.float16, torch.bfloat16):
            x = torch.tensor([[1.0, 3.0, 2.0, 2.0, 2.0, -1.0, 2.0]], dtype=dtype)
            lengths = torch.tensor([7], dtype=torch.int32)
            for picks in ([1, 2, 3], [1, 4, 6], [6, 1, 3]):  # 3.0 and any two of the four 2.0
                v = verify_selection(x, lengths, torch.tensor([picks], dtype=torch.int32), 3)
                self.assertTrue(v.exact, (dtype, picks, v.summary()))
            v = verify_selection(x, lengths, torch.tensor([[2, 3, 4]], dtype=torch.int32), 3)
            self.assertEqual(v.failures, {MISSED_LARGER: 1})

    def test_tie_stats_counts_rows_whose_set_is_not_unique(self):
        x = torch.tensor([[5.0, 2.0, 2.0, 2.0, 1.0], [5.0, 4.0, 2.0, 1.0, 0.0],
                          [1.0, 1.0, float("-inf"), float("-inf"), float("-inf")]])
        lengths = torch.tensor([5, 5, 2], dtype=torch.int32)
        t = sb.tie_stats(torch, x, lengths, 2, 1 << 20)
        # row 0: K-th value 2.0 held by three, room for one; row 1: unique; row 2: L <= K
        self.assertEqual(t, {"long_rows": 2, "rows_not_unique": 1, "tie_group_mean": 2.0,
                             "tie_group_max": 3})

    def test_entries_in_each_dtype_are_cast_checked_timed_and_verified(self):
        import peer_adapters

        k, (call,) = 16, sb.parse_shapes("6x300")
        x32, lengths = scores(call.rows, call.width, k, torch.bfloat16)
        args = types.SimpleNamespace(k=k, reps=2, warmup=1, verify_chunk_gib=1.0)
        peers = [peer_adapters.TorchTopK(), peer_adapters.FlashInfer(None, "no kit")]
        with fake_cuda():
            recs = {d: sb.run_entry(torch, call, "iid", d, x32, lengths, args, peers)
                    for d in ("f16", "bf16", "f32")}
        for d, rec in recs.items():
            e = rec["peers"]["torch"]
            self.assertEqual(e["status"], "ok", (d, e))
            self.assertEqual(e["input_dtype"], sb.DTYPES[d][0])
            self.assertAlmostEqual(e["x_floor"], e["median_ms"] * 1e3 / sb.floor_us(call, d))
            self.assertEqual(rec["call"]["valid_bytes"], sb.valid_bytes(call, d))
            self.assertEqual(rec["peers"]["flashinfer"],
                             {"status": "unavailable", "error": "no kit"})
            self.assertEqual(rec["data"]["nan"], 0)
            self.assertGreater(rec["ties"]["rows_not_unique"], 0)  # values cast to 16 bits
            self.assertEqual(sb.verdict(e), "exact")
        self.assertEqual(recs["f16"]["score_bytes"], 2)
        self.assertEqual(recs["f32"]["score_bytes"], 4)


if __name__ == "__main__":
    unittest.main()
