//! The exactness check of paper eq. 30 and the short-row sentinel contract (§2.1), in O(L) per
//! row: it compares values, so it accepts any tie-breaking and needs no reference output.

use super::scan::first_nan;
use crate::input::{check_indices, check_k, check_matrix};
use crate::{Error, Result, ScoreMatrix};
use rayon::prelude::*;
use std::fmt;

/// How many violations a report spells out; the rest are only counted.
const REPORTED: usize = 8;

/// One row that breaks the contract, and the first thing found wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The row.
    pub row: usize,
    /// What is wrong, in one sentence.
    pub what: String,
}

/// The outcome of [`verify`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Rows checked: every row of the matrix.
    pub rows_checked: usize,
    /// Rows that break the contract.
    pub rows_violating: usize,
    /// The first few violations, by row.
    pub violations: Vec<Violation>,
}

impl VerifyReport {
    /// Every row satisfies the contract.
    pub fn is_exact(&self) -> bool {
        self.rows_violating == 0
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} rows violate the Top-K contract",
            self.rows_violating, self.rows_checked
        )?;
        for v in &self.violations {
            write!(f, "\n  row {}: {}", v.row, v.what)?;
        }
        if self.rows_violating > self.violations.len() {
            write!(f, "\n  ...")?;
        }
        Ok(())
    }
}

/// Check `indices` (row `r` in `indices[r * out_pitch..][..k]`) against `scores`: for `L > K`,
/// K distinct indices in `[0, L)` with `min(selected) >= max(unselected)` compared as FP32
/// values (`-0.0 == +0.0`); for `L <= K`, the indices `0..L` in any order, then `-1`.
/// Bad shapes and NaN scores (outside the contract) are errors, not violations.
///
/// ```
/// use topk_runtime::{cpu, ScoreMatrix};
///
/// # fn main() -> topk_runtime::Result<()> {
/// let scores = [4.0f32, 1.0, 3.0, 2.0];
/// let matrix = ScoreMatrix { data: &scores, rows: 1, width: 4, pitch: 4, lengths: &[4] };
/// assert!(cpu::verify(&matrix, 2, &[2, 0], 2)?.is_exact()); // {4.0, 3.0}, any order
/// let report = cpu::verify(&matrix, 2, &[0, 3], 2)?; // 2.0 selected over 3.0
/// assert_eq!(report.rows_violating, 1);
/// println!("{report}");
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`Error::K`], [`Error::Input`] or [`Error::Length`] for bad shapes; [`Error::NaN`] for a
/// NaN among the valid scores.
pub fn verify(
    scores: &ScoreMatrix,
    k: usize,
    indices: &[i32],
    out_pitch: usize,
) -> Result<VerifyReport> {
    check_k(k)?;
    check_matrix(scores)?;
    check_indices(scores.rows, k, indices.len(), out_pitch)?;
    let findings: Vec<Option<String>> = indices
        .par_chunks(out_pitch)
        .take(scores.rows)
        .enumerate()
        .map_init(Vec::new, |sorted: &mut Vec<u32>, (r, slots)| {
            let row = scores.row(r);
            if let Some(col) = first_nan(row) {
                return Err(Error::NaN { row: r, col });
            }
            let slots = &slots[..k];
            Ok(if row.len() <= k {
                check_short_row(row.len(), slots, sorted)
            } else {
                check_long_row(row, slots, sorted)
            })
        })
        .collect::<Result<_>>()?;
    Ok(report(findings))
}

/// The report of one finding (or none) per row.
pub(super) fn report(findings: Vec<Option<String>>) -> VerifyReport {
    let mut report = VerifyReport {
        rows_checked: findings.len(),
        ..VerifyReport::default()
    };
    for (row, what) in findings.into_iter().enumerate() {
        if let Some(what) = what {
            report.rows_violating += 1;
            if report.violations.len() < REPORTED {
                report.violations.push(Violation { row, what });
            }
        }
    }
    report
}

/// `L > K`: K distinct valid indices, and no unselected score above the smallest selected one.
pub(super) fn check_long_row(row: &[f32], slots: &[i32], sorted: &mut Vec<u32>) -> Option<String> {
    let len = row.len();
    sorted.clear();
    for (slot, &index) in slots.iter().enumerate() {
        if index < 0 || index as usize >= len {
            return Some(format!(
                "slot {slot} holds {index}, outside the valid range [0, {len})"
            ));
        }
        sorted.push(index as u32);
    }
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Some(format!("index {} is selected twice", w[0]));
    }
    let mut weakest = sorted[0];
    let mut min_selected = row[weakest as usize];
    for &i in &sorted[1..] {
        if row[i as usize] < min_selected {
            weakest = i;
            min_selected = row[i as usize];
        }
    }
    // Every score above the smallest selected one must be selected: count both sides.
    let above_in_row = row.iter().filter(|&&x| x > min_selected).count();
    let above_selected = sorted
        .iter()
        .filter(|&&i| row[i as usize] > min_selected)
        .count();
    if above_in_row == above_selected {
        return None;
    }
    let (missed, x) = row
        .iter()
        .enumerate()
        .find(|&(i, &x)| x > min_selected && sorted.binary_search(&(i as u32)).is_err())
        .map(|(i, &x)| (i, x))?;
    Some(format!(
        "unselected index {missed} (score {x:e}) beats selected index {weakest} (score {min_selected:e})"
    ))
}

/// `L <= K`: slots `0..L` hold a permutation of `0..L`, the remaining slots hold `-1`.
pub(super) fn check_short_row(len: usize, slots: &[i32], sorted: &mut Vec<u32>) -> Option<String> {
    if let Some((slot, &index)) = slots.iter().enumerate().skip(len).find(|(_, &i)| i != -1) {
        return Some(format!(
            "slot {slot} holds {index}, but the row has only {len} valid scores: slots from {len} on must hold -1"
        ));
    }
    sorted.clear();
    for (slot, &index) in slots[..len].iter().enumerate() {
        if index < 0 || index as usize >= len {
            return Some(format!(
                "slot {slot} holds {index}, but a row of {len} valid scores must list every index 0..{len} first"
            ));
        }
        sorted.push(index as u32);
    }
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Some(format!(
            "index {} is listed twice, so some valid index of the short row is missing",
            w[0]
        ));
    }
    None
}
