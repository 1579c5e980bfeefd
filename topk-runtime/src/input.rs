//! Shape checks shared by the host entry points (CPU backend, host-memory GPU selector); they
//! run before any score is read, so a bad call fails with a message, not an out-of-bounds panic.

use crate::{Error, Result, ScoreMatrix};
use topk_dsl::MAX_K;

/// The matrix fits in its buffer and every valid length lies in `[0, width]`.
pub(crate) fn check_matrix(scores: &ScoreMatrix) -> Result<()> {
    check_score_rows(&crate::ScoreRows::from(scores))?;
    if scores.lengths.len() != scores.rows {
        return Err(Error::Input(format!(
            "{} lengths given for {} rows: pass exactly one valid length per row",
            scores.lengths.len(),
            scores.rows
        )));
    }
    for (row, &len) in scores.lengths.iter().enumerate() {
        if len < 0 || len as usize > scores.width {
            return Err(Error::Length {
                row,
                len: len as i64,
                width: scores.width,
            });
        }
    }
    Ok(())
}

/// `1 <= k <= MAX_K`.
pub(crate) fn check_k(k: usize) -> Result<()> {
    if k == 0 {
        return Err(Error::K {
            k,
            why: "K must be at least 1".into(),
        });
    }
    if k > MAX_K as usize {
        return Err(Error::K {
            k,
            why: format!("K must be at most {MAX_K}"),
        });
    }
    Ok(())
}

/// An index buffer of `rows` rows of `k` slots at `pitch` fits in `len` elements.
pub(crate) fn check_indices(rows: usize, k: usize, len: usize, pitch: usize) -> Result<()> {
    if pitch < k {
        return Err(Error::Input(format!(
            "index row pitch {pitch} is smaller than K = {k}: each row needs K slots"
        )));
    }
    let needed = span(rows, pitch, k);
    if !matches!(needed, Some(n) if n <= len) {
        return Err(Error::Input(format!(
            "index buffer holds {len} elements, but {rows} rows of K = {k} at pitch {pitch} need {}",
            needed.map_or("more than usize::MAX".to_string(), |n| n.to_string())
        )));
    }
    Ok(())
}

/// Elements spanned by `rows` rows of `used` elements at `pitch`: the last row needs no padding.
fn span(rows: usize, pitch: usize, used: usize) -> Option<usize> {
    match rows {
        0 => Some(0),
        _ => (rows - 1).checked_mul(pitch)?.checked_add(used),
    }
}

/// A generic score matrix fits in its buffer.
pub(crate) fn check_score_rows<T>(scores: &crate::ScoreRows<T>) -> Result<()> {
    if scores.pitch < scores.width {
        return Err(Error::Input(format!(
            "score pitch {} is smaller than the width {}: the pitch counts elements between row starts and must be at least the width",
            scores.pitch, scores.width
        )));
    }
    let needed = span(scores.rows, scores.pitch, scores.width);
    if !matches!(needed, Some(n) if n <= scores.data.len()) {
        return Err(Error::Input(format!(
            "score buffer holds {} elements, but {} rows at pitch {} and width {} need {}",
            scores.data.len(),
            scores.rows,
            scores.pitch,
            scores.width,
            needed.map_or("more than usize::MAX".to_string(), |n| n.to_string())
        )));
    }
    Ok(())
}
