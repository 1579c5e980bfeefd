//! The Spec value and its parts. Fields are public so `topk_kernel!` can build a `const` Spec;
//! [`Spec::validate`] is the gate every consumer (planner, codegen, CPU backend) goes through.

use crate::Io;

/// Largest rank a Spec may request.
pub const MAX_K: u32 = 16384;

/// Score element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    F32,
    /// IEEE binary16; refinement resolves its 16-bit ordered key.
    F16,
    /// bfloat16 (the top half of an FP32); refinement resolves its 16-bit ordered key.
    Bf16,
}

/// Row-local exact variants (paper §5.5): rows held in registers, or streamed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowLocalVariant {
    Register,
    Streaming,
}

/// Who owns a row's work on the GPU (paper §4.5, §5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mapping {
    /// One CTA per row, a persistent worker pool claiming rows from a device counter.
    Persistent,
    /// `splits` CTAs scan disjoint segments of one row; the last to arrive finishes it.
    KvSplit { splits: u8 },
    /// One wide CTA per row, exact coarse boundary, no sampling.
    RowLocal(RowLocalVariant),
    /// A thread-block cluster of `ctas` CTAs per row with a distributed-shared-memory histogram.
    Cluster { ctas: u8 },
    /// A row's positions split over many CTAs and the selection run as a chain of stage kernels
    /// (view histogram, proposal, certification, radix digits, output), each over the whole
    /// batch: the context-parallel stages on one device. For a few very long rows, which the
    /// one-CTA-per-row pool leaves most SMs idle on.
    Staged,
}

/// A ratio in hundredths (150 == 1.5), so a Spec stays `Eq + Hash` and const-constructible.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Centi(pub u16);

impl Centi {
    pub const fn from_hundredths(h: u16) -> Self {
        Centi(h)
    }
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 100.0
    }
}

/// How Phase 1 proposes the coarse boundary (paper §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proposal {
    /// A row-phased stride view targets complete-row rank `rho * k`; with `rescue`, a nested
    /// secondary boundary at `rescue * k` from the same histogram (band rescue, eq. 18-19).
    /// Rows shorter than `exact_below` scores skip the view and take the exact coarse boundary
    /// (0: every row with a usable view samples); persistent mapping only.
    Sampled {
        stride: u32,
        rho: Centi,
        rescue: Option<Centi>,
        exact_below: u32,
    },
    /// The exact coarse boundary from a histogram of the whole row (eq. 20).
    Exact,
}

/// Widths of the refinement digits, most significant first; they sum to the width of the
/// score's ordered key (32 for FP32, 16 for FP16 and bfloat16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Digits {
    pub widths: [u8; 4],
    pub len: u8,
}

impl Digits {
    pub const fn new3(a: u8, b: u8, c: u8) -> Self {
        Digits {
            widths: [a, b, c, 0],
            len: 3,
        }
    }
    pub const fn new2(a: u8, b: u8) -> Self {
        Digits {
            widths: [a, b, 0, 0],
            len: 2,
        }
    }

    /// The digits a spec of `dtype` takes when it names none: the paper's 11+11+10 for FP32;
    /// for a 16-bit key, the coarse width then the rest, so that the first digit of a 16-bit
    /// key is its coarse bin (the coarse key of a 16-bit score is the top of its own key).
    pub const fn default_for(dtype: Dtype, coarse_bits: u8) -> Self {
        match dtype {
            Dtype::F32 => Digits::new3(11, 11, 10),
            Dtype::F16 | Dtype::Bf16 if coarse_bits < 16 => {
                Digits::new2(coarse_bits, 16 - coarse_bits)
            }
            Dtype::F16 | Dtype::Bf16 => Digits::new2(8, 8),
        }
    }

    /// The widths in use (at most four, even for a hand-built value with a larger `len`;
    /// `Spec::validate` reports such a value).
    pub fn as_slice(&self) -> &[u8] {
        &self.widths[..(self.len as usize).min(self.widths.len())]
    }
}

/// One specialized selector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Spec {
    pub k: u32,
    pub dtype: Dtype,
    pub mapping: Mapping,
    pub proposal: Proposal,
    /// Bits of the 16-bit descending coarse key used as coarse bins (11 -> 2048 bins): the
    /// FP16 projection of an FP32 or FP16 score, the top half of a bfloat16 score's own key.
    pub coarse_bits: u8,
    /// Refinement digit widths over the score's ordered key, summing to its width
    /// ([`Dtype::key_bits`]: 32 for FP32, 16 for FP16 and bfloat16).
    pub digits: Digits,
    pub threads: u32,
    /// Contiguous scores per group of the sampled view: 1 is the paper's stride view (one score
    /// every `stride` positions); `r` in {2, 4, 8} reads `r` contiguous scores every `r * stride`
    /// positions (the same sample count from `1/r` of the 32-byte sectors).
    pub view_run: u8,
    /// Microseconds by which the second half of a persistent pool starts late (0: none), so that
    /// the two CTAs of an SM do not propose and refine their rows at the same time while DRAM
    /// idles; on calls of at least three live rows per worker (with fewer the pool starts
    /// together). Only `map=persistent`.
    pub stagger_us: u16,
    /// A wider margin for the last rows of a persistent call: with `tail_rows > 0`, on a call of
    /// m live rows with `tail_rows < m <= TAIL_MAX_WAVES * tail_rows`, rows `m - tail_rows ..`
    /// (the last claimed: about one per worker when `tail_rows` is the pool size) propose at
    /// `tail_rho` instead of `rho`. A band rescue, a second pass over the row, ends such a
    /// call late when it falls on one of them; the wider margin makes it rarer there. Only
    /// `map=persistent` with a sampled proposal. Without a rescue the tail's rank is the deepest
    /// a view must hold, on every row (`Spec::min_view_len`).
    pub tail_rows: u32,
    /// The tail rows' margin (`tail=RHO@ROWS`): above `rho`, below `rescue`; 0 when
    /// `tail_rows` is.
    pub tail_rho: Centi,
    /// Batches of a row stream whose lines each warp sends to L2 ahead of its loads (0: none,
    /// at most 2): while a batch is processed, the next one is already on its way from DRAM.
    /// Only `map=persistent`.
    pub prefetch: u8,
    /// The optional inputs and outputs of a call: values, order, ties, row windows, index
    /// transforms ([`Io`]; the defaults are the plain operator).
    pub io: Io,
}

/// Calls of more than this many pool sizes of rows take no tail margin (`Spec::tail_rows`): a
/// rescue's extra pass is a smaller part of a longer call, and the margin costs every tail row.
pub const TAIL_MAX_WAVES: u32 = 4;

impl Default for Spec {
    /// The paper's wide-row persistent policy at K = 2048.
    fn default() -> Self {
        Spec {
            k: 2048,
            dtype: Dtype::F32,
            mapping: Mapping::Persistent,
            proposal: Proposal::Sampled {
                stride: 128,
                rho: Centi(150),
                rescue: Some(Centi(175)),
                exact_below: 0,
            },
            coarse_bits: 11,
            digits: Digits::new3(11, 11, 10),
            threads: 512,
            view_run: 1,
            stagger_us: 0,
            tail_rows: 0,
            tail_rho: Centi(0),
            prefetch: 0,
            io: Io::DEFAULT,
        }
    }
}
