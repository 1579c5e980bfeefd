"""Tests of merge_results.py on fabricated results (standard library only).

    python3 -m unittest discover -s bench/peers -p 'test_*.py'
"""

import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import merge_results as mr  # noqa: E402
from call_shapes import custom_calls, trace_calls  # noqa: E402

META = {"profile": "indexer", "k": 2048, "seed": 7, "gpu": "test GPU", "date": "today"}


def floor_ms(call):
    return call.valid_bytes / 4.49e12 * 1e3


def peer_entry(value):
    """A float is an exact median; a string is a failure status."""
    if isinstance(value, str):
        return {"status": value, "error": f"fabricated {value}"}
    return {"status": "ok", "median_ms": value, "timing_mode": "graph"}


def peers_doc(calls, times, meta=META):
    """times: {peer: [value per call]}"""
    records = []
    for i, c in enumerate(calls):
        records.append({"call": c.to_json(), "floor_ms": floor_ms(c),
                        "peers": {p: peer_entry(v[i]) for p, v in times.items()}})
    return {"schema": "topk-peers-bench/1", "meta": dict(meta), "calls": records,
            "traces": [], "problems": []}


def ours(call, ms, exact=True, **extra):
    d = {"median_ms": ms, "rows": call.rows, "width": call.width, "k": 2048, "exact": exact,
         "spec": "k=2048,map=persistent", "routes": {"sampled": call.rows}}
    d.update(extra)
    return d


class MergeTest(unittest.TestCase):
    def setUp(self):
        self.calls = custom_calls("512x128K,2048x256K")

    def test_speedups_are_peer_time_over_ours_and_best_is_fastest_exact_peer(self):
        a, b = self.calls
        doc = peers_doc(self.calls, {"torch": [4.0, 20.0], "sglang": [1.0, "inexact"],
                                     "flashinfer": [2.0, 6.0]})
        merged = mr.merge([("p.json", doc)], {a.name: ours(a, 0.5), b.name: ours(b, 1.5)})
        first, second = merged["calls"]
        self.assertEqual(first["best_peer"], "sglang")
        self.assertAlmostEqual(first["speedup_vs_best"], 2.0)
        self.assertAlmostEqual(first["speedup"]["torch"], 8.0)
        # the inexact peer is neither best nor compared
        self.assertEqual(second["best_peer"], "flashinfer")
        self.assertAlmostEqual(second["speedup_vs_best"], 4.0)
        self.assertNotIn("sglang", second["speedup"])
        self.assertTrue(any("sglang" in p and "inexact" in p for p in merged["problems"]))
        self.assertAlmostEqual(first["ours_x_floor"], 0.5 / floor_ms(a))

    def test_geomean_over_items(self):
        a, b = self.calls
        doc = peers_doc(self.calls, {"torch": [2.0, 8.0]})
        merged = mr.merge([("p.json", doc)], {a.name: ours(a, 1.0), b.name: ours(b, 1.0)})
        s = merged["summary"]
        self.assertAlmostEqual(s["geomean_speedup_vs_best"], 4.0)
        self.assertAlmostEqual(s["geomean_speedup"]["torch"], 4.0)
        self.assertEqual(s["items"], 2)
        self.assertEqual(s["compared_items_vs_best"], 2)

    def test_peer_files_of_separate_runs_are_united_per_call(self):
        a, b = self.calls
        d1 = peers_doc(self.calls, {"torch": [3.0, 9.0]})
        d2 = peers_doc(self.calls, {"sglang": [1.5, 2.0]})
        merged = mr.merge([("t.json", d1), ("s.json", d2)],
                          {a.name: ours(a, 1.0), b.name: ours(b, 1.0)})
        self.assertEqual(merged["peer_names"], ["torch", "sglang"])
        merged = mr.merge([("s.json", d2), ("t.json", d1)], {})
        self.assertEqual(merged["peer_names"], ["torch", "sglang"])  # fixed column order
        self.assertEqual(set(merged["calls"][0]["peers"]), {"torch", "sglang"})
        self.assertEqual(merged["calls"][1]["best_peer"], "sglang")

    def test_runs_with_different_seeds_are_refused(self):
        d1 = peers_doc(self.calls, {"torch": [3.0, 9.0]})
        d2 = peers_doc(self.calls, {"sglang": [1.5, 2.0]}, meta=dict(META, seed=8))
        with self.assertRaisesRegex(mr.MergeError, "seed"):
            mr.merge([("t.json", d1), ("s.json", d2)], {})

    def test_our_missing_mismatched_or_inexact_result_is_not_compared(self):
        a, b = self.calls
        doc = peers_doc(self.calls, {"torch": [3.0, 9.0]})
        wrong_rows = ours(b, 1.0, rows=b.rows + 1)
        merged = mr.merge([("p.json", doc)], {b.name: wrong_rows})
        self.assertEqual(merged["calls"][0]["ours"]["status"], "missing")
        self.assertEqual(merged["calls"][1]["ours"]["status"], "mismatch")
        for c in merged["calls"]:
            self.assertIsNone(c["speedup_vs_best"])
            self.assertEqual(c["speedup"], {})
        merged = mr.merge([("p.json", doc)], {a.name: ours(a, 1.0, exact=False)})
        self.assertEqual(merged["calls"][0]["ours"]["status"], "inexact")
        self.assertIsNone(merged["calls"][0]["speedup_vs_best"])
        self.assertIsNone(merged["summary"]["geomean_speedup_vs_best"])

    def test_trace_is_one_item_summing_its_calls(self):
        calls = trace_calls("trace245")
        n = len(calls)
        doc = peers_doc(calls, {"torch": [4.0] * n, "sglang": [2.0] * (n - 1) + ["error"]})
        results = {c.name: ours(c, 1.0) for c in calls}
        merged = mr.merge([("p.json", doc)], results)
        (trace,) = merged["traces"]
        self.assertEqual(trace["calls"], 26)
        self.assertAlmostEqual(trace["ours"]["median_ms"], 26.0)
        self.assertAlmostEqual(trace["peers"]["torch"]["median_ms"], 104.0)
        self.assertEqual(trace["peers"]["sglang"]["status"], "incomplete")
        self.assertEqual(trace["best_peer"], "torch")
        self.assertAlmostEqual(trace["speedup_vs_best"], 4.0)
        self.assertAlmostEqual(trace["floor_ms"], sum(floor_ms(c) for c in calls))
        self.assertEqual(merged["summary"]["items"], 1)
        self.assertAlmostEqual(merged["summary"]["geomean_speedup_vs_best"], 4.0)

    def test_markdown_has_one_row_per_shape_and_a_geomean_row(self):
        a, b = self.calls
        doc = peers_doc(self.calls, {"torch": [2.0, 8.0]})
        text = mr.markdown(mr.merge([("p.json", doc)], {a.name: ours(a, 1.0)}))
        rows = [ln for ln in text.splitlines() if ln.startswith("| ")]
        self.assertEqual(len(rows), 1 + 2 + 1)  # header, two shapes, geomean
        self.assertIn(f"| {a.name} | 512 | 131072 |", text)
        self.assertIn("| **geomean** |", text)
        self.assertIn("2.00x", text)
        self.assertIn("## Problems", text)  # b has no result of ours

    def test_lenient_loader_skips_log_lines(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                f.write("compiling...\nplanning 512x128K\n" + json.dumps({"median_ms": 1.5}) + "\n")
            self.assertEqual(mr.load_json_lenient(path), {"median_ms": 1.5})
            with open(path, "w") as f:
                f.write("panicked at src/main.rs\n")
            with self.assertRaises(mr.MergeError):
                mr.load_json_lenient(path)

    def test_topk_dir_reports_err_file_of_a_failed_run(self):
        a, b = self.calls
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, f"{a.name}.json"), "w") as f:
                json.dump(ours(a, 1.0), f)
            with open(os.path.join(d, f"{b.name}.err"), "w") as f:
                f.write("warming up\nerror: CUDA_ERROR_OUT_OF_MEMORY while planning\n")
            with open(os.path.join(d, f"{b.name}.json"), "w") as f:
                f.write("")
            results = mr.load_topk_dir(d)
        self.assertEqual(results[a.name]["median_ms"], 1.0)
        self.assertIn("no JSON object", results[b.name]["error"])
        self.assertIn("CUDA_ERROR_OUT_OF_MEMORY", results[b.name]["error"])
        doc = peers_doc(self.calls, {"torch": [2.0, 8.0]})
        merged = mr.merge([("p.json", doc)], results)
        self.assertEqual(merged["calls"][1]["ours"]["status"], "error")

    def test_main_writes_json_and_markdown(self):
        a, b = self.calls
        with tempfile.TemporaryDirectory() as d:
            peers_path = os.path.join(d, "peers.json")
            with open(peers_path, "w") as f:
                json.dump(peers_doc(self.calls, {"torch": [2.0, 8.0]}), f)
            topk_dir = os.path.join(d, "topk")
            os.mkdir(topk_dir)
            for c, ms in ((a, 1.0), (b, 2.0)):
                with open(os.path.join(topk_dir, f"{c.name}.json"), "w") as f:
                    json.dump(ours(c, ms), f)
            out_json, out_md = os.path.join(d, "m.json"), os.path.join(d, "m.md")
            devnull = open(os.devnull, "w")
            stdout, sys.stdout = sys.stdout, devnull
            try:
                rc = mr.main(["--peers-json", peers_path, "--topk-dir", topk_dir,
                              "--json-out", out_json, "--md-out", out_md])
            finally:
                sys.stdout = stdout
                devnull.close()
            self.assertEqual(rc, 0)
            with open(out_json) as f:
                merged = json.load(f)
            self.assertAlmostEqual(merged["summary"]["geomean_speedup_vs_best"],
                                   math.sqrt(2.0 * 4.0))
            self.assertEqual(merged["problems"], [])
            with open(out_md) as f:
                self.assertIn("**geomean**", f.read())


if __name__ == "__main__":
    unittest.main()
