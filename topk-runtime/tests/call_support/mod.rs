//! Shared helpers of the call-interface tests: adversarial rows of every dtype, each row
//! source and transform built for a matrix, and one call run through the selector, the oracle
//! and the verifier.
#![allow(dead_code)]

#[path = "../cpu_support/mod.rs"]
mod cpu_support;

pub use cpu_support::Rng;
use half::{bf16, f16};
use topk_dsl::{Centi, Io, Mapping, Order, Proposal, RowLocalVariant, Rows, Spec, Ties, Transform};
use topk_runtime::call::{CallIo, CallOut, IndexTransform, PageTable, RowSource};
use topk_runtime::{cpu, RouteStats, Score, ScoreRows};

/// A score type the tests can make from an FP32 value (rounded) or from random bits.
pub trait TestScore: Score {
    fn from_f32(x: f32) -> Self;
    fn random(rng: &mut Rng) -> Self;
}

impl TestScore for f32 {
    fn from_f32(x: f32) -> Self {
        x
    }
    fn random(rng: &mut Rng) -> Self {
        loop {
            let x = f32::from_bits(rng.next_u64() as u32);
            if !x.is_nan() {
                return x;
            }
        }
    }
}

macro_rules! half_test_score {
    ($t:ty) => {
        impl TestScore for $t {
            fn from_f32(x: f32) -> Self {
                <$t>::from_f32(x)
            }
            fn random(rng: &mut Rng) -> Self {
                loop {
                    let x = <$t>::from_bits(rng.next_u64() as u16);
                    if !x.is_nan() {
                        return x;
                    }
                }
            }
        }
    };
}
half_test_score!(f16);
half_test_score!(bf16);

/// Row families, from benign to adversarial.
#[derive(Clone, Copy, Debug)]
pub enum Family {
    Uniform,
    Gaussian,
    /// Five levels: ties everywhere, also at rank K.
    FewLevels,
    AllEqual,
    /// K/2 scores above a block of 2K equal scores: rank K falls inside the block.
    TiesAtRankK,
    /// +-inf, signed zeros and subnormals mixed with ordinary scores.
    Specials,
    /// Random bit patterns (every exponent, both signs), NaN excluded.
    RandomBits,
    /// Scores that collide once rounded to 16 bits (1 + tiny steps).
    NearOne,
}

pub const FAMILIES: [Family; 8] = [
    Family::Uniform,
    Family::Gaussian,
    Family::FewLevels,
    Family::AllEqual,
    Family::TiesAtRankK,
    Family::Specials,
    Family::RandomBits,
    Family::NearOne,
];

/// `len` scores of `family` for rank `k`.
pub fn row<T: TestScore>(family: Family, rng: &mut Rng, len: usize, k: usize) -> Vec<T> {
    let special = |rng: &mut Rng| match rng.below(8) {
        0 => f32::INFINITY,
        1 => f32::NEG_INFINITY,
        2 => 0.0,
        3 => -0.0,
        4 => f32::from_bits(1 + rng.below(1000) as u32),
        5 => -f32::from_bits(1 + rng.below(1000) as u32),
        6 => 6e-8 * rng.below(4) as f32,
        _ => rng.gaussian(),
    };
    let mut out: Vec<T> = match family {
        Family::Uniform => (0..len).map(|_| T::from_f32(rng.unit())).collect(),
        Family::Gaussian => (0..len)
            .map(|_| T::from_f32(rng.gaussian() * 10.0))
            .collect(),
        Family::FewLevels => (0..len)
            .map(|_| T::from_f32(rng.below(5) as f32 - 2.0))
            .collect(),
        Family::AllEqual => vec![T::from_f32(1.5); len],
        Family::TiesAtRankK => (0..len)
            .map(|i| match i {
                i if i < k / 2 => T::from_f32(3.0),
                i if i < k / 2 + 2 * k => T::from_f32(2.0),
                _ => T::from_f32(rng.unit()),
            })
            .collect(),
        Family::Specials => (0..len).map(|_| T::from_f32(special(rng))).collect(),
        Family::RandomBits => (0..len).map(|_| T::random(rng)).collect(),
        Family::NearOne => (0..len)
            .map(|_| T::from_f32(1.0 + rng.below(64) as f32 * 1e-4))
            .collect(),
    };
    // Shuffle so that blocks of equal scores are scattered over the row.
    for i in (1..out.len()).rev() {
        out.swap(i, rng.below(i + 1));
    }
    out
}

/// The arrays one row source and one transform need, owned.
pub struct CallInputs {
    pub lengths: Vec<i32>,
    pub starts: Vec<i32>,
    pub ends: Vec<i32>,
    pub seq_lens: Vec<i32>,
    pub next_n: u32,
    pub offsets: Vec<i32>,
    pub table: Vec<i32>,
    pub table_columns: usize,
    pub table_pitch: usize,
    pub page_size: u32,
    /// The table row of each score row with `transform=paged(rows)`: the rows in reverse (0
    /// for every row of a shared table).
    pub page_rows: Vec<i32>,
}

impl CallInputs {
    /// The `CallIo` of `spec`'s row source and transform over these arrays.
    pub fn io(&self, spec: &Spec) -> CallIo<'_> {
        let rows = match spec.io.rows {
            Rows::Lengths => RowSource::Lengths(&self.lengths),
            Rows::Window { .. } => RowSource::Window {
                starts: &self.starts,
                ends: &self.ends,
            },
            Rows::Decode => RowSource::Decode {
                seq_lens: &self.seq_lens,
                next_n: self.next_n,
            },
        };
        let transform = match spec.io.transform {
            Transform::None => IndexTransform::None,
            Transform::Offset => IndexTransform::Offset(&self.offsets),
            Transform::Paged => IndexTransform::Paged(PageTable {
                data: &self.table,
                columns: self.table_columns,
                pitch: self.table_pitch,
                page_size: self.page_size,
            }),
            Transform::PagedRows => IndexTransform::PagedRows {
                table: PageTable {
                    data: &self.table,
                    columns: self.table_columns,
                    pitch: self.table_columns,
                    page_size: self.page_size,
                },
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

/// Inputs for `rows` rows of `width` (a multiple of 3, for decode groups of 3): windows of the
/// given lengths placed at the row's start, end and middle in turn; decode lengths near
/// `lens`; random offsets; a page table of page size `page_size` mapping each row's pages to
/// distinct, shuffled physical pages (one table row per score row, or one shared row).
pub fn inputs(
    rng: &mut Rng,
    lens: &[usize],
    width: usize,
    page_size: u32,
    shared: bool,
) -> CallInputs {
    let rows = lens.len();
    let (mut starts, mut ends) = (Vec::new(), Vec::new());
    for (r, &len) in lens.iter().enumerate() {
        let start = match r % 3 {
            0 => 0,
            1 => width - len,
            _ => (width - len) / 2,
        };
        starts.push(start as i32);
        ends.push((start + len) as i32);
    }
    // Decode: row r = 3 g + j has L = s_g - 2 + j; s_g from the group's last length.
    let next_n = 3;
    let seq_lens: Vec<i32> = lens
        .chunks(3)
        .map(|g| (*g.last().unwrap()).clamp(2, width) as i32)
        .collect();
    let columns = width.div_ceil(page_size as usize);
    let table_rows = if shared { 1 } else { rows };
    let mut table = Vec::with_capacity(table_rows * columns);
    for _ in 0..table_rows {
        let mut pages: Vec<i32> = (0..columns as i32).map(|p| p * 7 + 3).collect();
        for i in (1..pages.len()).rev() {
            pages.swap(i, rng.below(i + 1));
        }
        table.extend(pages);
    }
    CallInputs {
        lengths: lens.iter().map(|&l| l as i32).collect(),
        starts,
        ends,
        seq_lens,
        next_n,
        offsets: (0..rows).map(|_| rng.below(1 << 20) as i32).collect(),
        table,
        table_columns: columns,
        table_pitch: if shared { 0 } else { columns },
        page_size,
        page_rows: (0..rows)
            .map(|r| if shared { 0 } else { (rows - 1 - r) as i32 })
            .collect(),
    }
}

/// Every combination of the interface fields, on top of `base`.
pub fn every_io(base: Spec) -> Vec<Spec> {
    let mut specs = Vec::new();
    for values in [false, true] {
        for order in [Order::Any, Order::Sorted] {
            for ties in [Ties::Any, Ties::Lowest] {
                for rows in [
                    Rows::Lengths,
                    Rows::Window { relative: true },
                    Rows::Window { relative: false },
                    Rows::Decode,
                ] {
                    for transform in [
                        Transform::None,
                        Transform::Offset,
                        Transform::Paged,
                        Transform::PagedRows,
                    ] {
                        let io = Io {
                            values,
                            order,
                            ties,
                            rows,
                            transform,
                            ..Io::DEFAULT
                        };
                        specs.push(Spec { io, ..base });
                    }
                }
            }
        }
    }
    specs
}

/// What one call wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct Output<T> {
    pub indices: Vec<i32>,
    pub values: Option<Vec<T>>,
}

/// Run `spec` on `scores` with `io` through the selector (or the oracle), K slots per row.
pub fn run<T: Score>(spec: &Spec, scores: &ScoreRows<T>, io: &CallIo, oracle: bool) -> Output<T> {
    let k = spec.k as usize;
    let mut indices = vec![i32::MIN; scores.rows * k];
    let mut values = spec
        .io
        .values
        .then(|| vec![T::NEG_INFINITY; scores.rows * k]);
    // The boundary itself is compared by the callers that ask for it.
    let mut boundary = spec.io.boundary.then(|| vec![0f32; scores.rows]);
    let out = CallOut {
        indices: &mut indices,
        pitch: k,
        values: values.as_deref_mut(),
        boundary: boundary.as_deref_mut(),
    };
    if oracle {
        cpu::oracle_with(spec, scores, io, out).unwrap();
    } else {
        cpu::select_with(spec, scores, io, out, false).unwrap();
    }
    Output { indices, values }
}

/// The K entries of row `r`, sorted (for comparing index sets).
pub fn row_set(indices: &[i32], k: usize, r: usize) -> Vec<i32> {
    let mut set = indices[r * k..][..k].to_vec();
    set.sort_unstable();
    set
}

/// A sampled proposal with view stride `stride` and margins `rho` and `rescue` (hundredths).
pub fn sampled(stride: u32, rho: u16, rescue: u16) -> Proposal {
    Proposal::Sampled {
        stride,
        rho: Centi(rho),
        rescue: Some(Centi(rescue)),
        exact_below: 0,
    }
}

/// One spec of every kernel family at rank k (sampled where the family samples).
pub fn families(k: u32) -> Vec<Spec> {
    let spec = |mapping, proposal, threads| Spec {
        k,
        mapping,
        proposal,
        threads,
        ..Spec::default()
    };
    let narrow = sampled(16, 150, 175);
    vec![
        spec(Mapping::Persistent, narrow, 512),
        spec(Mapping::Persistent, Proposal::Exact, 256),
        spec(
            Mapping::RowLocal(RowLocalVariant::Register),
            Proposal::Exact,
            1024,
        ),
        spec(
            Mapping::RowLocal(RowLocalVariant::Streaming),
            Proposal::Exact,
            1024,
        ),
        spec(Mapping::KvSplit { splits: 4 }, narrow, 512),
        spec(Mapping::Cluster { ctas: 8 }, Proposal::Exact, 1024),
        spec(Mapping::Cluster { ctas: 16 }, narrow, 1024),
        spec(Mapping::Cluster { ctas: 8 }, narrow, 512),
        spec(Mapping::Staged, narrow, 512),
    ]
}

/// The interface of the tests whose long rows refine by re-reading them: values, sorted output
/// and lowest ties on absolute windows with offsets.
pub const REREAD: Io = Io {
    values: true,
    order: Order::Sorted,
    ties: Ties::Lowest,
    rows: Rows::Window { relative: false },
    transform: Transform::Offset,
    ..Io::DEFAULT
};

/// Interfaces that together use every part on every family: each row source, each transform,
/// values, sorted order and lowest ties, alone and combined (SGLang's fused page-table call is
/// the third from last; the last reads the page table through a row map).
pub fn interfaces() -> Vec<Io> {
    let io = |values, order, ties, rows, transform| Io {
        values,
        order,
        ties,
        rows,
        transform,
        ..Io::DEFAULT
    };
    let (any, sorted) = (Order::Any, Order::Sorted);
    let (free, lowest) = (Ties::Any, Ties::Lowest);
    let relative = Rows::Window { relative: true };
    let absolute = Rows::Window { relative: false };
    vec![
        io(true, any, free, Rows::Lengths, Transform::None),
        io(false, sorted, free, Rows::Lengths, Transform::None),
        io(false, any, lowest, Rows::Lengths, Transform::None),
        io(true, sorted, lowest, Rows::Lengths, Transform::None),
        io(true, any, free, relative, Transform::Offset),
        io(false, sorted, lowest, absolute, Transform::Paged),
        io(true, any, free, Rows::Decode, Transform::Paged),
        io(true, sorted, lowest, relative, Transform::Paged),
        io(false, any, lowest, Rows::Decode, Transform::Offset),
        io(true, sorted, lowest, relative, Transform::PagedRows),
    ]
}

/// The bits of each value (16-bit types in the low half), for byte-exact comparison.
pub fn bits<T: TestScore>(values: &Option<Vec<T>>) -> Option<Vec<u32>> {
    values
        .as_ref()
        .map(|v| v.iter().map(|x| x.to_bits_u32()).collect())
}

/// The GPU's output against the CPU: exact by `verify_with`; the oracle's bytes (indices and
/// 16-bit value bits) when canonical; the oracle's index sets with lowest ties; the CPU
/// selector's routes and |Q0| totals.
pub fn check_against_cpu<T: TestScore>(
    spec: &Spec,
    scores: &ScoreRows<T>,
    io: &CallIo,
    got: &Output<T>,
    stats: &RouteStats,
    label: &str,
) {
    let k = spec.k as usize;
    let report = cpu::verify_with(spec, scores, io, &got.indices, k, got.values.as_deref())
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(report.is_exact(), "{label}: {report}");
    let want = run(spec, scores, io, true);
    if spec.io.canonical_bytes() {
        assert_eq!(
            got.indices, want.indices,
            "{label}: indices differ from the oracle's"
        );
        assert_eq!(
            bits(&got.values),
            bits(&want.values),
            "{label}: values differ from the oracle's"
        );
    } else if spec.io.ties == Ties::Lowest {
        for r in 0..scores.rows {
            assert_eq!(
                row_set(&got.indices, k, r),
                row_set(&want.indices, k, r),
                "{label}, row {r}: the lowest-index set differs from the oracle's"
            );
        }
    }
    let mut out = vec![0; scores.rows * k];
    let mut cpu_values = spec
        .io
        .values
        .then(|| vec![T::from_f32(0.0); scores.rows * k]);
    let mut cpu_boundary = spec.io.boundary.then(|| vec![0f32; scores.rows]);
    let call = CallOut {
        indices: &mut out,
        pitch: k,
        values: cpu_values.as_deref_mut(),
        boundary: cpu_boundary.as_deref_mut(),
    };
    let cpu_stats = cpu::select_with(spec, scores, io, call, true).unwrap();
    assert_eq!(
        stats.per_row, cpu_stats.per_row,
        "{label}: routes differ from the CPU's"
    );
    if spec.mapping != Mapping::Staged {
        assert_eq!(
            stats.candidates, cpu_stats.candidates,
            "{label}: |Q0| totals differ"
        );
    }
}

/// The families the sanitizer workloads run (`TOPK_SANITIZE_MAPS`, comma-separated
/// `persistent`, `rowlocal`, `kvsplit`, `cluster`, `staged`; all when unset).
pub fn sanitize_maps() -> String {
    std::env::var("TOPK_SANITIZE_MAPS")
        .unwrap_or_else(|_| "persistent,rowlocal,kvsplit,cluster,staged".into())
}

/// Whether `maps` (as [`sanitize_maps`] gives it) names the family of `spec`.
pub fn sanitize_wants(maps: &str, spec: &Spec) -> bool {
    let name = match spec.mapping {
        Mapping::Persistent => "persistent",
        Mapping::RowLocal(_) => "rowlocal",
        Mapping::KvSplit { .. } => "kvsplit",
        Mapping::Cluster { .. } => "cluster",
        Mapping::Staged => "staged",
    };
    maps.split(',').any(|m| m.trim() == name)
}
