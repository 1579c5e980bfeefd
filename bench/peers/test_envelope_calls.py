"""Tests of envelope_calls.py and the per-row lengths of call_shapes.Call (no torch needed)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import call_shapes as cs  # noqa: E402
import envelope_calls as ec  # noqa: E402

KIB, MIB = cs.KIB, cs.MIB


def by_name(calls):
    return {c.name: c for c in calls}


class PresetTest(unittest.TestCase):
    def test_full_preset_is_every_combination_the_benchmark_lists(self):
        calls = ec.envelope_calls(ec.Grid.preset("full"))
        kinds = [c.kind for c in calls]
        self.assertEqual(kinds.count("decode"), 9 * 5 * 2)
        self.assertEqual(kinds.count("spec"), 2 * 9 * 5 * 2)
        self.assertEqual(kinds.count("prefill"), 4)
        self.assertEqual(kinds.count("window"), 4)
        names = by_name(calls)
        self.assertEqual(len(names), len(calls))  # names are unique
        for b in (1, 2, 4, 8, 16, 32, 64, 128, 256):
            for w in ("32K", "64K", "128K", "256K", "1M"):
                self.assertIn(f"dec-{b}x{w}-rand", names)
                self.assertIn(f"dec-{b}x{w}-full", names)
                self.assertIn(f"spec2-{2 * b}x{w}-full", names)
                self.assertIn(f"spec4-{4 * b}x{w}-rand", names)
        for name in ("pre-16384x32K-causal", "pre-16384x32K-from1", "pre-8192x64K-causal",
                     "pre-8192x64K-from1", "mat-512x128K", "mat-4096x128K", "mat-2048x256K",
                     "mat-512x1M"):
            self.assertIn(name, names)

    def test_default_preset_covers_every_kind_and_the_reference_calls(self):
        names = by_name(ec.envelope_calls(ec.Grid.preset("default")))
        for name in ("dec-1x256K-full", "dec-8x256K-full", "dec-1x1M-full", "dec-8x1M-full",
                     "dec-32x64K-rand", "dec-64x128K-rand", "dec-256x128K-rand",
                     "dec-256x256K-rand", "pre-16384x32K-causal", "pre-16384x32K-from1",
                     "mat-512x128K", "mat-4096x128K"):
            self.assertIn(name, names)
        self.assertEqual({c.kind for c in names.values()}, {"decode", "spec", "prefill", "window"})

    def test_default_preset_is_sized_for_about_four_minutes(self):
        calls = ec.envelope_calls(ec.Grid.preset("default"))
        est = ec.estimate_seconds(calls, reps=15, warmup=3)
        self.assertGreater(est, 60)
        self.assertLess(est, 270)
        full = ec.estimate_seconds(ec.envelope_calls(ec.Grid.preset("full")), 15, 3)
        quick = ec.estimate_seconds(ec.envelope_calls(ec.Grid.preset("quick")), 15, 3)
        self.assertLess(quick, est)
        self.assertGreater(full, est)

    def test_unknown_preset_is_refused(self):
        with self.assertRaisesRegex(cs.ShapeError, "default"):
            ec.Grid.preset("everything")


class LengthsTest(unittest.TestCase):
    def test_decode_rand_lengths_are_uniform_in_half_to_full_and_seeded(self):
        for width in (32 * KIB, 1 * MIB, 4097):
            c = ec.decode_call(256, width, "rand", seed=0)
            lengths = c.lengths()
            self.assertEqual(len(lengths), 256)
            self.assertGreaterEqual(min(lengths), (width + 1) // 2)
            self.assertLessEqual(max(lengths), width)
            self.assertGreater(len(set(lengths)), 200)  # not a constant
            self.assertEqual(c.valid_elements, sum(lengths))
            self.assertEqual(c.first_length, lengths[0])
            self.assertEqual(c.last_length, lengths[-1])
            self.assertEqual(ec.decode_call(256, width, "rand", seed=0), c)
            self.assertNotEqual(ec.decode_call(256, width, "rand", seed=1).lengths(), lengths)
        # a wide sample spreads over the whole range
        many = ec.sequence_lengths(20000, 1000, "rand", ec.call_rng(0, "x"))
        self.assertEqual((min(many), max(many)), (500, 1000))
        self.assertAlmostEqual(sum(many) / len(many), 750, delta=5)

    def test_a_calls_lengths_do_not_depend_on_the_rest_of_the_grid(self):
        alone = ec.envelope_calls(ec.Grid(decode=(((32,), (64 * KIB,), ("rand",)),)))
        among = by_name(ec.envelope_calls(ec.Grid.preset("full")))
        self.assertEqual(alone[0].lengths(), among["dec-32x64K-rand"].lengths())

    def test_decode_full_lengths_are_the_width(self):
        c = ec.decode_call(8, 256 * KIB, "full", seed=0)
        self.assertEqual(c.lengths(), [256 * KIB] * 8)
        self.assertEqual(c.valid_bytes, 4 * 8 * 256 * KIB)

    def test_spec_rows_follow_the_next_n_convention(self):
        self.assertEqual(ec.spec_row_lengths([100, 50], 2), [99, 100, 49, 50])
        self.assertEqual(ec.spec_row_lengths([100], 4), [97, 98, 99, 100])
        for next_n in (2, 4):
            c = ec.spec_call(next_n, 16, 128 * KIB, "rand", seed=0)
            self.assertEqual(c.rows, 16 * next_n)
            lengths = c.lengths()
            for s in range(16):
                group = lengths[s * next_n:(s + 1) * next_n]
                self.assertEqual(group, list(range(group[0], group[0] + next_n)))
                self.assertGreaterEqual(group[-1], 64 * KIB)  # the sequence's length
                self.assertLessEqual(group[-1], 128 * KIB)
            full = ec.spec_call(next_n, 4, 64 * KIB, "full", seed=0).lengths()
            self.assertEqual(full[:next_n], [64 * KIB - next_n + 1 + r for r in range(next_n)])
        with self.assertRaises(cs.ShapeError):
            ec.spec_row_lengths([1], 2)

    def test_prefill_lengths(self):
        causal = ec.prefill_call(16384, 32 * KIB, "causal")
        self.assertEqual(causal.lengths()[0], 16 * KIB + 1)
        self.assertEqual(causal.last_length, 32 * KIB)
        from1 = ec.prefill_call(8192, 64 * KIB, "from1")
        self.assertEqual(from1.lengths()[:3], [1, 2, 3])
        self.assertEqual(from1.last_length, 8192)
        self.assertEqual(from1.valid_elements, 8192 * 8193 // 2)
        with self.assertRaises(cs.ShapeError):
            ec.prefill_call(10, 5, "causal")

    def test_windows_are_the_matrix_terminal_windows(self):
        c = ec.window_call(512, MIB)
        ref = cs.terminal_window(512, MIB)
        self.assertEqual((c.rows, c.width, c.first_length), (ref.rows, ref.width, ref.first_length))
        self.assertEqual(c.valid_bytes, ref.valid_bytes)
        self.assertEqual(c.kind, "window")

    def test_traces_are_optional_and_marked(self):
        calls = ec.envelope_calls(ec.Grid(traces=("trace245",)))
        self.assertEqual(len(calls), 26)
        self.assertEqual({c.kind for c in calls}, {"trace"})


class CallLengthsTest(unittest.TestCase):
    def test_explicit_lengths_are_checked(self):
        with self.assertRaisesRegex(cs.ShapeError, "2 row lengths for 3 rows"):
            cs.Call("c", 3, 10, 1, 0, row_lengths=(1, 2))
        with self.assertRaisesRegex(cs.ShapeError, "outside"):
            cs.Call("c", 2, 10, 1, 0, row_lengths=(1, 11))
        with self.assertRaisesRegex(cs.ShapeError, "outside"):
            cs.Call("c", 2, 10, 1, 0, row_lengths=(-1, 3))

    def test_json_holds_short_lists_and_summarizes_long_ones(self):
        short = cs.Call("c", 3, 10, 4, 0, row_lengths=(4, 9, 10), kind="decode").to_json()
        self.assertEqual(short["row_lengths"]["values"], [4, 9, 10])
        self.assertEqual((short["row_lengths"]["min"], short["row_lengths"]["max"],
                          short["row_lengths"]["sum"]), (4, 10, 23))
        self.assertEqual(short["valid_bytes"], 4 * 23)
        rows = cs.JSON_LENGTHS_MAX_ROWS + 1
        long = cs.Call("c", rows, 10, 1, 0, row_lengths=(1,) * rows).to_json()
        self.assertNotIn("values", long["row_lengths"])
        self.assertEqual(len(long["row_lengths"]["sha256"]), 64)
        window = cs.terminal_window(4, 8).to_json()
        self.assertNotIn("row_lengths", window)
        self.assertEqual(window["kind"], "window")


class SettingsTest(unittest.TestCase):
    def test_unset_settings_keep_the_preset(self):
        self.assertEqual(ec.Grid.from_settings({}), ec.Grid.preset("default"))
        self.assertEqual(ec.Grid.from_settings({"set": "quick", "matrix": None}),
                         ec.Grid.preset("quick"))

    def test_decode_settings_replace_the_decode_grid_by_a_product(self):
        g = ec.Grid.from_settings({"decode_batches": "1, 32", "decode_lengths": "full"})
        calls = [c for c in ec.envelope_calls(g) if c.kind == "decode"]
        self.assertEqual(len(calls), 2 * 5)  # widths default to the full list
        self.assertTrue(all(c.name.endswith("-full") for c in calls))
        self.assertEqual(g.spec, ec.Grid.preset("default").spec)  # other kinds untouched

    def test_none_leaves_a_kind_out(self):
        g = ec.Grid.from_settings({"decode_batches": "none", "spec_next_n": "none",
                                   "prefill": "none", "matrix": "512x128K"})
        calls = ec.envelope_calls(g)
        self.assertEqual([c.name for c in calls], ["mat-512x128K"])

    def test_shapes_modes_and_traces(self):
        g = ec.Grid.from_settings({"prefill": "8192x64K", "prefill_lengths": "from1",
                                   "traces": "trace245", "decode_batches": "none",
                                   "spec_batches": "none", "matrix": "none"})
        names = [c.name for c in ec.envelope_calls(g)]
        self.assertEqual(names[0], "pre-8192x64K-from1")
        self.assertEqual(len(names), 1 + 26)

    def test_bad_settings_say_what_is_wrong(self):
        for settings, pattern in (({"decode_lengths": "half"}, "unknown"),
                                  ({"decode_batches": "1,x"}, "integers"),
                                  ({"decode_batches": "0"}, "at least 1"),
                                  ({"prefill": "16384"}, "MxN"),
                                  ({"spec_widths": "12Q"}, "size"),
                                  ({"decode_width": "32K"}, "unknown envelope setting")):
            with self.assertRaisesRegex(cs.ShapeError, pattern, msg=settings):
                ec.Grid.from_settings(settings)

    def test_call_list_names_every_call_and_the_estimate(self):
        calls = ec.envelope_calls(ec.Grid.preset("quick"))
        text = ec.format_call_list(calls, 15, 3)
        lines = text.splitlines()
        self.assertEqual(len(lines), len(calls) + 1)
        self.assertTrue(lines[-1].startswith(f"# {len(calls)} calls, estimated"))
        self.assertEqual(lines[0].split("\t")[:4], ["dec-1x64K-rand", "decode", "1", "65536"])


class EstimateTest(unittest.TestCase):
    def test_estimate_grows_with_reps_and_with_the_bytes(self):
        small = ec.decode_call(1, 32 * KIB, "full", 0)
        big = ec.prefill_call(16384, 32 * KIB, "causal")
        self.assertLess(ec.estimate_call_seconds(small, 5, 3),
                        ec.estimate_call_seconds(small, 30, 3))
        # a large call: few input copies, but slow replays of torch.topk
        self.assertGreater(ec.estimate_call_seconds(big, 30, 3),
                           ec.estimate_call_seconds(big, 5, 3))
        total = ec.estimate_seconds([small, big], 15, 3)
        self.assertAlmostEqual(total, ec.ESTIMATE["process_start_s"]
                               + ec.estimate_call_seconds(small, 15, 3)
                               + ec.estimate_call_seconds(big, 15, 3))


if __name__ == "__main__":
    unittest.main()
