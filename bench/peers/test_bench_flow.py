"""The per-call flow of peers_bench.py on the CPU, with torch.cuda's timing and graph calls
replaced by stand-ins: statuses, verification at every stage, capture fallback, reporting."""

import contextlib
import os
import sys
import time
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
except ImportError:
    torch = None


class FakeEvent:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.t - self.t) * 1e3


class FakeGraph:
    """Capture runs the work once (eagerly); replays leave the captured output as it is."""

    def replay(self):
        pass


class FailingGraph:
    def __init__(self):
        raise RuntimeError("operation not permitted when stream is capturing")


@contextlib.contextmanager
def fake_cuda(graph_cls=FakeGraph):
    import graph_timing

    with contextlib.ExitStack() as stack:
        for name, value in (("synchronize", lambda *a, **k: None), ("Event", FakeEvent),
                            ("CUDAGraph", graph_cls),
                            ("graph", lambda g, **k: contextlib.nullcontext()),
                            ("empty_cache", lambda: None),
                            ("mem_get_info", lambda *a: (64 << 30, 80 << 30))):
            stack.enter_context(mock.patch.object(torch.cuda, name, value, create=True))
        stack.enter_context(mock.patch.object(graph_timing, "l2_bytes", lambda *a: 50 << 20))
        yield


class CpuGenerator:
    """Random scores with the -inf suffix, as the device generator writes them."""

    def fill(self, out, lengths, call, seed, profile, k):
        g = torch.Generator().manual_seed(seed)
        out.copy_(torch.randn(out.shape, generator=g))
        col = torch.arange(out.shape[1]).unsqueeze(0)
        out.masked_fill_(col >= lengths.to(torch.int64).unsqueeze(1), float("-inf"))


def args(**kw):
    base = dict(k=16, reps=3, warmup=1, verify_chunk_gib=1.0, seed=3, profile="indexer")
    base.update(kw)
    return types.SimpleNamespace(**base)


@unittest.skipIf(torch is None, "torch is not installed")
class BenchFlowTest(unittest.TestCase):
    def setUp(self):
        import peer_adapters
        import peers_bench

        self.pb = peers_bench
        self.pa = peer_adapters
        self.dev = mock.patch.object(peers_bench, "DEVICE", "cpu")
        self.dev.start()
        self.addCleanup(self.dev.stop)

    def peer(self, name, select, to_contract=None):
        p = self.pa.Peer()
        p.name = name
        p.select = select
        if to_contract:
            p.to_contract = to_contract
        return p

    def run_calls(self, peers, shapes="custom:5x300,40x64", graph_cls=FakeGraph):
        from call_shapes import parse_shapes

        with fake_cuda(graph_cls):
            return [self.pb.run_call(torch, c, args(), CpuGenerator(), peers)
                    for c in parse_shapes(shapes)]

    def test_exact_peer_is_timed_with_graphs_and_rotated_copies(self):
        recs = self.run_calls([self.pa.TorchTopK()])
        for rec in recs:
            e = rec["peers"]["torch"]
            self.assertEqual(e["status"], "ok", e)
            self.assertEqual(e["timing_mode"], "graph")
            self.assertGreater(e["median_ms"], 0)
            self.assertEqual(len(e["timing"]["times_ms"]), 3)
            self.assertTrue(e["verify_eager"]["exact"])
            # inputs of a few KB rotate among the most copies allowed
            self.assertEqual(rec["input_copies"], e["timing"]["input_copies"])
            self.assertGreater(rec["input_copies"], 1)
            self.assertEqual(e["timing"]["replays_per_round"] % rec["input_copies"], 0)
        self.assertEqual(recs[1]["data"]["nan"], 0)

    def test_failed_capture_falls_back_to_eager_timing_and_says_so(self):
        (rec,) = self.run_calls([self.pa.TorchTopK()], "custom:5x300", graph_cls=FailingGraph)
        e = rec["peers"]["torch"]
        self.assertEqual(e["status"], "ok")
        self.assertEqual(e["timing_mode"], "eager")
        self.assertIn("graph capture failed", e["note"])
        self.assertIn("*", self.pb.short_status(e))

    def test_inexact_peer_is_reported_and_not_timed(self):
        def wrong(x, lengths, k):  # the k smallest: wrong on every long row
            return torch.topk(x.nan_to_num(neginf=1e30), k, dim=1, largest=False).indices

        (rec,) = self.run_calls([self.peer("smallest", wrong, self.pa.torch_indices_to_contract)],
                                "custom:5x300")
        e = rec["peers"]["smallest"]
        self.assertEqual(e["status"], "inexact")
        self.assertEqual(e["stage"], "first replay")
        self.assertNotIn("timing", e)
        self.assertEqual(e["verify"]["bad_rows"], 5)
        self.assertIn("INEXACT", self.pb.short_status(e))

    def test_a_peer_that_turns_wrong_while_timed_is_inexact_after_timing(self):
        from graph_timing import MAX_INPUT_COPIES

        calls = {"n": 0}
        good = self.pa.TorchTopK()
        exact_calls = 1 + MAX_INPUT_COPIES  # the eager call and the first replay of each copy

        def flaky(x, lengths, k):
            calls["n"] += 1
            out = good.select(x, lengths, k)
            return out * 0 if calls["n"] > exact_calls else out

        (rec,) = self.run_calls([self.peer("flaky", flaky, self.pa.torch_indices_to_contract)],
                                "custom:5x300", graph_cls=FailingGraph)
        e = rec["peers"]["flaky"]
        self.assertEqual(e["status"], "inexact")
        self.assertEqual(e["stage"], "after timing")
        self.assertIn("nondeterministic", e["detail"])

    def test_a_crashing_peer_is_reported_with_its_stage_and_the_others_still_run(self):
        def boom(x, lengths, k):
            raise RuntimeError("no kernel image is available\nsecond line")

        with contextlib.redirect_stderr(open(os.devnull, "w")):
            (rec,) = self.run_calls([self.peer("boom", boom), self.pa.TorchTopK()],
                                    "custom:5x300")
        e = rec["peers"]["boom"]
        self.assertEqual(e["status"], "error")
        self.assertEqual(e["stage"], "eager call")
        self.assertEqual(e["error"], "RuntimeError: no kernel image is available")
        self.assertEqual(rec["peers"]["torch"]["status"], "ok")

    def test_unavailable_peer_keeps_its_error_on_every_call(self):
        fi = self.pa.FlashInfer(None, "tvm_ffi unavailable: no wheel")
        recs = self.run_calls([fi])
        for rec in recs:
            self.assertEqual(rec["peers"]["flashinfer"],
                             {"status": "unavailable", "error": "tvm_ffi unavailable: no wheel"})

    def test_too_little_memory_skips_the_call_with_the_numbers(self):
        from call_shapes import parse_shapes

        (call,) = parse_shapes("custom:5x300")
        with fake_cuda(), mock.patch.object(torch.cuda, "mem_get_info", lambda *a: (1 << 30, 2)):
            rec = self.pb.run_call(torch, call, args(), CpuGenerator(), [self.pa.TorchTopK()])
        e = rec["peers"]["torch"]
        self.assertEqual(e["status"], "skipped")
        self.assertIn("GiB free", e["error"])

    def test_tables_and_trace_summaries(self):
        recs = self.run_calls([self.pa.TorchTopK()])
        text = self.pb.table(recs, ["torch"])
        self.assertEqual(len(text.splitlines()), 2 + len(recs))
        self.assertIn("5x300", text)
        fake = [{"call": {"name": f"t.c{i}", "trace": "t", "valid_bytes": 100, "rows": 1,
                          "width": 1},
                 "floor_ms": 1.0, "peers": {"a": {"status": "ok", "median_ms": 2.0},
                                            "b": {"status": "ok" if i else "error",
                                                  "median_ms": 1.0}}}
                for i in range(3)]
        (t,) = self.pb.trace_summaries(fake, ["a", "b"])
        self.assertEqual(t["peers"]["a"], {"status": "ok", "total_ms": 6.0, "x_floor": 2.0})
        self.assertEqual(t["peers"]["b"]["status"], "incomplete")
        self.assertEqual(t["peers"]["b"]["failed_calls"], [("t.c0", "error")])


    def test_main_writes_a_result_that_merge_results_reads(self):
        import json
        import tempfile

        import merge_results

        class Generator(CpuGenerator):
            def __init__(self, path):
                self.info = {"source": path}

        meta = {"gpu": "cpu stand-in", "profile": "indexer", "k": 16, "seed": 3}
        with tempfile.TemporaryDirectory() as d, fake_cuda(), contextlib.ExitStack() as st:
            st.enter_context(mock.patch.object(torch.cuda, "is_available", lambda: True))
            st.enter_context(mock.patch("score_generator.ScoreGenerator", Generator))
            st.enter_context(mock.patch("peer_adapters.build_peers",
                                        lambda names, kit: ([self.pa.TorchTopK()], None)))
            st.enter_context(mock.patch.object(self.pb, "collect_meta", lambda *a: dict(meta)))
            st.enter_context(contextlib.redirect_stdout(open(os.devnull, "w")))
            out = os.path.join(d, "peers.json")
            rc = self.pb.main(["--shapes", "custom:5x300,40x64", "--k", "16", "--seed", "3",
                               "--gen-cu", "gen.cu", "--peers", "torch", "--reps", "2",
                               "--json-out", out])
            self.assertEqual(rc, 0)
            with open(out) as f:
                doc = json.load(f)
            self.assertEqual([c["call"]["name"] for c in doc["calls"]], ["5x300", "40x64"])
            self.assertEqual(doc["problems"], [])
            ours = {"5x300": {"median_ms": 1e-6, "rows": 5, "width": 300, "k": 16, "exact": True}}
            merged = merge_results.merge([(out, doc)], ours)
        first = merged["calls"][0]
        self.assertEqual(first["best_peer"], "torch")
        self.assertAlmostEqual(first["speedup_vs_best"],
                               doc["calls"][0]["peers"]["torch"]["median_ms"] / 1e-6)
        self.assertEqual(merged["calls"][1]["ours"]["status"], "missing")

    def test_main_refuses_bad_shapes_and_missing_generator_before_touching_the_gpu(self):
        with contextlib.redirect_stderr(open(os.devnull, "w")):
            self.assertEqual(self.pb.main(["--shapes", "custom:9x3"]), self.pb.EXIT_SETUP)
            self.assertEqual(self.pb.main(["--shapes", "matrix"]), self.pb.EXIT_SETUP)
            self.assertEqual(self.pb.main(["--shapes", "custom:4x100", "--gen-cu", "g.cu"]),
                             self.pb.EXIT_SETUP)  # width below K


if __name__ == "__main__":
    unittest.main()
