//! Brute-force exact Top-K: sort each row by (descending key, index). Slow and obviously right;
//! it shares nothing with the selector beyond the FP32 key.

use super::finish::write_row;
use super::output::write_short_row;
use crate::call::{check_boundary, check_values, resolve, CallIo, CallOut};
use crate::input::{check_indices, check_k, check_matrix};
use crate::score::{Score, ScoreRows};
use crate::{keys, Error, Result, ScoreMatrix};
use rayon::prelude::*;
use topk_dsl::Spec;

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

/// The canonical output of a call (`crate::call`) under `spec`'s interface: every row's K best
/// positions of its window, best first, equal values by ascending index (what `ties=lowest` and
/// `order=sorted` require, and one of the outputs every other interface allows), then written as
/// the spec's `rows` and `transform` say, with values when the spec has `values=true`. Only
/// the spec's dtype, `k` and interface are read. With `boundary=true` each row's K-th largest
/// score goes to `out.boundary` (NaN for a row of `L <= K`); a prior is not read. Fails on the same bad inputs as
/// [`super::select_with`].
pub fn oracle_with<T: Score>(
    spec: &Spec,
    scores: &ScoreRows<T>,
    io: &CallIo,
    out: CallOut<T>,
) -> Result<()> {
    let k = spec.k as usize;
    check_k(k)?;
    let (windows, transforms) = resolve(spec, scores, io)?;
    let CallOut {
        indices,
        pitch,
        values,
        boundary,
    } = out;
    check_indices(scores.rows, k, indices.len(), pitch)?;
    check_values(spec, values.as_deref(), scores.rows, k, pitch)?;
    check_boundary(spec, boundary.as_deref(), scores.rows)?;
    let mut value_rows: Vec<Option<&mut [T]>> = match values {
        Some(v) => v.chunks_mut(pitch).take(scores.rows).map(Some).collect(),
        None => std::iter::repeat_with(|| None).take(scores.rows).collect(),
    };
    let mut boundaries = vec![f32::NAN; scores.rows];
    indices
        .par_chunks_mut(pitch)
        .take(scores.rows)
        .zip(value_rows.par_iter_mut())
        .zip(boundaries.par_iter_mut())
        .enumerate()
        .try_for_each(|(r, ((slots, values), row_boundary))| {
            let place = windows[r];
            let window = &scores.row(r)[place.start..place.start + place.len];
            if let Some(col) = window.iter().position(|x| x.to_f32().is_nan()) {
                return Err(Error::NaN {
                    row: r,
                    col: place.start + col,
                });
            }
            let slots = &mut slots[..k];
            let mut order: Vec<u64> = window
                .iter()
                .enumerate()
                .map(|(i, &x)| (keys::desc_key32(x.to_f32()) as u64) << 32 | i as u64)
                .collect();
            order.sort_unstable();
            slots.fill(-1);
            for (slot, packed) in slots.iter_mut().zip(&order) {
                *slot = (*packed & 0xffff_ffff) as i32;
            }
            if window.len() > k {
                // The K-th largest, as the kernels write it: canonical, from its key.
                *row_boundary = keys::canonical(window[slots[k - 1] as usize].to_f32());
            }
            let values = values.as_deref_mut().map(|v| &mut v[..k]);
            write_row(window, slots, values, &place, &transforms[r], r)
        })?;
    if let Some(boundary) = boundary {
        boundary[..scores.rows].copy_from_slice(&boundaries);
    }
    Ok(())
}
