//! The verifier over a whole call interface: each output is mapped back through the row's
//! transform to a position of its window (an output no position maps to is a wrong transform),
//! the positions are checked against the contract (eq. 30, the short-row form), and then what
//! the spec's interface adds: values equal to the scores at the positions (bit for bit, `-inf`
//! beside `-1`), descending order with `order=sorted`, and with `ties=lowest` the lowest
//! positions among the scores equal to the K-th largest (and ascending positions among equal
//! values when sorted).

use super::verify::{check_long_row, check_short_row, report, VerifyReport};
use crate::call::{resolve, CallIo, RowWindow, TransformInverse};
use crate::input::{check_indices, check_k};
use crate::score::{Score, ScoreRows};
use crate::{keys, Error, Result};
use rayon::prelude::*;
use topk_dsl::{Order, Spec, Ties};

/// Check a call's output (`indices`, and `values` when the spec has `values=true`, both at
/// `pitch`) against its scores and inputs under `spec`'s interface. Violations are reported per
/// row; bad shapes, NaN scores and a page table that maps two pages of a row to one physical
/// page (no output could say which position it names) are errors.
pub fn verify_with<T: Score>(
    spec: &Spec,
    scores: &ScoreRows<T>,
    io: &CallIo,
    indices: &[i32],
    pitch: usize,
    values: Option<&[T]>,
) -> Result<VerifyReport> {
    let k = spec.k as usize;
    check_k(k)?;
    let (windows, transforms) = resolve(spec, scores, io)?;
    check_indices(scores.rows, k, indices.len(), pitch)?;
    crate::call::check_values(spec, values, scores.rows, k, pitch)?;
    let rules = Rules {
        sorted: spec.io.order == Order::Sorted,
        lowest_ties: spec.io.ties == Ties::Lowest,
    };
    let findings: Vec<Option<String>> = indices
        .par_chunks(pitch)
        .take(scores.rows)
        .enumerate()
        .map_init(Scratch::default, |scratch, (r, slots)| {
            let place = windows[r];
            let window = &scores.row(r)[place.start..place.start + place.len];
            let mut widened = std::mem::take(&mut scratch.widened);
            let x = T::as_f32(window, &mut widened);
            if let Some(col) = x.iter().position(|v| v.is_nan()) {
                return Err(Error::NaN {
                    row: r,
                    col: place.start + col,
                });
            }
            let inverse = TransformInverse::of(&transforms[r], &place, r)?;
            let values = values.map(|v| &v[r * pitch..][..k]);
            let finding = check_row(
                rules,
                window,
                x,
                &place,
                &inverse,
                &slots[..k],
                values,
                scratch,
            );
            scratch.widened = widened;
            Ok(finding)
        })
        .collect::<Result<_>>()?;
    Ok(report(findings))
}

/// What the spec's interface requires beyond the contract.
#[derive(Clone, Copy)]
struct Rules {
    sorted: bool,
    lowest_ties: bool,
}

#[derive(Default)]
struct Scratch {
    widened: Vec<f32>,
    positions: Vec<i32>,
    sorted: Vec<u32>,
}

/// The first thing wrong with one row, if any.
#[allow(clippy::too_many_arguments)]
fn check_row<T: Score>(
    rules: Rules,
    window: &[T],
    x: &[f32],
    place: &RowWindow,
    inverse: &TransformInverse,
    slots: &[i32],
    values: Option<&[T]>,
    scratch: &mut Scratch,
) -> Option<String> {
    let positions = &mut scratch.positions;
    positions.clear();
    for (slot, &v) in slots.iter().enumerate() {
        positions.push(match v {
            -1 => -1,
            v => match inverse.position(v, place) {
                Some(i) => i as i32,
                None => {
                    return Some(format!(
                        "slot {slot} holds {v}, which no position of the row's window [{}, {}) \
                         is written as (wrong index or transform)",
                        place.start,
                        place.start + place.len
                    ))
                }
            },
        });
    }
    let k = slots.len();
    let contract = if x.len() <= k {
        check_short_row(x.len(), positions, &mut scratch.sorted)
    } else {
        check_long_row(x, positions, &mut scratch.sorted)
    };
    contract
        .or_else(|| values.and_then(|v| check_values(window, positions, v)))
        .or_else(|| {
            (rules.lowest_ties && x.len() > k)
                .then(|| check_lowest_ties(x, positions))
                .flatten()
        })
        .or_else(|| {
            rules
                .sorted
                .then(|| check_order(x, positions, rules.lowest_ties))
                .flatten()
        })
}

/// Each value is the score at its slot's position, bit for bit; `-inf` beside `-1`.
fn check_values<T: Score>(window: &[T], positions: &[i32], values: &[T]) -> Option<String> {
    positions
        .iter()
        .zip(values)
        .enumerate()
        .find_map(|(slot, (&i, &value))| {
            let want = match i {
                -1 => T::NEG_INFINITY,
                i => window[i as usize],
            };
            (value.to_bits_u32() != want.to_bits_u32()).then(|| match i {
                -1 => format!("slot {slot} holds -1 but its value is {value:?}, not -inf"),
                i => format!(
                    "slot {slot}: value {value:?} (bits {:#x}), but the score at position {i} \
                     is {want:?} (bits {:#x})",
                    value.to_bits_u32(),
                    want.to_bits_u32()
                ),
            })
        })
}

/// Among the scores equal to the smallest selected one, the selected are the lowest positions.
fn check_lowest_ties(x: &[f32], positions: &[i32]) -> Option<String> {
    let key = |i: i32| keys::desc_key32(x[i as usize]);
    let boundary = positions.iter().map(|&i| key(i)).max()?;
    let mut chosen: Vec<i32> = positions
        .iter()
        .copied()
        .filter(|&i| key(i) == boundary)
        .collect();
    chosen.sort_unstable();
    let highest = *chosen.last()?;
    // The chosen ties are distinct (the contract holds): they are the lowest exactly when no
    // other tie lies below the highest of them.
    if (0..=highest).filter(|&i| key(i) == boundary).count() == chosen.len() {
        return None;
    }
    let skipped =
        (0..highest).find(|&i| key(i) == boundary && chosen.binary_search(&i).is_err())?;
    Some(format!(
        "ties at rank K: position {skipped} (score {:e}) is not selected but position {highest} \
         with the same score is; with ties=lowest the lowest positions win",
        x[skipped as usize]
    ))
}

/// Valid slots descending by value (ascending positions among equal values with lowest ties).
fn check_order(x: &[f32], positions: &[i32], lowest_ties: bool) -> Option<String> {
    let filled = positions
        .iter()
        .position(|&i| i < 0)
        .unwrap_or(positions.len());
    let key = |i: i32| keys::desc_key32(x[i as usize]);
    positions[..filled]
        .windows(2)
        .enumerate()
        .find_map(|(j, w)| {
            let (a, b) = (w[0], w[1]);
            if key(a) > key(b) {
                Some(format!(
                "slots {j} and {} are out of order: score {:e} (position {a}) before the larger \
                 {:e} (position {b}); order=sorted is descending by value",
                j + 1,
                x[a as usize],
                x[b as usize]
            ))
            } else if lowest_ties && key(a) == key(b) && a > b {
                Some(format!(
                    "slots {j} and {} are out of order: equal scores at positions {a} before {b}; \
                 with ties=lowest equal values come in ascending position order",
                    j + 1
                ))
            } else {
                None
            }
        })
}

/// Check a call's boundary output (`boundary=true`): each row's value is the K-th largest score
/// of its window, compared as a number with `-0.0` as `+0.0`, and NaN for a row of `L <= K`.
/// Violations are reported per row; bad shapes and NaN scores are errors.
pub fn verify_boundary<T: Score>(
    spec: &Spec,
    scores: &ScoreRows<T>,
    io: &CallIo,
    boundary: &[f32],
) -> Result<VerifyReport> {
    let k = spec.k as usize;
    check_k(k)?;
    let (windows, _) = resolve(spec, scores, io)?;
    crate::call::check_boundary(spec, Some(boundary), scores.rows)?;
    let findings: Vec<Option<String>> = (0..scores.rows)
        .into_par_iter()
        .map(|r| {
            let place = windows[r];
            let window = &scores.row(r)[place.start..place.start + place.len];
            let mut x: Vec<f32> = Vec::new();
            let x = T::as_f32(window, &mut x).to_vec();
            if let Some(col) = x.iter().position(|v| v.is_nan()) {
                return Err(Error::NaN {
                    row: r,
                    col: place.start + col,
                });
            }
            let got = boundary[r];
            Ok(match kth_largest(x, k) {
                None if got.is_nan() => None,
                None => Some(format!(
                    "boundary {got:e} for a row of {} <= K scores (NaN expected)",
                    place.len
                )),
                // `want` is canonical: a zero boundary is written as +0.0.
                Some(want) if got.to_bits() == want.to_bits() => None,
                Some(want) => Some(format!(
                    "boundary {got:e}, but the K-th largest score is {want:e} (a zero as +0.0)"
                )),
            })
        })
        .collect::<Result<_>>()?;
    Ok(report(findings))
}

/// The K-th largest of `x` (no NaN), `None` when `x` holds at most K scores.
fn kth_largest(mut x: Vec<f32>, k: usize) -> Option<f32> {
    if x.len() <= k {
        return None;
    }
    let (_, kth, _) = x.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    Some(keys::canonical(*kth))
}
