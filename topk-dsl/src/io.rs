//! What a selector reads besides the scores and writes besides the indices: the compile-time
//! half of a call's interface.
//!
//! # Compile-time here, run-time in the call
//!
//! A [`Spec`] fixes the *form* of a call: the score dtype ([`Spec::dtype`]), whether values
//! come back ([`Io::values`]), their order ([`Io::order`]), how ties at rank K are broken
//! ([`Io::ties`]), where a row's valid scores lie ([`Io::rows`]) and how indices are turned into
//! what the caller stores ([`Io::transform`]). Each of them changes the generated kernel's
//! parameter list or the code of its commit and output paths (a second output stream, a sort
//! stage, tie resolution over index digits, a gather through a page table), and each changes
//! what the output bytes mean, so the canonical text of a spec says exactly what its selector
//! writes and a kernel is compiled for exactly that.
//!
//! The *data* of a call is run-time: the arrays (lengths, window starts and ends, `seq_lens`,
//! offsets, the page table) and the scalars `next_n`, `page_size` and the page table's pitch
//! and width (`topk_runtime::call::CallIo` on the host, device buffers and scalars on the GPU).
//! They vary per call or per deployment without changing code: a run-time page size costs one
//! integer division per written index (K per row, nothing beside the row's reads), and one
//! kernel then serves every page size and speculative depth. Under CUDA-graph capture they
//! are device inputs like the lengths, so one captured graph serves every call.

use crate::{Dtype, Mapping, Spec};

/// The optional inputs and outputs of a selector (the defaults are the plain operator:
/// lengths in, unordered indices out, ties broken any way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Io {
    /// Also write the selected scores, `values[M, K]` in the score dtype, at the index output's
    /// pitch; slots holding `-1` get `-inf`.
    pub values: bool,
    /// Order of the K entries of an output row.
    pub order: Order,
    /// Which scores equal to the K-th largest are selected.
    pub ties: Ties,
    /// Where each row's valid scores lie.
    pub rows: Rows,
    /// What is written for a selected position.
    pub transform: Transform,
    /// Whether a row may propose from a boundary the caller passes (a decode step's prior).
    pub prior: Prior,
    /// Also write each row's boundary, `boundary[M]` (FP32): the K-th largest score of the
    /// row's window, NaN for a row of `L <= K`; the next decode step's prior.
    pub boundary: bool,
}

impl Io {
    /// Lengths in, unordered indices out, ties broken any way, no values.
    pub const DEFAULT: Io = Io {
        values: false,
        order: Order::Any,
        ties: Ties::Any,
        rows: Rows::Lengths,
        transform: Transform::None,
        prior: Prior::None,
        boundary: false,
    };

    /// Whether this is [`Io::DEFAULT`], the interface every kernel family generates.
    pub fn is_default(&self) -> bool {
        *self == Io::DEFAULT
    }

    /// Whether the output bytes are a function of the input alone: ties by lowest index and
    /// sorted order. With `ties=lowest` alone the index *set* of a row is canonical, its order
    /// is not.
    pub fn canonical_bytes(&self) -> bool {
        self.ties == Ties::Lowest && self.order == Order::Sorted
    }
}

impl Default for Io {
    fn default() -> Self {
        Io::DEFAULT
    }
}

/// Order of the entries of an output row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// Any order (the fastest: indices are written as they are committed).
    Any,
    /// Descending by value; equal values in ascending index order when `ties=lowest`, else in
    /// any order. Short rows (`L <= K`) list their L indices in that order, then `-1`.
    Sorted,
}

/// Which of the scores equal to the K-th largest are selected when not all of them fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ties {
    /// Any of them (whichever the kernel commits first).
    Any,
    /// The lowest indices win: the selected set is a function of the input alone, identical
    /// across runs, kernel families, the GPU and the CPU backend. Equal means equal as numbers
    /// (`-0.0 == +0.0`); "lowest" compares positions inside the row.
    Lowest,
}

/// Where the valid scores of row `r` lie.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rows {
    /// `[0, len[r])` (the plain operator).
    Lengths,
    /// `[start[r], end[r])` of the row (vLLM's prefill layout); indices are written relative
    /// to `start[r]` (`relative`, as vLLM, SGLang and FlashInfer do) or as positions in the
    /// whole row (absolute).
    Window { relative: bool },
    /// Speculative decode (vLLM's `top_k_per_row_decode`): `next_n` consecutive rows per
    /// sequence, row `r` valid on `[0, seq_lens[r / next_n] - next_n + 1 + r % next_n)`.
    Decode,
}

/// Where a row's proposal may start before its view: a per-row prior boundary, such as the
/// K-th largest score of the same row at the previous decode step (what `boundary=true`
/// writes). Exactness never depends on it: the prior's cutoff is certified by the same one-pass
/// count as a sampled one, and a row whose prior underfills or admits too many scores takes the
/// spec's own proposal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prior {
    /// No prior: every row proposes as the spec's `propose` says.
    None,
    /// The call passes `prior[M]` (FP32; NaN: none for that row). A row of `L > K` with a prior
    /// `p` admits the scores whose coarse bin is at most `primary` bins below the bin of `p`;
    /// when fewer than K are admitted, the band down to `rescue` bins below (`rescue >=
    /// primary`; equal: no band); when that still underfills, or the admitted scores exceed
    /// [`Spec::prior_cap`], the row starts again from the spec's proposal.
    Bins { primary: u8, rescue: u8 },
}

impl Prior {
    /// The margins a caller with no measurement of its own starts from: the cutoff two coarse
    /// bins below the prior's, the rescue band down to eight (`bench/RESULTS.md`, "A row's
    /// prior on a decode trace").
    pub const SUGGESTED: Prior = Prior::Bins {
        primary: 2,
        rescue: 8,
    };
}

/// What is written for a selected position `i` of row `r` (the index as [`Rows`] makes it,
/// relative or absolute); `-1` padding is written as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transform {
    /// `i` itself.
    None,
    /// `i + offset[r]` (FlashInfer's ragged transform).
    Offset,
    /// `table[r][i / P] * P + i % P` for a run-time page size P (SGLang's and FlashInfer's
    /// page-table transform; P = 1 is a token-to-slot table).
    Paged,
    /// [`Transform::Paged`] through a row map: row `r` reads table row `map[r]` (FlashInfer's
    /// `row_to_batch`: a prefill chunk's query rows share their request's table row), so the
    /// table keeps one row per request instead of one per score row.
    PagedRows,
}

impl Dtype {
    /// Bits of the ordered key refinement resolves: the element's own width.
    pub const fn key_bits(self) -> u32 {
        match self {
            Dtype::F32 => 32,
            Dtype::F16 | Dtype::Bf16 => 16,
        }
    }

    /// Bytes per score.
    pub const fn size(self) -> usize {
        self.key_bits() as usize / 8
    }
}

impl Spec {
    /// What in this spec the GPU kernels do not generate yet, as a sentence that says where it
    /// runs instead; `None` when every part is generated. Code generation refuses such a spec
    /// (so nothing on the GPU is silently wrong) and the CLI's `--backend auto` takes the CPU.
    /// Every dtype (FP32, FP16, bfloat16) and every part of the call interface is generated on
    /// every kernel family; a row's prior and boundary output (`prior`, `boundary`) on the
    /// families that finish a row in one CTA or one cluster (persistent, row-local, cluster),
    /// which take the decode steps.
    pub fn gpu_unsupported(&self) -> Option<String> {
        let per_row_family = matches!(
            self.mapping,
            Mapping::Persistent | Mapping::RowLocal(_) | Mapping::Cluster { .. }
        );
        let needs = match (self.io.prior, self.io.boundary) {
            (Prior::Bins { .. }, _) => "prior=P/R",
            (_, true) => "boundary=true",
            _ => return None,
        };
        (!per_row_family).then(|| {
            format!(
                "{needs} is generated for the kernels that finish a row in one CTA or one cluster \
                 (map=persistent, map=rowlocal(..), map=cluster(..)), not for map={}; use one \
                 of them, or the CPU backend",
                self.mapping
            )
        })
    }
}
