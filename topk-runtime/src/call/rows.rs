//! Each row's valid window from the call's row source, checked before any score is read.

use super::RowSource;
use crate::{Error, Result};
use topk_dsl::Rows;

/// Row `r`'s valid scores `[start, start + len)`, and what a selected position relative to
/// `start` becomes before the transform: `base + i` (`base` is `start` for
/// `rows=window(absolute)`, 0 otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowWindow {
    /// First valid position in the row.
    pub start: usize,
    /// Valid scores from `start`.
    pub len: usize,
    /// Added to a selected position relative to `start` to make the written index.
    pub base: usize,
}

impl RowWindow {
    /// The written index of relative position `i`, before the transform.
    #[inline(always)]
    pub fn written(&self, i: usize) -> usize {
        self.base + i
    }
}

/// The window of each of `rows` rows of `width` scores, as `form` (the Spec's `rows`) writes
/// their indices. Fails, naming the row, on an array of the wrong size or a window outside
/// `[0, width]`.
pub fn row_windows(
    form: Rows,
    source: &RowSource,
    rows: usize,
    width: usize,
) -> Result<Vec<RowWindow>> {
    let absolute = form == (Rows::Window { relative: false });
    match *source {
        RowSource::Lengths(lengths) => {
            check_count("lengths", lengths.len(), rows)?;
            lengths
                .iter()
                .enumerate()
                .map(|(row, &len)| window(row, 0, i64::from(len), width, false))
                .collect()
        }
        RowSource::Window { starts, ends } => {
            check_count("window starts", starts.len(), rows)?;
            check_count("window ends", ends.len(), rows)?;
            starts
                .iter()
                .zip(ends)
                .enumerate()
                .map(|(row, (&s, &e))| {
                    if s < 0 || s > e || e as usize > width {
                        return Err(Error::Input(format!(
                            "row {row} has the window [{s}, {e}), outside [0, {width}]: a window \
                             starts at 0 or later, ends at or after its start and at most at the \
                             matrix width"
                        )));
                    }
                    window(
                        row,
                        s as usize,
                        i64::from(e) - i64::from(s),
                        width,
                        absolute,
                    )
                })
                .collect()
        }
        RowSource::Decode { seq_lens, next_n } => decode_windows(seq_lens, next_n, rows, width),
    }
}

/// vLLM's speculative-decode rows: `next_n` rows per sequence, row `r` valid on
/// `[0, seq_lens[r / next_n] - next_n + 1 + r % next_n)`.
fn decode_windows(
    seq_lens: &[i32],
    next_n: u32,
    rows: usize,
    width: usize,
) -> Result<Vec<RowWindow>> {
    if next_n == 0 {
        return Err(Error::Input(
            "next_n is 0: each sequence has at least one decode row (1 without speculation)".into(),
        ));
    }
    let n = next_n as usize;
    if seq_lens.len().checked_mul(n) != Some(rows) {
        return Err(Error::Input(format!(
            "{} seq_lens at next_n = {next_n} describe {} rows, but the scores have {rows}: \
             decode rows come in groups of next_n per sequence, one seq_len per group",
            seq_lens.len(),
            seq_lens.len().saturating_mul(n)
        )));
    }
    (0..rows)
        .map(|row| {
            let seq_len = i64::from(seq_lens[row / n]);
            let len = seq_len - i64::from(next_n) + 1 + (row % n) as i64;
            window(row, 0, len, width, false)
        })
        .collect()
}

fn window(row: usize, start: usize, len: i64, width: usize, absolute: bool) -> Result<RowWindow> {
    if len < 0 || start as i64 + len > width as i64 {
        return Err(Error::Length {
            row,
            len: start as i64 + len,
            width,
        });
    }
    Ok(RowWindow {
        start,
        len: len as usize,
        base: if absolute { start } else { 0 },
    })
}

fn check_count(what: &str, got: usize, rows: usize) -> Result<()> {
    if got == rows {
        Ok(())
    } else {
        Err(Error::Input(format!(
            "{got} {what} given for {rows} rows: pass exactly one per row"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_rows_follow_the_vllm_convention() {
        // Two sequences of 10 and 7 tokens, 3 speculative rows each.
        let w = row_windows(
            Rows::Decode,
            &RowSource::Decode {
                seq_lens: &[10, 7],
                next_n: 3,
            },
            6,
            10,
        )
        .unwrap();
        let lens: Vec<usize> = w.iter().map(|w| w.len).collect();
        assert_eq!(lens, vec![8, 9, 10, 5, 6, 7]);
        assert!(w.iter().all(|w| w.start == 0 && w.base == 0));
    }

    #[test]
    fn windows_write_relative_or_absolute_indices() {
        let source = RowSource::Window {
            starts: &[0, 3, 7],
            ends: &[4, 9, 7],
        };
        for (relative, bases) in [(true, [0, 0, 0]), (false, [0, 3, 7])] {
            let w = row_windows(Rows::Window { relative }, &source, 3, 9).unwrap();
            assert_eq!(w.iter().map(|w| w.len).collect::<Vec<_>>(), vec![4, 6, 0]);
            assert_eq!(w.iter().map(|w| w.base).collect::<Vec<_>>(), bases);
            assert_eq!(w[1].written(2), bases[1] + 2);
        }
    }

    #[test]
    fn bad_windows_name_their_row() {
        let form = Rows::Window { relative: true };
        let bad = |starts: &[i32], ends: &[i32]| {
            row_windows(form, &RowSource::Window { starts, ends }, 2, 8)
                .unwrap_err()
                .to_string()
        };
        assert!(bad(&[0, 5], &[8, 4]).contains("row 1"));
        assert!(bad(&[0, -1], &[8, 4]).contains("row 1"));
        assert!(bad(&[0, 2], &[9, 4]).contains("row 0"));
        assert!(bad(&[0], &[8]).contains("one per row"));
        let decode = |seq_lens: &[i32], next_n| {
            row_windows(Rows::Decode, &RowSource::Decode { seq_lens, next_n }, 4, 8)
                .unwrap_err()
                .to_string()
        };
        assert!(decode(&[8, 8], 0).contains("next_n is 0"));
        assert!(decode(&[8, 8, 8], 2).contains("groups of next_n"));
        assert!(decode(&[8, 0], 2).contains("row 2"));
        assert!(decode(&[9, 8], 2).contains("row 1"));
    }
}
