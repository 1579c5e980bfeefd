"""Tests of call_shapes.py: operator matrix, trace split rules, custom shapes."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import call_shapes as cs  # noqa: E402


class TraceTest(unittest.TestCase):
    def test_traces_give_the_paper_call_counts(self):
        self.assertEqual(len(cs.trace_calls("trace245")), 26)
        self.assertEqual(len(cs.trace_calls("trace430")), 71)

    def test_trace_calls_cover_every_query_once_with_length_t_plus_one(self):
        for name, (tokens, _) in cs.TRACES.items():
            covered = 0
            for c in cs.trace_calls(name):
                self.assertEqual(c.first_length, covered + 1)
                # Generated as a matrix of its own, as `topk-bench bench` does.
                self.assertEqual(c.row_offset, 0)
                covered += c.rows
            self.assertEqual(covered, tokens)

    def test_trace_calls_respect_the_budget_and_the_step_width(self):
        for name in cs.TRACES:
            for c in cs.trace_calls(name):
                self.assertLessEqual(c.dense_bytes, cs.TRACE_BUDGET_BYTES)
                self.assertLessEqual(c.last_length, c.width)
                # the step ending at e has width e: e is a step boundary or the prompt's end
                tokens = cs.TRACES[name][0]
                self.assertTrue(c.width % cs.TRACE_STEP_TOKENS == 0 or c.width == tokens)
                # the first query of a call lies in the step that ends at its width
                self.assertLess(c.first_length - 1, c.width)
                self.assertLessEqual(c.width - (c.first_length - 1), cs.TRACE_STEP_TOKENS)

    def test_step_widths_and_rows_per_call(self):
        widths = sorted({c.width for c in cs.trace_calls("trace245")})
        self.assertEqual(widths, [65536, 131072, 196608, 250880])
        self.assertEqual(cs.rows_per_call(65536), 24576)
        self.assertEqual(cs.rows_per_call(250880), (6 << 30) // (4 * 250880))

    def test_unknown_trace_is_refused(self):
        with self.assertRaises(cs.ShapeError):
            cs.parse_shapes("trace999")


class MatrixTest(unittest.TestCase):
    def test_matrix_is_5_by_4_terminal_windows(self):
        calls = cs.matrix_calls()
        self.assertEqual(len(calls), 20)
        self.assertEqual(len({c.name for c in calls}), 20)
        for c in calls:
            self.assertEqual(c.last_length, c.width)
            self.assertEqual(c.first_length, c.width - c.rows + 1)
            self.assertEqual(c.row_offset, 0)

    def test_valid_elements_is_the_sum_of_lengths(self):
        for c in cs.custom_calls("7x10,3x3,1x1"):
            self.assertEqual(c.valid_elements, sum(c.lengths()))

    def test_custom_sizes_and_names(self):
        (a, b) = cs.parse_shapes("custom:512x128K,3x1M")
        self.assertEqual((a.rows, a.width, a.name), (512, 131072, "512x128K"))
        self.assertEqual((b.rows, b.width, b.name), (3, 1 << 20, "3x1M"))
        self.assertEqual(cs.parse_shapes("custom:4x1000")[0].name, "4x1000")

    def test_bad_shapes_are_refused_with_a_reason(self):
        for spec in ("custom:", "custom:512", "custom:0x10", "custom:20x10", "custom:ax3",
                     "squares"):
            with self.assertRaises(cs.ShapeError, msg=spec):
                cs.parse_shapes(spec)

    def test_shape_table_lists_every_call(self):
        calls = cs.parse_shapes("trace245")
        lines = cs.format_shape_table(calls).splitlines()
        self.assertEqual(len(lines), len(calls))
        name, rows, width, first, offset = lines[3].split("\t")
        c = calls[3]
        self.assertEqual((name, int(rows), int(width), int(first), int(offset)),
                         (c.name, c.rows, c.width, c.first_length, c.row_offset))


class ListShapesTest(unittest.TestCase):
    def test_list_shapes_needs_no_gpu_and_prints_one_line_per_call(self):
        import contextlib
        import io

        import peers_bench

        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = peers_bench.main(["--list-shapes", "--shapes", "trace430"])
        self.assertEqual(rc, 0)
        lines = buf.getvalue().splitlines()
        self.assertEqual(len(lines), 71)
        self.assertEqual(lines[0].split("\t")[:3], ["trace430.c00", "24576", "65536"])


if __name__ == "__main__":
    unittest.main()
