"""The envelope driver on the CPU with torch.cuda's timing and graph calls replaced by stand-ins
(as test_bench_flow.py): ours through a stand-in `topk` package (Selector inside captures), the
vLLM entries and where they apply, the limit probes, the outputs, the time budget, resuming
after a lost context, and the SGLang build check."""

import contextlib
import io
import json
import os
import sys
import tempfile
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
except ImportError:
    torch = None

if torch is not None:
    from test_bench_flow import CpuGenerator, FakeEvent, FakeGraph


class Capturing:
    """torch.cuda.graph stand-in: runs the work once with is_current_stream_capturing True."""

    active = False

    def __init__(self, graph, **kw):
        pass

    def __enter__(self):
        Capturing.active = True

    def __exit__(self, *exc):
        Capturing.active = False


@contextlib.contextmanager
def fake_cuda():
    import graph_timing
    import peers_bench

    with contextlib.ExitStack() as stack:
        for name, value in (("synchronize", lambda *a, **k: None), ("Event", FakeEvent),
                            ("CUDAGraph", FakeGraph), ("graph", Capturing),
                            ("empty_cache", lambda: None),
                            ("mem_get_info", lambda *a: (64 << 30, 80 << 30)),
                            ("is_current_stream_capturing", lambda: Capturing.active),
                            ("current_device", lambda: 0), ("is_available", lambda: True),
                            ("get_device_properties",
                             lambda *a: types.SimpleNamespace(multi_processor_count=132))):
            stack.enter_context(mock.patch.object(torch.cuda, name, value, create=True))
        stack.enter_context(mock.patch.object(graph_timing, "l2_bytes", lambda *a: 50 << 20))
        stack.enter_context(mock.patch.object(peers_bench, "DEVICE", "cpu"))
        yield


def exact(scores, lengths, k):
    from peer_adapters import torch_indices_to_contract

    return torch_indices_to_contract(torch.topk(scores, k, dim=1).indices, lengths)


class FakeTopk:
    """The `topk` package's surface that the adapter uses."""

    def __init__(self):
        self.eager_calls = 0
        self.selector_calls = 0
        self.planned = []
        self.__version__ = "0.0-test"
        fake = self

        class Selector:
            def __init__(self, k, rows, width, device=None):
                fake.planned.append((k, rows, width))
                self.k, self.family, self.spec = k, "persistent", f"k={k},test"

            def __call__(self, scores, lengths=None):
                assert torch.cuda.is_current_stream_capturing(), "Selector used outside a capture"
                fake.selector_calls += 1
                return exact(scores, lengths, self.k)

        self.Selector = Selector

    def cuda_status(self, device):
        return None

    def select(self, scores, k, lengths):
        assert not torch.cuda.is_current_stream_capturing(), "topk.select used inside a capture"
        self.eager_calls += 1
        return exact(scores, lengths, k)


class FakeVllm:
    """vllm_peer.py's functions, exact, recording what they were given."""

    def __init__(self):
        self.max_seq_lens = []
        self.used = []

    def indexer_select(self, scores, lengths, k=2048, max_seq_len=None):
        self.used.append("indexer")
        self.max_seq_lens.append((int(lengths.max()), max_seq_len))
        return exact(scores, lengths, k)

    def decode_select(self, scores, lengths, k=2048):
        self.used.append("decode")
        return exact(scores, lengths, k)

    def prefill_select(self, scores, lengths, k=2048):
        self.used.append("prefill")
        return exact(scores, lengths, k)

    def describe(self, op, scores, k=2048, max_seq_len=None):
        return f"{op}: cooperative (test)"


class FakeKernels:
    """launch_limits.LimitKernels on the CPU: the read writes the max of the copy it reads."""

    info = {"compiled_with": "test"}

    def __init__(self, wrong=False):
        self.wrong = wrong

    def empty_call(self, device):
        return lambda i, capturing: None

    def read_call(self, copies, lengths, sm_count):
        out = torch.empty(4)

        def call(i, capturing):
            out.fill_(float(copies[i].max()) - (1.0 if self.wrong else 0.0))
            return out

        return call, out, {"grid": [1, 1, 1]}


@unittest.skipIf(torch is None, "torch is not installed")
class AdapterTest(unittest.TestCase):
    def test_ours_runs_topk_select_eagerly_and_a_selector_in_captures(self):
        import peer_adapters as pa

        fake = FakeTopk()
        with mock.patch.dict(sys.modules, {"topk": fake}), fake_cuda():
            ours = pa.TopkPython(selector_in_graphs=True)
            self.assertTrue(ours.available)
            x = torch.randn(3, 40)
            lengths = torch.tensor([40, 30, 10], dtype=torch.int32)
            ours.select(x, lengths, 16)
            with Capturing(None):
                ours.select(x, lengths, 16)
                ours.select(x, lengths, 16)
            self.assertEqual((fake.eager_calls, fake.selector_calls), (1, 2))
            self.assertEqual(fake.planned, [(16, 3, 40)])  # planned once, before the capture
            self.assertEqual(ours.route(3, 40, 16), "persistent: k=16,test")
            self.assertEqual(fake.planned, [(16, 3, 40)])
            ours.select(torch.randn(5, 40), torch.full((5,), 40, dtype=torch.int32), 16)
            self.assertEqual(fake.planned[-1], (16, 5, 40))

    def test_vllm_entries_apply_where_vllm_uses_them(self):
        import peer_adapters as pa
        from envelope_calls import decode_call, prefill_call, spec_call, window_call

        calls = {"decode": decode_call(2, 64, "rand", 0), "spec": spec_call(2, 2, 64, "rand", 0),
                 "prefill": prefill_call(8, 64, "from1"), "window": window_call(4, 64)}
        entries = {e: pa.VllmEntry(e, FakeVllm(), None) for e in pa.VLLM_ENTRIES}
        applies = {e: sorted(k for k, c in calls.items() if not p.not_applicable(c))
                   for e, p in entries.items()}
        self.assertEqual(applies, {"indexer": ["decode", "prefill", "spec", "window"],
                                   "decode": ["decode", "spec"],
                                   "prefill": ["prefill", "window"]})
        self.assertIn("decode_select", entries["decode"].not_applicable(calls["prefill"]))
        with self.assertRaises(ValueError):
            pa.VllmEntry("sampled", None, None)

    def test_vllm_indexer_gets_the_batch_max_read_before_the_capture(self):
        import peer_adapters as pa

        module = FakeVllm()
        entry = pa.VllmEntry("indexer", module, None)
        x = torch.randn(3, 50)
        lengths = torch.tensor([20, 45, 30], dtype=torch.int32)
        with fake_cuda():
            entry.select(x, lengths, 8)
            with Capturing(None):
                entry.select(x, lengths, 8)
        self.assertEqual(module.max_seq_lens, [(45, 45), (45, 45)])
        self.assertEqual(entry.route(3, 50, 8), "indexer: cooperative (test)")

    def test_build_peers_expands_vllm_and_reports_a_missing_kit(self):
        import peer_adapters as pa

        self.assertEqual(pa.expand_peer_names(["topk", "vllm"]),
                         ["topk", "vllm.indexer", "vllm.decode", "vllm.prefill"])
        with tempfile.TemporaryDirectory() as kit:
            peers, info = pa.build_peers(["vllm.decode", "torch"], kit)
        self.assertEqual([p.name for p in peers], ["vllm.decode", "torch"])
        self.assertFalse(peers[0].available)
        self.assertIn("vllm/vllm_peer.py", peers[0].error)
        self.assertIn("error", info["vllm"])
        with self.assertRaisesRegex(ValueError, "unknown peer"):
            pa.build_peers(["vllm.sampled"], ".")


@unittest.skipIf(torch is None, "torch is not installed")
class LengthsTensorTest(unittest.TestCase):
    def test_the_generator_gets_the_calls_own_lengths_and_refuses_impossible_ones(self):
        from call_shapes import Call
        from envelope_calls import spec_call
        from score_generator import GeneratorError, lengths_tensor

        c = spec_call(4, 3, 4096, "rand", seed=0)
        t = lengths_tensor(c, "cpu")
        self.assertEqual(t.dtype, torch.int32)
        self.assertEqual(t.tolist(), c.lengths())
        with self.assertRaisesRegex(GeneratorError, r"in \[0, 10\]"):
            lengths_tensor(Call("w", 3, 10, 9, 0), "cpu")  # 9, 10, 11: past the width


@unittest.skipIf(torch is None, "torch is not installed")
class LimitsTest(unittest.TestCase):
    def test_empty_kernel_and_bare_read_are_timed_and_the_read_is_checked(self):
        from launch_limits import measure_limits

        copies = [torch.randn(4, 64) for _ in range(3)]
        copies = [copies[0]] + [copies[0].clone() for _ in range(2)]
        lengths = torch.full((4,), 64, dtype=torch.int32)
        with fake_cuda():
            res = measure_limits(torch, FakeKernels(), copies, lengths, 3, 1, 132)
            self.assertEqual(res["empty"]["status"], "ok")
            self.assertEqual(res["empty"]["timing"]["input_copies"], 1)
            self.assertEqual(res["bare_read"]["status"], "ok")
            self.assertEqual(res["bare_read"]["timing"]["input_copies"], 3)
            self.assertGreater(res["bare_read"]["median_ms"], 0)
            wrong = measure_limits(torch, FakeKernels(wrong=True), copies, lengths, 3, 1, 132)
        self.assertEqual(wrong["bare_read"]["status"], "wrong")
        self.assertIn("read max", wrong["bare_read"]["error"])

    def test_read_grid_covers_the_longest_row_and_fills_the_gpu(self):
        from launch_limits import READ_SCORES_PER_BLOCK, read_grid

        (gx, gy, _), (threads, _, _) = read_grid(1, 32768, 132)
        self.assertEqual((gx, gy), (32768 // READ_SCORES_PER_BLOCK, 1))
        (gx, gy, _), _ = read_grid(16384, 32768, 132)
        self.assertEqual(gx, 16)
        self.assertLessEqual(gx * gy, 16 * 132)
        self.assertGreater(gx * gy, 8 * 132)
        (gx, gy, _), _ = read_grid(2, 1, 132)
        self.assertEqual((gx, gy), (1, 2))
        (gx, _, _), _ = read_grid(1, 1 << 24, 132)
        self.assertEqual(gx, 1024)


@unittest.skipIf(torch is None, "torch is not installed")
class DriverTest(unittest.TestCase):
    ARGS = ["--k", "16", "--seed", "3", "--reps", "2", "--warmup", "1", "--gen-cu", "gen.cu",
            "--decode-batches", "2,5", "--decode-widths", "64,100",
            "--spec-next-n", "2", "--spec-batches", "3", "--spec-widths", "64",
            "--spec-lengths", "rand", "--prefill", "8x64", "--matrix", "4x80"]

    def run_main(self, d, extra=(), kernels=FakeKernels, run_call=None):
        import envelope
        import peer_adapters as pa
        import peers_bench

        self.topk, self.vllm = FakeTopk(), FakeVllm()

        class Generator(CpuGenerator):
            def __init__(self, path):
                self.info = {"source": path}

        def build(names, kit, selector_in_graphs=False):
            self.assertTrue(selector_in_graphs)
            with mock.patch.dict(sys.modules, {"topk": self.topk}):
                ours = pa.TopkPython(selector_in_graphs)
            vllm = [pa.VllmEntry(e, self.vllm, None) for e in pa.VLLM_ENTRIES]
            return [ours] + vllm + [pa.TorchTopK()], {"vllm": {"version": "0.33.0"}}

        out = {n: os.path.join(d, f"e.{n}") for n in ("json", "md", "svg")}
        argv = self.ARGS + ["--json-out", out["json"], "--md-out", out["md"],
                            "--svg-out", out["svg"]] + list(extra)
        with fake_cuda(), contextlib.ExitStack() as st:
            st.enter_context(mock.patch("score_generator.ScoreGenerator", Generator))
            st.enter_context(mock.patch("peer_adapters.build_peers", build))
            st.enter_context(mock.patch("launch_limits.LimitKernels", kernels))
            st.enter_context(mock.patch.dict(sys.modules, {"topk": self.topk}))
            st.enter_context(mock.patch.object(
                peers_bench, "collect_meta",
                lambda *a: {"gpu": "cpu stand-in", "profile": "indexer", "k": 16, "seed": 3}))
            if run_call:
                st.enter_context(mock.patch.object(peers_bench, "run_call", run_call))
            st.enter_context(contextlib.redirect_stdout(io.StringIO()))
            st.enter_context(contextlib.redirect_stderr(io.StringIO()))
            rc = envelope.main(argv)
        with open(out["json"]) as f:
            doc = json.load(f)
        return rc, doc, out

    def test_every_call_is_run_checked_and_reported(self):
        with tempfile.TemporaryDirectory() as d:
            rc, doc, out = self.run_main(d)
            self.assertEqual(rc, 0)
            names = [r["call"]["name"] for r in doc["calls"]]
            self.assertEqual(names, [
                "dec-2x64-rand", "dec-5x64-rand", "dec-2x100-rand", "dec-5x100-rand",
                "dec-2x64-full", "dec-5x64-full", "dec-2x100-full", "dec-5x100-full",
                "spec2-6x64-rand", "pre-8x64-causal", "pre-8x64-from1", "mat-4x80"])
            for rec in doc["calls"]:
                kind = rec["call"]["kind"]
                peers = rec["peers"]
                for name in ("topk", "torch", "vllm.indexer"):
                    self.assertEqual(peers[name]["status"], "ok", (rec["call"]["name"], name))
                    self.assertTrue(peers[name]["verify_eager"]["exact"])
                decode_like = kind in ("decode", "spec")
                self.assertEqual(peers["vllm.decode"]["status"],
                                 "ok" if decode_like else "not_applicable")
                self.assertEqual(peers["vllm.prefill"]["status"],
                                 "not_applicable" if decode_like else "ok")
                self.assertEqual(peers["topk"]["route"], "persistent: k=16,test")
                self.assertEqual(rec["limits"]["empty"]["status"], "ok")
                self.assertEqual(rec["limits"]["bare_read"]["status"], "ok")
                self.assertGreater(rec["elapsed_s"], 0)
                self.assertEqual(rec["call"]["valid_bytes"],
                                 4 * sum(rec["call"]["row_lengths"]["values"])
                                 if "row_lengths" in rec["call"] else rec["call"]["valid_bytes"])
            # rand lengths lie in [N/2, N]; from1 rows are shorter than K (-1 padding checked)
            dec = doc["calls"][2]["call"]["row_lengths"]
            self.assertTrue(50 <= dec["min"] <= dec["max"] <= 100)
            self.assertEqual(doc["calls"][10]["call"]["first_length"], 1)
            # ours: one eager topk.select per call, the Selector in every captured copy
            self.assertEqual(self.topk.eager_calls, 12)
            # planned once per shape (the two prefill calls share one)
            self.assertEqual(len(self.topk.planned), 11)
            self.assertGreater(self.topk.selector_calls, 12)
            # the vLLM indexer got each batch's longest row
            self.assertTrue(all(got == want for want, got in self.vllm.max_seq_lens))
            report = doc["report"]
            self.assertEqual(len(report["rows"]), 12)
            self.assertEqual(report["summary"]["compared"], 12)
            self.assertEqual(doc["not_run"], [])
            with open(out["md"]) as f:
                md = f.read()
            self.assertIn("| dec-2x64-rand |", md)
            self.assertIn("geomean speedup", md)
            with open(out["svg"]) as f:
                self.assertTrue(f.read().startswith("<svg"))

    def test_the_time_budget_stops_starting_calls(self):
        with tempfile.TemporaryDirectory() as d:
            rc, doc, _ = self.run_main(d, ["--budget-s", "1e-9"])
        self.assertEqual(rc, 0)
        self.assertEqual(doc["calls"], [])
        self.assertEqual(len(doc["not_run"]), 12)
        self.assertTrue(any("time budget" in p for p in doc["problems"]))
        self.assertEqual(doc["report"]["summary"]["not_run"], doc["not_run"])

    def test_a_lost_context_ends_the_process_and_resume_continues_after_it(self):
        import peers_bench

        real = peers_bench.run_call
        seen = []

        def breaking(torch_, call, *a, **kw):
            seen.append(call.name)
            if call.name == "dec-2x100-rand":
                raise peers_bench.ContextLost("illegal address")
            return real(torch_, call, *a, **kw)

        with tempfile.TemporaryDirectory() as d:
            rc, doc, _ = self.run_main(d, run_call=breaking)
            self.assertEqual(rc, 3)
            self.assertEqual([r["call"]["name"] for r in doc["calls"]],
                             ["dec-2x64-rand", "dec-5x64-rand"])
            self.assertEqual(doc["context_lost_at"], "dec-2x100-rand")
            self.assertEqual(len(doc["not_run"]), 10)
            with open(os.path.join(d, "e.md")) as f:
                self.assertIn("CUDA context lost at dec-2x100-rand", f.read())
            seen.clear()
            rc, doc, _ = self.run_main(d, ["--resume"], run_call=real)
        self.assertEqual(rc, 0)
        names = [r["call"]["name"] for r in doc["calls"]]
        self.assertEqual(len(names), 12)
        self.assertEqual(len(set(names)), 12)
        lost = doc["calls"][2]
        self.assertEqual(lost["call"]["name"], "dec-2x100-rand")
        self.assertTrue(all(e["status"] == "skipped" for e in lost["peers"].values()))
        self.assertEqual(doc["resumed"], 1)
        self.assertEqual(doc["not_run"], [])
        self.assertEqual(doc["report"]["summary"]["ours_not_exact"], ["dec-2x100-rand"])

    def test_limit_kernels_that_do_not_compile_leave_the_selectors_measured(self):
        def broken():
            raise RuntimeError("no nvrtc")

        with tempfile.TemporaryDirectory() as d:
            rc, doc, _ = self.run_main(d, ["--decode-batches", "none", "--spec-next-n", "none",
                                           "--prefill", "none"], kernels=broken)
        self.assertEqual(rc, 0)
        self.assertEqual(len(doc["calls"]), 1)
        self.assertEqual(doc["calls"][0]["limits"], {})
        self.assertEqual(doc["calls"][0]["peers"]["topk"]["status"], "ok")
        self.assertTrue(any("limit kernels unavailable" in p for p in doc["problems"]))

    def test_setup_errors_exit_2_before_the_gpu(self):
        import envelope

        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(envelope.main(["--decode-lengths", "half"]), 2)
            self.assertEqual(envelope.main(["--set", "quick"]), 2)  # no --gen-cu
            self.assertEqual(envelope.main(["--decode-widths", "64", "--gen-cu", "g.cu"]), 2)


@unittest.skipIf(torch is None, "torch is not installed")
class SglangBuildTest(unittest.TestCase):
    def sglang(self):
        import peer_adapters as pa

        return pa.SGLang(None, None)

    def test_the_prebuilt_module_is_refused_unless_allowed(self):
        import envelope

        info = {"sglang_build": {"rebuilt_on_target": False, "baked_c8_occ2": 30,
                                 "baked_c16_occ1": 0},
                "sgl_constants": {"probe_c8_occ2": 30, "probe_c16_occ1": 7}}
        sgl, problems = self.sglang(), []
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop(envelope.ALLOW_PREBUILT_SGLANG, None)
            envelope.require_rebuilt_sglang([sgl], info, problems)
        self.assertFalse(sgl.available)
        self.assertIn("rebuilds the module", sgl.error)
        self.assertTrue(any("C16_OCC1=7" in p for p in problems))
        sgl, problems = self.sglang(), []
        with mock.patch.dict(os.environ, {envelope.ALLOW_PREBUILT_SGLANG: "1"}):
            envelope.require_rebuilt_sglang([sgl], info, problems)
        self.assertTrue(sgl.available)

    def test_the_rebuilt_module_with_the_probed_constants_passes(self):
        import envelope

        info = {"sglang_build": {"rebuilt_on_target": True, "baked_c8_occ2": 30,
                                 "baked_c16_occ1": 7},
                "sgl_constants": {"probe_c8_occ2": 30, "probe_c16_occ1": 7}}
        sgl, problems = self.sglang(), []
        envelope.require_rebuilt_sglang([sgl], info, problems)
        self.assertTrue(sgl.available)
        self.assertEqual(problems, [])


if __name__ == "__main__":
    unittest.main()
