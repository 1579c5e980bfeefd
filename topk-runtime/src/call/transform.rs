//! The index transforms: checked per row before selection, applied where an index is written,
//! and inverted by the verifier to recover the position an output names.

use super::{IndexTransform, PageTable, RowWindow};
use crate::{Error, Result};

/// One row's transform, its arrays resolved and its range checked.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RowTransform<'a> {
    None,
    Offset(i64),
    /// The row's page-table entries and the page size.
    Paged {
        pages: &'a [i32],
        page_size: u32,
    },
}

impl<'a> IndexTransform<'a> {
    /// Each row's transform, after checking the arrays' shapes and that every index of each
    /// row's window transforms to a non-negative int32 (offsets) or has a page-table entry
    /// (pages; their values are checked when used).
    pub(crate) fn per_row(&self, windows: &[RowWindow]) -> Result<Vec<RowTransform<'a>>> {
        match *self {
            IndexTransform::None => Ok(vec![RowTransform::None; windows.len()]),
            IndexTransform::Offset(offsets) => offset_rows(offsets, windows),
            IndexTransform::Paged(table) => paged_rows(&table, None, windows),
            IndexTransform::PagedRows { table, rows } => paged_rows(&table, Some(rows), windows),
        }
    }
}

fn offset_rows<'a>(offsets: &[i32], windows: &[RowWindow]) -> Result<Vec<RowTransform<'a>>> {
    if offsets.len() != windows.len() {
        return Err(Error::Input(format!(
            "{} offsets given for {} rows: pass exactly one offset per row",
            offsets.len(),
            windows.len()
        )));
    }
    offsets
        .iter()
        .zip(windows)
        .enumerate()
        .map(|(row, (&offset, w))| {
            let offset = i64::from(offset);
            let first = offset + w.base as i64;
            let last = first + w.len as i64 - 1;
            if w.len > 0 && (first < 0 || last > i64::from(i32::MAX)) {
                return Err(Error::Input(format!(
                    "row {row}: offset {offset} turns its indices into {first}..={last}, which \
                     leave the non-negative int32 range (-1 marks padding); check the offsets"
                )));
            }
            Ok(RowTransform::Offset(offset))
        })
        .collect()
}

/// Each row's pages: table row `r`, or `map[r]` with a row map (which must name a row the table
/// holds, one entry per score row).
fn paged_rows<'a>(
    table: &PageTable<'a>,
    map: Option<&[i32]>,
    windows: &[RowWindow],
) -> Result<Vec<RowTransform<'a>>> {
    let rows = windows.len();
    if table.page_size == 0 {
        return Err(Error::Input(
            "page size 0: a page holds at least one position".into(),
        ));
    }
    if table.pitch != 0 && table.pitch < table.columns {
        return Err(Error::Input(format!(
            "page-table pitch {} is smaller than its {} columns: the pitch counts elements \
             between row starts (0 shares one row among all)",
            table.pitch, table.columns
        )));
    }
    if let Some(map) = map {
        return mapped_rows(table, map, windows);
    }
    let needed = match (rows, table.pitch) {
        (0, _) => Some(0),
        (_, 0) => Some(table.columns),
        (_, pitch) => (rows - 1)
            .checked_mul(pitch)
            .and_then(|n| n.checked_add(table.columns)),
    };
    if !matches!(needed, Some(n) if n <= table.data.len()) {
        return Err(Error::Input(format!(
            "the page table holds {} entries, but {rows} rows of {} columns at pitch {} need \
             more; pass one table row per score row (or pitch 0 for one shared row)",
            table.data.len(),
            table.columns,
            table.pitch
        )));
    }
    (0..rows)
        .map(|row| row_pages(table, row, row * table.pitch, &windows[row]))
        .collect()
}

/// [`paged_rows`] through a row map.
fn mapped_rows<'a>(
    table: &PageTable<'a>,
    map: &[i32],
    windows: &[RowWindow],
) -> Result<Vec<RowTransform<'a>>> {
    if map.len() != windows.len() {
        return Err(Error::Input(format!(
            "the page table's row map holds {} entries for {} rows: pass one table row per \
             score row",
            map.len(),
            windows.len()
        )));
    }
    if table.pitch < table.columns || table.pitch == 0 {
        return Err(Error::Input(format!(
            "a page table read through a row map needs a pitch of at least its {} columns, got \
             {}",
            table.columns, table.pitch
        )));
    }
    let table_rows = match table.data.len().checked_sub(table.columns) {
        Some(rest) => rest / table.pitch + 1,
        None => 0,
    };
    map.iter()
        .zip(windows)
        .enumerate()
        .map(|(row, (&entry, w))| match usize::try_from(entry) {
            Ok(t) if t < table_rows => row_pages(table, row, t * table.pitch, w),
            _ => Err(Error::Input(format!(
                "row {row}: the row map names table row {entry}, but the page table holds \
                 {table_rows} rows; map every score row to a table row"
            ))),
        })
        .collect()
}

/// Row `row`'s pages, `table.columns` entries from `at`, checked against its window.
fn row_pages<'a>(
    table: &PageTable<'a>,
    row: usize,
    at: usize,
    w: &RowWindow,
) -> Result<RowTransform<'a>> {
    let page_size = table.page_size as usize;
    let pages = &table.data[at..][..table.columns];
    if w.len > 0 && (w.written(w.len - 1)) / page_size >= table.columns {
        return Err(Error::Input(format!(
            "row {row}: its indices reach {} and need page {}, but the page table has {} \
             columns; give every valid position of a row a page",
            w.written(w.len - 1),
            w.written(w.len - 1) / page_size,
            table.columns
        )));
    }
    Ok(RowTransform::Paged {
        pages,
        page_size: table.page_size,
    })
}

impl RowTransform<'_> {
    /// The value written for index `t` (before the transform) of row `row`; a page-table entry
    /// that makes it negative or too large for int32 is an error naming the row and page.
    #[inline]
    pub fn apply(&self, t: usize, row: usize) -> Result<i32> {
        match *self {
            // Ranges were checked per row: these fit.
            RowTransform::None => Ok(t as i32),
            RowTransform::Offset(offset) => Ok((t as i64 + offset) as i32),
            RowTransform::Paged { pages, page_size } => {
                let p = page_size as usize;
                let page = pages[t / p];
                let v = i64::from(page) * p as i64 + (t % p) as i64;
                if page < 0 || v > i64::from(i32::MAX) {
                    return Err(Error::Input(format!(
                        "row {row}: page-table entry {} holds {page}, which makes index {t} into \
                         {v}, not a non-negative int32; the entries of used pages must be \
                         physical page numbers",
                        t / p
                    )));
                }
                Ok(v as i32)
            }
        }
    }
}

/// The inverse of one row's transform over its window, for the verifier.
#[derive(Clone, Debug)]
pub(crate) enum TransformInverse {
    /// Subtract this from a written value.
    Shift(i64),
    /// Physical page -> logical page, sorted by physical page.
    Pages {
        map: Vec<(i32, usize)>,
        page_size: u32,
    },
}

impl TransformInverse {
    /// The inverse of `t` over `window`; a page table that maps two pages of the window to one
    /// physical page is an error (no output could say which position it names).
    pub fn of(t: &RowTransform, window: &RowWindow, row: usize) -> Result<Self> {
        match *t {
            RowTransform::None => Ok(TransformInverse::Shift(0)),
            RowTransform::Offset(offset) => Ok(TransformInverse::Shift(offset)),
            RowTransform::Paged { pages, page_size } => {
                let p = page_size as usize;
                let used = match window.len {
                    0 => 0..0,
                    len => window.base / p..window.written(len - 1) / p + 1,
                };
                let mut map: Vec<(i32, usize)> = used.map(|l| (pages[l], l)).collect();
                map.sort_unstable();
                if let Some(w) = map.windows(2).find(|w| w[0].0 == w[1].0) {
                    return Err(Error::Input(format!(
                        "row {row}: the page table maps pages {} and {} to the same physical \
                         page {}; a row's pages must be distinct to tell which position an \
                         output names",
                        w[0].1, w[1].1, w[0].0
                    )));
                }
                Ok(TransformInverse::Pages { map, page_size })
            }
        }
    }

    /// The position inside `window` (relative to its start) written as `v`, if any is.
    pub fn position(&self, v: i32, window: &RowWindow) -> Option<usize> {
        let t = match self {
            TransformInverse::Shift(offset) => i64::from(v) - offset,
            TransformInverse::Pages { map, page_size } => {
                if v < 0 {
                    return None;
                }
                let p = i64::from(*page_size);
                let (phys, within) = (i64::from(v) / p, i64::from(v) % p);
                let page = i32::try_from(phys).ok()?;
                let at = map.binary_search_by_key(&page, |&(ph, _)| ph).ok()?;
                map[at].1 as i64 * p + within
            }
        };
        let i = t - window.base as i64;
        (0..window.len as i64).contains(&i).then_some(i as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(start: usize, len: usize, base: usize) -> RowWindow {
        RowWindow { start, len, base }
    }

    #[test]
    fn paged_indices_follow_the_page_table_and_invert() {
        // Page size 3 (not a power of two): positions 0..9 on physical pages 7, 2, 5.
        let data = [7, 2, 5, -1];
        let table = PageTable {
            data: &data,
            columns: 4,
            pitch: 0,
            page_size: 3,
        };
        let windows = [win(0, 9, 0), win(2, 5, 2)];
        let per_row = IndexTransform::Paged(table).per_row(&windows).unwrap();
        let written: Vec<i32> = (0..9).map(|t| per_row[0].apply(t, 0).unwrap()).collect();
        assert_eq!(written, vec![21, 22, 23, 6, 7, 8, 15, 16, 17]);
        for (row, w) in windows.iter().enumerate() {
            let inverse = TransformInverse::of(&per_row[row], w, row).unwrap();
            for i in 0..w.len {
                let v = per_row[row].apply(w.written(i), row).unwrap();
                assert_eq!(inverse.position(v, w), Some(i));
            }
            assert_eq!(inverse.position(-1, w), None);
            assert_eq!(inverse.position(9, w), None, "page 3 is no page of the row");
        }
        // Position 1 of row 1 is absolute 3 (page 1): 2 * 3 + 0.
        assert_eq!(per_row[1].apply(windows[1].written(1), 1).unwrap(), 6);
        // The -1 entry of page 3 is an error when used.
        let err = per_row[0].apply(9, 0).unwrap_err().to_string();
        assert!(err.contains("page-table entry 3 holds -1"), "{err}");
    }

    #[test]
    fn transforms_are_range_checked_per_row() {
        let windows = [win(0, 10, 0)];
        let err = |t: IndexTransform| t.per_row(&windows).unwrap_err().to_string();
        assert!(err(IndexTransform::Offset(&[i32::MAX - 5])).contains("row 0"));
        assert!(err(IndexTransform::Offset(&[-1])).contains("row 0"));
        assert!(err(IndexTransform::Offset(&[1, 2])).contains("one offset per row"));
        let short = PageTable {
            data: &[1, 2],
            columns: 2,
            pitch: 2,
            page_size: 4,
        };
        assert!(err(IndexTransform::Paged(short)).contains("need page 2"));
        let zero = PageTable {
            page_size: 0,
            ..short
        };
        assert!(err(IndexTransform::Paged(zero)).contains("page size 0"));
        let duplicate = [3, 3, 4];
        let t = RowTransform::Paged {
            pages: &duplicate,
            page_size: 4,
        };
        let e = TransformInverse::of(&t, &windows[0], 0).unwrap_err();
        assert!(e.to_string().contains("same physical page 3"), "{e}");
    }
}
