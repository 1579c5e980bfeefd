//! A row's selection as the call stores it: sorted when asked, its values beside it, its
//! indices moved by the window's base and transformed. On the CPU this runs after refinement;
//! the GPU kernels do the same where they commit an index (docs/interface.md).

use crate::call::{RowTransform, RowWindow};
use crate::score::Score;
use crate::{keys, Result};

/// Order the valid slots of a row (the `-1` padding stays last) descending by value, equal
/// values by ascending index. `row` holds the row's valid scores, slots index into it.
pub(super) fn sort_row(row: &[f32], slots: &mut [i32]) {
    let filled = slots.iter().position(|&i| i < 0).unwrap_or(slots.len());
    slots[..filled]
        .sort_unstable_by_key(|&i| (u64::from(keys::desc_key32(row[i as usize])) << 32) | i as u64);
}

/// Write the values of the slots (`-inf` where a slot holds `-1`) into `values`, then turn each
/// valid slot's index (relative to the window's start) into the index the call stores: the
/// window's base plus the index, through the row's transform.
pub(super) fn write_row<T: Score>(
    window: &[T],
    slots: &mut [i32],
    values: Option<&mut [T]>,
    place: &RowWindow,
    transform: &RowTransform,
    row: usize,
) -> Result<()> {
    if let Some(values) = values {
        for (value, &i) in values.iter_mut().zip(slots.iter()) {
            *value = match i {
                -1 => T::NEG_INFINITY,
                i => window[i as usize],
            };
        }
    }
    if matches!(transform, RowTransform::None) && place.base == 0 {
        return Ok(());
    }
    for slot in slots.iter_mut().filter(|i| **i >= 0) {
        *slot = transform.apply(place.written(*slot as usize), row)?;
    }
    Ok(())
}
