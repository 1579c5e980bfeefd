"""Checks a selector's output against the operator contract (README, "The operator contract";
paper eq. 30).

For a row of length L > K: K distinct indices in [0, L) and min(selected) >= max(unselected).
For L <= K: the indices 0..L-1 in the first L slots (any order), then -1.

The check runs on whatever device holds the tensors, in row chunks, so that an 8192 x 1M input
(32 GiB) is verified without a second copy of it. It relies on one property of the input: the
scores past a row's length are -inf (the generator writes them, score_generator checks it).
Then the K-th largest value t of the padded row equals that of the valid prefix, and
"min(selected) >= max(unselected)" is the same as: every selected value is >= t and the
selection holds every value > t (those all sit in torch.topk's K values). Comparisons are IEEE,
so -0.0 == +0.0 and +-inf order as numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

# Failure reasons, in the order a row is tested; a row is counted under its first failure.
OUT_OF_RANGE = "index outside [0, L) in a row with L > K"
DUPLICATE = "duplicate index"
BELOW_KTH = "selected a score below the K-th largest"
MISSED_LARGER = "left out a score larger than the K-th largest"
SHORT_SET = "row with L <= K does not hold exactly 0..L-1"
SHORT_PADDING = "row with L <= K: -1 padding not after the L valid indices"
BAD_SHAPE = "output shape"

DEFAULT_CHUNK_BYTES = 1 << 30


@dataclass
class Verdict:
    exact: bool
    rows: int
    bad_rows: int = 0
    failures: dict = field(default_factory=dict)
    first_bad: dict | None = None

    def to_json(self) -> dict:
        return {
            "exact": self.exact,
            "rows": self.rows,
            "bad_rows": self.bad_rows,
            "failures": dict(self.failures),
            "first_bad": self.first_bad,
        }

    def summary(self) -> str:
        if self.exact:
            return "exact"
        parts = ", ".join(f"{n} {reason}" for reason, n in self.failures.items())
        where = ""
        if self.first_bad is not None:
            where = f"; first bad row {self.first_bad['row']} (L={self.first_bad['length']})"
        return f"{self.bad_rows}/{self.rows} rows wrong: {parts}{where}"


def chunk_rows(width: int, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> int:
    return max(1, chunk_bytes // (4 * max(1, width)))


def verify_selection(
    scores: torch.Tensor,
    lengths: torch.Tensor,
    indices: torch.Tensor,
    k: int,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> Verdict:
    """Verdict on `indices` [M, K] for `scores` [M, N] (-inf past each row's length)."""
    m, n = scores.shape
    if indices.dim() != 2 or indices.shape[0] != m or indices.shape[1] != k:
        return Verdict(
            exact=False,
            rows=m,
            bad_rows=m,
            failures={BAD_SHAPE: m},
            first_bad={
                "row": 0,
                "length": int(lengths[0]) if m else 0,
                "reason": f"{BAD_SHAPE}: got {tuple(indices.shape)}, expected ({m}, {k})",
            },
        )
    if indices.dtype not in (torch.int32, torch.int64):
        return Verdict(
            exact=False,
            rows=m,
            bad_rows=m,
            failures={BAD_SHAPE: m},
            first_bad={"row": 0, "length": 0, "reason": f"index dtype {indices.dtype}"},
        )
    verdict = Verdict(exact=True, rows=m)
    step = chunk_rows(n, chunk_bytes)
    for r0 in range(0, m, step):
        r1 = min(m, r0 + step)
        _verify_chunk(scores[r0:r1], lengths[r0:r1], indices[r0:r1], k, r0, verdict)
    verdict.exact = verdict.bad_rows == 0
    return verdict


def _verify_chunk(x, lengths, idx, k, row0, verdict):
    dev = x.device
    n = x.shape[1]
    length = lengths.to(torch.int64)
    idx = idx.to(torch.int64)
    srt = torch.sort(idx, dim=1).values
    slot = torch.arange(k, device=dev, dtype=torch.int64).unsqueeze(0)
    is_long = length > k

    # Rows with L <= K: sorted, the row is K - L copies of -1 followed by 0..L-1; in place,
    # the first L slots hold the valid indices and the rest -1.
    pad = (k - length).clamp(min=0).unsqueeze(1)
    expected = torch.where(slot < pad, torch.full_like(srt, -1), slot - pad)
    short_set_ok = (srt == expected).all(dim=1)
    short_pad_ok = ((idx >= 0) == (slot < length.unsqueeze(1))).all(dim=1)

    # Rows with L > K.
    in_range = (srt[:, 0] >= 0) & (srt[:, -1] < length)
    distinct = (srt[:, 1:] != srt[:, :-1]).all(dim=1)
    above_ok = torch.ones_like(is_long)
    larger_ok = torch.ones_like(is_long)
    if bool(is_long.any()):
        if n < k:
            raise ValueError(f"row length above K={k} in a matrix of width {n}: lengths are wrong")
        top = torch.topk(x, k, dim=1, largest=True, sorted=False).values
        kth = top.min(dim=1).values.unsqueeze(1)
        picked = x.gather(1, idx.clamp(0, n - 1))
        above_ok = (picked >= kth).all(dim=1)
        larger_ok = (picked > kth).sum(dim=1) == (top > kth).sum(dim=1)
        del top, picked

    checks_long = ((OUT_OF_RANGE, in_range), (DUPLICATE, distinct), (BELOW_KTH, above_ok),
                   (MISSED_LARGER, larger_ok))
    checks_short = ((SHORT_SET, short_set_ok), (SHORT_PADDING, short_pad_ok))
    failed_before = torch.zeros_like(is_long)
    first = None
    for group_mask, checks in ((is_long, checks_long), (~is_long, checks_short)):
        for reason, ok in checks:
            fail = group_mask & ~ok & ~failed_before
            count = int(fail.sum())
            if count:
                verdict.failures[reason] = verdict.failures.get(reason, 0) + count
                verdict.bad_rows += count
                row = int(torch.nonzero(fail)[0, 0])
                if first is None or row < first[0]:
                    first = (row, reason)
            failed_before |= fail
    if first is not None and verdict.first_bad is None:
        row, reason = first
        verdict.first_bad = {"row": row0 + row, "length": int(length[row]), "reason": reason}
