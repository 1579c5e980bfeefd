#!/usr/bin/env python3
"""numpy.argpartition on the same matrix `topk-bench bench --backend cpu` times, for the CPU ratio.

    topk gen --profile indexer --rows 64 --width 262144 --out S.npy --lengths-out L.npy
    topk-bench bench --backend cpu --scores S.npy --lengths L.npy --k 2048 --json
    python3 bench/cpu_vs_numpy.py S.npy L.npy 2048

Scores past each row's length are already -inf in generated files, so the dense argpartition
selects the same values. Prints the median of --reps timed calls in milliseconds.
"""
import statistics
import sys
import time

import numpy as np


def main() -> None:
    scores_path, lengths_path, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 9
    x = np.load(scores_path)
    lengths = np.load(lengths_path)
    cols = np.arange(x.shape[1])
    x = np.where(cols[None, :] < lengths[:, None], x, -np.inf).astype(np.float32)
    neg = -x  # argpartition selects the smallest; negate outside the timed region
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        idx = np.argpartition(neg, k - 1, axis=1)[:, :k]
        times.append((time.perf_counter() - t0) * 1e3)
    # Sanity: the K-th largest value of each row is matched by the partition.
    kth = -np.partition(neg, k - 1, axis=1)[:, k - 1]
    picked = np.take_along_axis(x, idx, axis=1)
    assert np.all(picked.min(axis=1) >= kth), "argpartition result is not a top-K"
    print(f"numpy {np.__version__} argpartition: median {statistics.median(times):.2f} ms over {reps} calls "
          f"({x.shape[0]} x {x.shape[1]}, K = {k})")


if __name__ == "__main__":
    main()
