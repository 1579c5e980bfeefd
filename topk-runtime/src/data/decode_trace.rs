//! A synthetic decode trace: consecutive steps of a batch of sequences, as an engine's indexer
//! scores them. Every step each sequence grows by one position and its query drifts a little,
//! so a row's scores at step `t + 1` are those of step `t`, moved, plus one new score: the calls
//! a row's prior boundary (`prior=P/R`, the previous step's `boundary`) is made for.
//!
//! Position `i` of sequence `b` has a fixed key vector `k_bi` (`dims` entries, uniform in
//! [-1, 1)); the query of step `t` is `q_b(t) = q_b(0) + drift * (n_b(1) + ... + n_b(t))` with
//! independent uniform steps `n`; the score is `k_bi . q_b(t) / sqrt(dims)`. `drift = 0` repeats
//! the scores; larger drifts decorrelate consecutive steps.

use super::counter::{cell, draw, row_key, unit};

/// A batch of sequences decoded step by step.
#[derive(Clone, Debug)]
pub struct DecodeTrace {
    /// Length of each sequence at step 0 (it grows by one per step).
    pub start_lens: Vec<usize>,
    /// Entries of the key and query vectors.
    pub dims: usize,
    /// Size of the query's step (see the module doc).
    pub drift: f32,
    /// Seed of every key and query.
    pub seed: u64,
}

/// The scores of one step: `rows x width`, row `b` valid on `[0, lengths[b])`.
#[derive(Clone, Debug)]
pub struct TraceStep {
    /// Row-major scores.
    pub scores: Vec<f32>,
    /// Row width (the longest sequence at the trace's last step).
    pub width: usize,
    /// Valid length of each row.
    pub lengths: Vec<i32>,
}

impl DecodeTrace {
    /// The scores of step `step` on rows of `width` columns (at least the longest sequence at
    /// that step; the columns past a row's length are zero).
    pub fn step(&self, step: usize, width: usize) -> TraceStep {
        let rows = self.start_lens.len();
        let mut scores = vec![0f32; rows * width];
        let scale = 1.0 / (self.dims.max(1) as f32).sqrt();
        let mut lengths = Vec::with_capacity(rows);
        for (b, row) in scores.chunks_mut(width).enumerate() {
            let len = (self.start_lens[b] + step).min(width);
            lengths.push(len as i32);
            let q = self.query(b, step);
            let keys = row_key(self.seed, 2 * b as u64);
            for (i, score) in row[..len].iter_mut().enumerate() {
                let c = cell(keys, i as u32);
                let dot: f32 = (0..self.dims)
                    .map(|j| (2.0 * unit(draw(c, j as u32)) - 1.0) * q[j])
                    .sum();
                *score = dot * scale;
            }
        }
        TraceStep {
            scores,
            width,
            lengths,
        }
    }

    /// Sequence `b`'s query at step `step`.
    fn query(&self, b: usize, step: usize) -> Vec<f32> {
        let queries = row_key(self.seed, 2 * b as u64 + 1);
        let uniform =
            |t: usize, j: usize| 2.0 * unit(draw(cell(queries, t as u32), j as u32)) - 1.0;
        (0..self.dims)
            .map(|j| uniform(0, j) + self.drift * (1..=step).map(|t| uniform(t, j)).sum::<f32>())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_grow_by_one_and_keep_their_keys_without_drift() {
        let trace = DecodeTrace {
            start_lens: vec![5, 9],
            dims: 4,
            drift: 0.0,
            seed: 7,
        };
        let (a, b) = (trace.step(0, 12), trace.step(2, 12));
        assert_eq!(a.lengths, [5, 9]);
        assert_eq!(b.lengths, [7, 11]);
        // Without drift a position keeps its score; new positions are appended.
        assert_eq!(&a.scores[..5], &b.scores[..5]);
        assert_eq!(&a.scores[12..21], &b.scores[12..21]);
        assert!(b.scores[5] != 0.0 && b.scores[12 + 10] != 0.0);
        assert_eq!(b.scores[7..12], [0.0; 5]);
        // With drift the scores move.
        let drifting = DecodeTrace {
            drift: 0.1,
            ..trace
        };
        assert_ne!(&drifting.step(1, 12).scores[..5], &a.scores[..5]);
    }
}
