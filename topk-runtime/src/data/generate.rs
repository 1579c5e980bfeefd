//! Whole matrices from the shared formula, rows in parallel.

use rayon::prelude::*;

use super::counter::row_key;
use super::formula::{clamp_k, value_in_row};
use super::Profile;
use crate::{Error, Result};

/// Generates `lengths.len()` rows of `profile` into a new `rows x pitch` buffer: row `r` is
/// global row `row_offset + r`, holds the profile's values at `c < lengths[r]` and `-inf` at
/// `lengths[r] <= c < width` (the masked suffix dense selectors need). Columns in
/// `[width, pitch)` are `-inf` too. Bit-identical to the CUDA generator's output over
/// `[0, width)`, however either is split into pieces of rows.
pub fn generate(
    profile: Profile,
    seed: u64,
    k: u32,
    row_offset: u64,
    lengths: &[i32],
    width: usize,
    pitch: usize,
) -> Result<Vec<f32>> {
    let len = lengths.len().checked_mul(pitch).ok_or_else(|| {
        Error::Input(format!(
            "{} rows of pitch {pitch} overflow usize",
            lengths.len()
        ))
    })?;
    let mut out = vec![f32::NEG_INFINITY; len];
    generate_into(
        &mut out, profile, seed, k, row_offset, lengths, width, pitch,
    )?;
    Ok(out)
}

/// [`generate`] into an existing buffer of at least `lengths.len() * pitch` elements; only
/// columns `[0, width)` of each row are written.
#[allow(clippy::too_many_arguments)]
pub fn generate_into(
    out: &mut [f32],
    profile: Profile,
    seed: u64,
    k: u32,
    row_offset: u64,
    lengths: &[i32],
    width: usize,
    pitch: usize,
) -> Result<()> {
    check_shape(out.len(), lengths.len(), width, pitch)?;
    if lengths.is_empty() || pitch == 0 {
        return Ok(());
    }
    let k = clamp_k(k);
    out.par_chunks_mut(pitch)
        .zip(lengths.par_iter())
        .enumerate()
        .for_each(|(r, (row_out, &len))| {
            let row = row_offset.wrapping_add(r as u64);
            let key = row_key(seed, row);
            let valid = len.clamp(0, width as i32) as usize;
            for (c, x) in row_out[..valid].iter_mut().enumerate() {
                *x = value_in_row(profile, key, row, c as u32, len as u32, k);
            }
            row_out[valid..width].fill(f32::NEG_INFINITY);
        });
    Ok(())
}

fn check_shape(buffer: usize, rows: usize, width: usize, pitch: usize) -> Result<()> {
    if width > i32::MAX as usize {
        return Err(Error::Input(format!(
            "width {width} exceeds i32::MAX, the generator's column range; generate narrower matrices"
        )));
    }
    if pitch < width {
        return Err(Error::Input(format!(
            "row pitch {pitch} is smaller than the width {width}; pass a pitch of at least the width"
        )));
    }
    if buffer < rows.saturating_mul(pitch) {
        return Err(Error::Input(format!(
            "output buffer holds {buffer} elements but {rows} rows of pitch {pitch} need {}",
            rows.saturating_mul(pitch)
        )));
    }
    Ok(())
}
