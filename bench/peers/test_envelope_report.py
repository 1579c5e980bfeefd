"""Tests of envelope_report.py: best peer per call, the summary math, the table and the chart
(standard library only)."""

import contextlib
import io
import json
import math
import os
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import envelope_report as er  # noqa: E402

SVG_NS = "{http://www.w3.org/2000/svg}"


def ok(ms):
    return {"status": "ok", "median_ms": ms}


def rec(name, ours, peers, kind="decode", floor=0.001, bare=0.004, empty=0.002, rows=8,
        width=65536):
    return {"call": {"name": name, "kind": kind, "rows": rows, "width": width,
                     "valid_bytes": int(floor * 4.49e9)},
            "floor_ms": floor,
            "peers": {"topk": ours, **peers},
            "limits": {"bare_read": ok(bare) if bare else {"status": "error", "error": "x"},
                       "empty": ok(empty)}}


KIT = {"sglang_build": {"module": "/x/sgl_topk_v2_probed.so", "baked_c8_occ2": 30,
                        "baked_c16_occ1": 7, "rebuilt_on_target": True},
       "vllm": {"version": "0.33.0"}}


def doc_of(records, not_run=()):
    doc = {"schema": er.SCHEMA, "meta": {"profile": "indexer", "k": 2048, "gpu": "H200",
                                         "date": "today", "topk_version": "0.1",
                                         "kit": KIT},
           "calls": records, "not_run": list(not_run), "problems": []}
    doc["report"] = er.build_report(doc)
    return doc


class RowTest(unittest.TestCase):
    def test_vllm_entries_form_one_column_with_the_best_entry_named(self):
        r = er.call_row(rec("a", ok(0.010), {
            "sglang": ok(0.020),
            "vllm.indexer": ok(0.015),
            "vllm.decode": ok(0.012),
            "vllm.prefill": {"status": "not_applicable", "error": "decode call"},
            "torch": ok(0.100)}))
        self.assertEqual(r["peers"]["vllm"]["entry"], "vllm.decode")
        self.assertEqual(r["peers"]["vllm"]["ms"], 0.012)
        self.assertEqual(r["peers"]["vllm"]["entries"],
                         {"vllm.indexer": 0.015, "vllm.decode": 0.012,
                          "vllm.prefill": "not_applicable"})
        self.assertEqual((r["best_peer"], r["best_ms"]), ("vllm.decode", 0.012))
        self.assertAlmostEqual(r["ratio"], 0.010 / 0.012)
        self.assertAlmostEqual(r["ours_x_floor"], 10.0)
        self.assertAlmostEqual(r["ours_x_bare"], 2.5)
        self.assertEqual(er.group_cell(r["peers"]["vllm"]), "12.0 (decode)")
        self.assertEqual(er.group_cell(r["peers"]["sglang"]), "20.0")

    def test_inexact_peers_are_not_compared_and_show_their_bad_rows(self):
        r = er.call_row(rec("a", ok(0.010), {
            "sglang": {"status": "inexact", "verify": {"bad_rows": 3}},
            "torch": ok(0.050)}))
        self.assertEqual(r["best_peer"], "torch")
        self.assertEqual(er.group_cell(r["peers"]["sglang"]), "inexact (3 rows)")

    def test_a_failed_ours_has_no_ratio(self):
        r = er.call_row(rec("a", {"status": "error", "error": "boom"}, {"torch": ok(0.05)},
                            bare=None))
        self.assertIsNone(r["ratio"])
        self.assertIsNone(r["ours_x_bare"])
        self.assertIsNone(r["bare_ms"])
        self.assertEqual(er.ours_cell(r), "error")

    def test_microseconds_keep_three_digits(self):
        self.assertEqual([er.us(v) for v in (0.540, 0.0279, 0.00987, None)],
                         ["540", "27.9", "9.87", "-"])


class SummaryTest(unittest.TestCase):
    def records(self):
        return [
            rec("d1", ok(0.010), {"sglang": ok(0.020)}),                # ratio 0.5
            rec("d2", ok(0.020), {"sglang": ok(0.010)}),                # ratio 2 (lost)
            rec("p1", ok(0.400), {"sglang": ok(0.500), "vllm.prefill": ok(0.800)},
                kind="prefill"),                                        # ratio 0.8
            rec("d3", {"status": "inexact"}, {"sglang": ok(0.010)}),    # ours not exact
            rec("d4", ok(0.010), {"sglang": {"status": "error"}}),      # no exact peer
        ]

    def test_geomean_minimum_and_shapes_lost(self):
        s = er.build_report(doc_of(self.records(), not_run=["x1"]))["summary"]
        self.assertEqual((s["calls"], s["compared"]), (5, 3))
        self.assertAlmostEqual(s["geomean_ratio"], (0.5 * 2 * 0.8) ** (1 / 3))
        self.assertAlmostEqual(s["geomean_speedup"], 1 / s["geomean_ratio"])
        self.assertAlmostEqual(s["min_speedup"], 0.5)
        self.assertEqual(s["min_speedup_call"], "d2")
        self.assertAlmostEqual(s["max_speedup"], 2.0)
        self.assertEqual(s["max_speedup_call"], "d1")
        self.assertEqual(s["lost"], ["d2"])
        self.assertEqual(s["ours_not_exact"], ["d3"])
        self.assertEqual(s["no_exact_peer"], ["d4"])
        self.assertEqual(s["not_run"], ["x1"])
        self.assertEqual(s["per_kind"]["decode"]["calls"], 2)
        self.assertAlmostEqual(s["per_kind"]["decode"]["geomean_speedup"], 1.0)
        self.assertEqual(s["per_kind"]["decode"]["lost"], 1)
        self.assertAlmostEqual(s["per_kind"]["prefill"]["geomean_speedup"], 1.25)
        line = er.summary_line(s)
        self.assertIn("3 of 5 calls", line)
        self.assertIn("minimum 0.50x at d2", line)
        self.assertIn("1 shapes lost", line)
        self.assertIn("1 calls not run", line)

    def test_nothing_compared_says_so(self):
        s = er.summarize([er.call_row(rec("d", {"status": "error"}, {"torch": ok(1.0)}))])
        self.assertIsNone(s["geomean_ratio"])
        self.assertIn("no call has exact times", er.summary_line(s))

    def test_markdown_has_a_row_per_call_and_the_summary(self):
        doc = doc_of(self.records())
        text = er.markdown(doc)
        table = [ln for ln in text.splitlines() if ln.startswith("| ") and "M x N" not in ln
                 and not ln.startswith("| kind") and not ln.split("|")[1].strip() in
                 ("decode", "prefill")]
        self.assertEqual(len(table), 5)
        self.assertIn("| d1 | 8 x 65536 | 1.00 | **10.0** | 20.0 |", text)
        self.assertIn("| d2 | 8 x 65536 | 1.00 | 20.0 |", text)  # lost: not bold
        self.assertIn("| p1 | 8 x 65536 | 1.00 | **400** | 500 | 800 (prefill) | sglang | 0.80 |",
                      text)  # the vLLM cell names its entry point
        self.assertIn("| d4 | 8 x 65536 | 1.00 | 10.0 | error | - | none exact | - |", text)
        self.assertIn(er.summary_line(doc["report"]["summary"]), text)
        self.assertIn("sgl_topk_v2_probed.so", text)
        self.assertIn("C16_OCC1=7", text)
        self.assertIn("rebuilt on this GPU", text)
        self.assertIn("d2 2.00 vs sglang", text)


class SvgTest(unittest.TestCase):
    def test_chart_is_valid_svg_with_a_bar_per_compared_call(self):
        records = SummaryTest().records()
        records.append(rec("<odd & name>", ok(0.001), {"torch": ok(0.002)}, kind="window"))
        doc = doc_of(records)
        text = er.svg(doc)
        root = ET.fromstring(text)
        self.assertEqual(root.tag, SVG_NS + "svg")
        bars = [r for r in root.iter(SVG_NS + "rect") if r.find(SVG_NS + "title") is not None]
        self.assertEqual(len(bars), doc["report"]["summary"]["compared"])
        colors = {b.find(SVG_NS + "title").text.split(":")[0]: b.get("fill") for b in bars}
        self.assertEqual(colors["d1"], er.COLORS["win"])
        self.assertEqual(colors["d2"], er.COLORS["loss"])
        labels = [t.text for t in root.iter(SVG_NS + "text")]
        self.assertIn("<odd & name>", labels)
        for kind in ("decode", "prefill", "window"):
            self.assertIn(kind, labels)
        # ours is drawn once per call with a time
        circles = [c for c in root.iter(SVG_NS + "circle") if c.get("fill") == er.COLORS["ours"]]
        self.assertEqual(len(circles), 5 + 1)  # 5 calls with an ours time + the legend

    def test_bars_point_the_right_way_on_the_log_axis(self):
        doc = doc_of([rec("win", ok(0.001), {"torch": ok(0.004)}),
                      rec("loss", ok(0.004), {"torch": ok(0.001)})])
        root = ET.fromstring(er.svg(doc))
        bars = {r.find(SVG_NS + "title").text.split(":")[0]: r for r in root.iter(SVG_NS + "rect")
                if r.find(SVG_NS + "title") is not None}
        win, loss = bars["win"], bars["loss"]
        self.assertAlmostEqual(float(win.get("height")), float(loss.get("height")), places=1)
        # the win hangs below the 1.0 line, the loss stands above it
        self.assertGreater(float(win.get("y")), float(loss.get("y")))

    def test_log_ticks(self):
        self.assertEqual(er._log_ticks(3, 60), [5, 10, 20, 50])
        ax = er._Axis(1, 100, 0, 200)
        self.assertAlmostEqual(ax.y(10), 100)
        self.assertAlmostEqual(ax.y(100), 0)
        self.assertTrue(math.isclose(ax.y(1), 200))


class MainTest(unittest.TestCase):
    def test_redraws_from_json_and_refuses_other_files(self):
        doc = doc_of(SummaryTest().records())
        del doc["report"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "e.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            md, sv = os.path.join(d, "e.md"), os.path.join(d, "e.svg")
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(er.main([path, "--md-out", md, "--svg-out", sv]), 0)
            with open(md) as f:
                self.assertIn("Serving envelope", f.read())
            ET.parse(sv)
            with open(path, "w") as f:
                json.dump({"schema": "topk-peers-bench/1"}, f)
            with contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(er.main([path]), 2)
            self.assertIn("not an envelope result", err.getvalue())


if __name__ == "__main__":
    unittest.main()
