//! Brute-force exact Top-K: sort each row by (descending key, index). Slow and obviously right;
//! it shares nothing with the selector beyond the FP32 key.

use super::output::write_short_row;
use crate::input::{check_indices, check_k, check_matrix};
use crate::{keys, Error, Result, ScoreMatrix};
use rayon::prelude::*;

/// The K best indices of each row, best first, ties broken by the smaller index; `L <= K` rows
/// get every valid index then `-1`. Fails on the same bad inputs as [`super::select`].
pub fn oracle(scores: &ScoreMatrix, k: usize, out: &mut [i32], out_pitch: usize) -> Result<()> {
    check_k(k)?;
    check_matrix(scores)?;
    check_indices(scores.rows, k, out.len(), out_pitch)?;
    out.par_chunks_mut(out_pitch)
        .take(scores.rows)
        .enumerate()
        .try_for_each(|(r, slots)| {
            let row = scores.row(r);
            if let Some(col) = row.iter().position(|x| x.is_nan()) {
                return Err(Error::NaN { row: r, col });
            }
            let slots = &mut slots[..k];
            if row.len() <= k {
                write_short_row(slots, row.len());
                return Ok(());
            }
            // (key, index) packed so that one integer sort orders by key, then index.
            let mut order: Vec<u64> = row
                .iter()
                .enumerate()
                .map(|(i, &x)| (keys::desc_key32(x) as u64) << 32 | i as u64)
                .collect();
            order.sort_unstable();
            for (slot, packed) in slots.iter_mut().zip(&order) {
                *slot = (*packed & 0xffff_ffff) as i32;
            }
            Ok(())
        })
}
