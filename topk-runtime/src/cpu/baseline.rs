//! The textbook CPU selector the demo compares against: per row, copy (score, index) pairs and
//! partition them with `select_nth_unstable_by`.

use super::output::write_short_row;
use crate::input::{check_indices, check_k, check_matrix};
use crate::{Error, Result, ScoreMatrix};
use rayon::prelude::*;

/// Exact Top-K of each row by quickselect, rows in parallel; same contract and errors as
/// [`super::oracle`], indices in no particular order.
pub fn select_baseline(
    scores: &ScoreMatrix,
    k: usize,
    out: &mut [i32],
    out_pitch: usize,
) -> Result<()> {
    check_k(k)?;
    check_matrix(scores)?;
    check_indices(scores.rows, k, out.len(), out_pitch)?;
    out.par_chunks_mut(out_pitch)
        .take(scores.rows)
        .enumerate()
        .try_for_each_init(Vec::new, |pairs: &mut Vec<(f32, u32)>, (r, slots)| {
            let row = scores.row(r);
            if let Some(col) = row.iter().position(|x| x.is_nan()) {
                return Err(Error::NaN { row: r, col });
            }
            let slots = &mut slots[..k];
            if row.len() <= k {
                write_short_row(slots, row.len());
                return Ok(());
            }
            pairs.clear();
            pairs.extend(row.iter().zip(0u32..).map(|(&x, i)| (x, i)));
            pairs.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
            for (slot, &(_, i)) in slots.iter_mut().zip(pairs.iter()) {
                *slot = i as i32;
            }
            Ok(())
        })
}
