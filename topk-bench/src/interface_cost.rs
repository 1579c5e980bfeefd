//! What the call interface (`docs/interface.md`) costs on the GPU: the variants the
//! `interface-cost` program times against the plain call, the call arrays each one needs, and
//! the check of a variant's output against the CPU verifier. The GPU driver is the program
//! (`src/bin/interface-cost.rs`); everything here runs on the host.

use topk_dsl::{Io, Order, Rows, Spec, Ties, Transform};
use topk_runtime::call::{CallIo, IndexTransform, PageTable, RowSource};
use topk_runtime::cpu::verify_with;
use topk_runtime::ScoreRows;

/// Default shapes `MxN`: the corners of the operator matrix the interface goals are stated on.
pub const DEFAULT_SHAPES: &str = "512x131072,2048x262144,512x1048576,8192x131072";

/// Positions per page of the paged variants (SGLang's and FlashInfer's tables use 64 as well
/// as 1; 64 keeps the verifier's per-row inverse small).
pub const PAGE_SIZE: u32 = 64;

/// The window start of [`Variant::WindowShifted`]: three scores in, so that the rows' vector
/// loads start unaligned and peel a scalar head.
pub const SHIFTED_START: i32 = 3;

/// One interface variant, timed against the same spec with the plain interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `values=true`.
    Values,
    /// `rows=window(relative)` with starts 0 and ends the lengths: the same rows as the plain call.
    Window,
    /// `rows=window(relative)` with starts [`SHIFTED_START`] and ends the lengths.
    WindowShifted,
    /// `transform=offset` with small offsets (`r % 7`).
    Offset,
    /// `transform=paged`, page size [`PAGE_SIZE`], a table per row that rotates the row's pages
    /// by the row number.
    Paged,
    /// `transform=paged(rows)`: [`Variant::Paged`]'s tables for every fourth row, score row `r`
    /// reading table row `r / 4` (a prefill chunk's query rows sharing a request's table).
    PagedRows,
    /// `order=sorted`.
    Sorted,
    /// `ties=lowest`.
    Lowest,
    /// `order=sorted,ties=lowest`: canonical output bytes.
    SortedLowest,
    /// SGLang's indexer call: `transform=paged` (the table of [`Variant::Paged`]) and
    /// `values=true`.
    SglangLike,
}

impl Variant {
    /// Every variant, in the order they are reported.
    pub const ALL: [Variant; 10] = [
        Variant::Values,
        Variant::Window,
        Variant::WindowShifted,
        Variant::Offset,
        Variant::Paged,
        Variant::PagedRows,
        Variant::Sorted,
        Variant::Lowest,
        Variant::SortedLowest,
        Variant::SglangLike,
    ];

    /// The variant's name on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Values => "values",
            Variant::Window => "window",
            Variant::WindowShifted => "window-shifted",
            Variant::Offset => "offset",
            Variant::Paged => "paged",
            Variant::PagedRows => "paged-rows",
            Variant::Sorted => "sorted",
            Variant::Lowest => "lowest",
            Variant::SortedLowest => "sorted-lowest",
            Variant::SglangLike => "sglang",
        }
    }

    /// The variant called `name`, or an error listing the names.
    pub fn parse(name: &str) -> Result<Variant, String> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == name.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
                format!(
                    "unknown interface variant `{}`; the variants are {}",
                    name.trim(),
                    names.join(", ")
                )
            })
    }

    /// A comma-separated list of variants (`all` for every one).
    pub fn parse_list(text: &str) -> Result<Vec<Variant>, String> {
        if text.trim() == "all" {
            return Ok(Variant::ALL.to_vec());
        }
        text.split(',').map(Variant::parse).collect()
    }

    /// The interface this variant adds to the plain one.
    pub fn io(self) -> Io {
        let mut io = Io::DEFAULT;
        match self {
            Variant::Values => io.values = true,
            Variant::Window | Variant::WindowShifted => io.rows = Rows::Window { relative: true },
            Variant::Offset => io.transform = Transform::Offset,
            Variant::Paged => io.transform = Transform::Paged,
            Variant::PagedRows => io.transform = Transform::PagedRows,
            Variant::Sorted => io.order = Order::Sorted,
            Variant::Lowest => io.ties = Ties::Lowest,
            Variant::SortedLowest => {
                io.order = Order::Sorted;
                io.ties = Ties::Lowest;
            }
            Variant::SglangLike => {
                io.transform = Transform::Paged;
                io.values = true;
            }
        }
        io
    }

    /// `plain` (a spec with the plain interface) with this variant's interface.
    pub fn spec(self, plain: Spec) -> Spec {
        Spec {
            io: self.io(),
            ..plain
        }
    }
}

/// The host arrays of one variant's call over rows of the given lengths in a matrix of
/// `width` columns; the arrays a variant does not use are empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallArrays {
    /// Window starts (`rows=window`).
    pub starts: Vec<i32>,
    /// Window ends (`rows=window`).
    pub ends: Vec<i32>,
    /// Offsets (`transform=offset`).
    pub offsets: Vec<i32>,
    /// The page table, `rows x page_columns` (`transform=paged`).
    pub page_table: Vec<i32>,
    /// Pages per table row: enough for the whole width.
    pub page_columns: usize,
    /// The table row of each score row (`transform=paged(rows)`).
    pub page_rows: Vec<i32>,
}

impl CallArrays {
    /// The arrays `variant` needs for rows of `lengths` in a matrix of `width` columns.
    pub fn of(variant: Variant, lengths: &[i32], width: usize) -> CallArrays {
        let io = variant.io();
        let mut a = CallArrays::default();
        if let Rows::Window { .. } = io.rows {
            let start = if variant == Variant::WindowShifted {
                SHIFTED_START
            } else {
                0
            };
            a.starts = lengths.iter().map(|&l| start.min(l)).collect();
            a.ends = lengths.to_vec();
        }
        match io.transform {
            Transform::None => {}
            Transform::Offset => a.offsets = (0..lengths.len()).map(|r| (r % 7) as i32).collect(),
            Transform::Paged | Transform::PagedRows => {
                let columns = width.div_ceil(PAGE_SIZE as usize);
                a.page_columns = columns;
                let table_rows = match io.transform {
                    Transform::PagedRows => lengths.len().div_ceil(4),
                    _ => lengths.len(),
                };
                // Table row t's page p lives on physical page (p + t) mod columns: distinct per
                // row (invertible), different across rows, every index below the width.
                a.page_table = (0..table_rows)
                    .flat_map(|t| (0..columns).map(move |p| ((p + t) % columns) as i32))
                    .collect();
                if io.transform == Transform::PagedRows {
                    a.page_rows = (0..lengths.len()).map(|r| (r / 4) as i32).collect();
                }
            }
        }
        a
    }

    fn page_table(&self) -> PageTable<'_> {
        PageTable {
            data: &self.page_table,
            columns: self.page_columns,
            pitch: self.page_columns,
            page_size: PAGE_SIZE,
        }
    }

    /// The host description of the call, for the CPU verifier.
    pub fn call_io<'a>(&'a self, variant: Variant, lengths: &'a [i32]) -> CallIo<'a> {
        let io = variant.io();
        let rows = match io.rows {
            Rows::Window { .. } => RowSource::Window {
                starts: &self.starts,
                ends: &self.ends,
            },
            _ => RowSource::Lengths(lengths),
        };
        let transform = match io.transform {
            Transform::None => IndexTransform::None,
            Transform::Offset => IndexTransform::Offset(&self.offsets),
            Transform::Paged => IndexTransform::Paged(self.page_table()),
            Transform::PagedRows => IndexTransform::PagedRows {
                table: self.page_table(),
                rows: &self.page_rows,
            },
        };
        CallIo {
            rows,
            transform,
            prior: None,
        }
    }
}

/// One output of a variant's call as copied back: indices, and values when the variant
/// writes them, both at `pitch`.
#[derive(Clone, Copy, Debug)]
pub struct Output<'a> {
    /// The indices, `rows x pitch`.
    pub indices: &'a [i32],
    /// The values at the same pitch (`values=true`), else `None`.
    pub values: Option<&'a [f32]>,
    /// Row pitch of both, at least K.
    pub pitch: usize,
}

/// Checks `out`, an output of `variant`'s call of `spec` on `scores` (rows of `lengths`, the
/// arrays `arrays`), with the CPU verifier: `Ok` when every row meets the contract and the
/// interface, else a message with the first bad rows.
pub fn check_output(
    spec: &Spec,
    variant: Variant,
    scores: &ScoreRows<f32>,
    lengths: &[i32],
    arrays: &CallArrays,
    out: Output,
) -> Result<(), String> {
    let io = arrays.call_io(variant, lengths);
    let report = verify_with(spec, scores, &io, out.indices, out.pitch, out.values)
        .map_err(|e| format!("{}: the verifier refused the output: {e}", variant.name()))?;
    if report.is_exact() {
        Ok(())
    } else {
        Err(format!("{}: {report}", variant.name()))
    }
}

/// Median of `xs` (the upper one of an even count); NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}
