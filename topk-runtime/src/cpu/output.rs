//! Writing one output row: committed indices in arrival order, or the short-row sentinel form.

/// The first `K` slots of one output row, filled front to back.
pub(super) struct OutRow<'a> {
    slots: &'a mut [i32],
    filled: usize,
}

impl<'a> OutRow<'a> {
    pub fn new(slots: &'a mut [i32]) -> Self {
        OutRow { slots, filled: 0 }
    }

    /// Commit one selected index. The phases never commit more than K indices.
    #[inline(always)]
    pub fn push(&mut self, index: u32) {
        self.slots[self.filled] = index as i32;
        self.filled += 1;
    }

    pub fn filled(&self) -> usize {
        self.filled
    }
}

/// `L <= K` (paper §2.1): every valid index in order, then `-1` in the remaining slots.
pub(super) fn write_short_row(slots: &mut [i32], len: usize) {
    let (valid, rest) = slots.split_at_mut(len);
    for (slot, index) in valid.iter_mut().zip(0..) {
        *slot = index;
    }
    rest.fill(-1);
}
