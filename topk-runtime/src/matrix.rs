/// A borrowed row-major score matrix with a row pitch (elements) of at least `width`,
/// and one valid length per row.
#[derive(Clone, Copy, Debug)]
pub struct ScoreMatrix<'a> {
    /// The scores: row `r` starts at `data[r * pitch]`.
    pub data: &'a [f32],
    /// Rows of the matrix.
    pub rows: usize,
    /// Allocated row width `N`.
    pub width: usize,
    /// Elements between the starts of consecutive rows, `>= width`.
    pub pitch: usize,
    /// Valid length of each row, `0..=width`; `lengths.len() == rows`.
    pub lengths: &'a [i32],
}

impl<'a> ScoreMatrix<'a> {
    /// The valid prefix of row `r` (lengths must have been checked).
    pub fn row(&self, r: usize) -> &'a [f32] {
        let len = self.lengths[r].max(0) as usize;
        &self.data[r * self.pitch..r * self.pitch + len]
    }
}
