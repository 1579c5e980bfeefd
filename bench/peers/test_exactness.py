"""Tests of the exactness verifier and the torch adapter (need torch; CPU is enough)."""

import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
except ImportError:  # the GPU machine has torch; a bare CPU machine may not
    torch = None

NEG_INF = float("-inf")
POS_INF = float("inf")


def masked(rows, lengths):
    """Score matrix with -inf past each row's length, as the generator writes it."""
    n = max(len(r) for r in rows)
    x = torch.full((len(rows), n), NEG_INF)
    for i, (r, length) in enumerate(zip(rows, lengths)):
        x[i, :length] = torch.tensor(r[:length], dtype=torch.float32)
    return x


def brute_force_exact(values, length, k, idx):
    """The contract stated directly on Python lists."""
    if length <= k:
        return sorted(idx[:length]) == list(range(length)) and all(i == -1 for i in idx[length:])
    if len(idx) != k or len(set(idx)) != k or not all(0 <= i < length for i in idx):
        return False
    chosen = set(idx)
    rest = [values[j] for j in range(length) if j not in chosen]
    return not rest or min(values[j] for j in idx) >= max(rest)


@unittest.skipIf(torch is None, "torch is not installed")
class VerifierTest(unittest.TestCase):
    def setUp(self):
        from exactness import verify_selection
        from peer_adapters import torch_indices_to_contract

        self.verify = verify_selection
        self.adapt = torch_indices_to_contract

    def reference(self, x, lengths, k):
        idx = torch.topk(x, k, dim=1, largest=True, sorted=False).indices
        return self.adapt(idx, lengths)

    def test_masked_dense_topk_after_the_adapter_is_exact_on_every_length_class(self):
        k, n = 16, 200
        lens = [0, 1, k - 1, k, k + 1, 50, n, n - 1, 2, 3 * k]
        g = torch.Generator().manual_seed(1)
        rows = [torch.randn(n, generator=g).tolist() for _ in lens]
        x = masked(rows, lens)
        lengths = torch.tensor(lens, dtype=torch.int32)
        out = self.reference(x, lengths, k)
        v = self.verify(x, lengths, out, k)
        self.assertTrue(v.exact, v.summary())
        # short rows: valid indices first, then -1
        self.assertEqual(out[1].tolist(), [0] + [-1] * (k - 1))
        self.assertEqual(out[0].tolist(), [-1] * k)

    def test_each_violation_is_named(self):
        from exactness import (BELOW_KTH, DUPLICATE, MISSED_LARGER, OUT_OF_RANGE,
                               SHORT_PADDING, SHORT_SET)

        k = 2
        big = [5.0, 3.0, 3.0, 1.0, 0.0]
        cases = [
            (big, 5, [0, 1], None),
            (big, 5, [0, 2], None),  # the other tie at rank K
            (big, 5, [1, 2], MISSED_LARGER),  # all >= the K-th largest, but 5 left out
            (big, 5, [0, 3], BELOW_KTH),
            (big, 5, [0, 0], DUPLICATE),
            (big, 5, [0, -1], OUT_OF_RANGE),
            (big, 4, [0, 4], OUT_OF_RANGE),  # index == L
            (big, 2, [1, 0], None),
            (big, 2, [0, 0], SHORT_SET),
            (big, 1, [-1, 0], SHORT_PADDING),
            (big, 1, [0, 3], SHORT_SET),
        ]
        for values, length, idx, reason in cases:
            x = masked([values], [length])
            v = self.verify(x, torch.tensor([length], dtype=torch.int32),
                            torch.tensor([idx], dtype=torch.int32), k)
            with self.subTest(length=length, idx=idx):
                if reason is None:
                    self.assertTrue(v.exact, v.summary())
                else:
                    self.assertFalse(v.exact)
                    self.assertEqual(v.failures, {reason: 1})
                    self.assertEqual(v.first_bad["reason"], reason)

    def test_signed_zeros_tie_and_infinities_order_as_numbers(self):
        k = 3
        values = [POS_INF, -0.0, 0.0, -1.0, NEG_INF, 0.0]
        x = masked([values], [6])
        lengths = torch.tensor([6], dtype=torch.int32)
        for idx, exact in (([0, 1, 2], True), ([0, 1, 5], True), ([0, 2, 5], True),
                           ([1, 2, 5], False), ([0, 1, 3], False)):
            v = self.verify(x, lengths, torch.tensor([idx]), k)
            self.assertEqual(v.exact, exact, (idx, v.summary()))

    def test_valid_minus_infinity_must_be_picked_inside_the_row(self):
        k = 3
        x = masked([[1.0, NEG_INF, NEG_INF, NEG_INF, 0.0, 0.0]], [4])  # suffix -inf too
        lengths = torch.tensor([4], dtype=torch.int32)
        self.assertTrue(self.verify(x, lengths, torch.tensor([[0, 1, 3]]), k).exact)
        self.assertFalse(self.verify(x, lengths, torch.tensor([[0, 1, 4]]), k).exact)

    def test_output_of_the_wrong_shape_fails_every_row(self):
        x = masked([[1.0, 2.0, 3.0]] * 2, [3, 3])
        v = self.verify(x, torch.tensor([3, 3], dtype=torch.int32), torch.zeros(2, 1), 2)
        self.assertFalse(v.exact)
        self.assertEqual(v.bad_rows, 2)

    def test_random_mutations_agree_with_the_brute_force_contract(self):
        rnd = random.Random(5)
        k, n, m = 8, 40, 60
        for trial in range(30):
            pool = [-0.0, 0.0, 1.0, -1.0, 2.0, POS_INF, NEG_INF, 3.5] if trial % 2 else None
            lens = [rnd.choice([0, 1, k - 1, k, k + 1, rnd.randint(0, n), n]) for _ in range(m)]
            rows = [[rnd.choice(pool) if pool else rnd.gauss(0, 1) for _ in range(n)]
                    for _ in range(m)]
            x = masked(rows, lens)
            lengths = torch.tensor(lens, dtype=torch.int32)
            out = self.reference(x, lengths, k).clone()
            # mutate a third of the rows: swap in another index, duplicate, or shuffle -1s
            for r in range(m):
                if rnd.random() < 0.33:
                    slot = rnd.randrange(k)
                    out[r, slot] = rnd.randint(-1, n - 1)
            v_chunked = self.verify(x, lengths, out, k, chunk_bytes=1)
            v_whole = self.verify(x, lengths, out, k)
            expect = [brute_force_exact(rows[r], lens[r], k, out[r].tolist()) for r in range(m)]
            self.assertEqual(v_whole.bad_rows, expect.count(False), f"trial {trial}")
            self.assertEqual(v_chunked.to_json(), v_whole.to_json())
            if False in expect:
                self.assertEqual(v_whole.first_bad["row"], expect.index(False))


@unittest.skipIf(torch is None, "torch is not installed")
class RotationTest(unittest.TestCase):
    def test_inputs_below_three_l2_rotate_enough_copies_to_cover_it(self):
        from graph_timing import MAX_INPUT_COPIES, input_copies

        l2 = 50 << 20
        self.assertEqual(input_copies(3 * l2, l2), 1)
        self.assertEqual(input_copies(256 << 20, l2), 1)
        for size in (1 << 20, 10 << 20, 40 << 20, 149 << 20):
            c = input_copies(size, l2)
            self.assertTrue(c * size >= 3 * l2 or c == MAX_INPUT_COPIES, size)
            self.assertGreater(c, 1)


if __name__ == "__main__":
    unittest.main()
