//! The flags of a call's interface, shared by `select` and `verify`: where each row's valid
//! scores lie, what is written for a selected index, order and ties; and the spec they make
//! with the score file's dtype.

use crate::args::{BackendChoice, SpecChoice};
use clap::Args;
use std::path::PathBuf;
use topk::backend::{self, Backend, Resolved};
use topk::cli::CliError;
use topk_dsl::{Digits, Dtype, Io, Order, Prior, Rows, Spec, Ties, Transform};

/// Where each row's valid scores lie.
#[derive(Args, Clone, Debug, Default)]
pub struct RowArgs {
    /// Valid length of each row: int32 or int64, 1-D, one per row [default: full width]
    #[arg(long, value_name = "FILE", conflicts_with_all = ["starts", "seq_lens"])]
    pub lengths: Option<PathBuf>,
    /// Window start of each row (int32 or int64, 1-D, one per row): row r's valid scores are
    /// [start, end) of the row (vLLM's prefill layout); with --ends
    #[arg(
        long,
        value_name = "FILE",
        requires = "ends",
        conflicts_with = "seq_lens"
    )]
    pub starts: Option<PathBuf>,
    /// Window end (exclusive) of each row, with --starts
    #[arg(long, value_name = "FILE", requires = "starts")]
    pub ends: Option<PathBuf>,
    /// Write window indices relative to the window's start (as vLLM, SGLang and FlashInfer
    /// do) instead of as positions in the whole row; the transforms then take them so
    #[arg(long, requires = "starts")]
    pub relative_to_start: bool,
    /// Speculative-decode rows (vLLM's convention): one sequence length per group of --next-n
    /// rows (int32 or int64, 1-D); row r is valid on
    /// [0, seq_lens[r / next_n] - next_n + 1 + r % next_n)
    #[arg(long, value_name = "FILE")]
    pub seq_lens: Option<PathBuf>,
    /// Rows per sequence with --seq-lens: 1 + the speculative tokens [default: 1]
    #[arg(long, value_name = "N", requires = "seq_lens")]
    pub next_n: Option<u32>,
}

/// What a call writes besides the indices' positions.
#[derive(Args, Clone, Debug, Default)]
pub struct OutputArgs {
    /// Write index i of row r as i + offsets[r] (FlashInfer's ragged transform): int32 or
    /// int64, 1-D, one per row; -1 padding stays -1
    #[arg(long, value_name = "FILE", conflicts_with = "page_table")]
    pub offsets: Option<PathBuf>,
    /// Write index i of row r as table[r][i / P] * P + i % P (SGLang's and FlashInfer's
    /// page-table transform, P = --page-size): int32 or int64, 2-D [rows, pages], or [1, pages]
    /// for one table every row shares; -1 padding stays -1
    #[arg(long, value_name = "FILE")]
    pub page_table: Option<PathBuf>,
    /// Positions per page of --page-table, any size from 1 [default: 1, a token-to-slot table]
    #[arg(long, value_name = "P", requires = "page_table")]
    pub page_size: Option<u32>,
    /// Row r reads --page-table row rows[r] (FlashInfer's row_to_batch): int32 or int64, 1-D,
    /// one per row; the table then holds any number of rows
    #[arg(long, value_name = "FILE", requires = "page_table")]
    pub page_rows: Option<PathBuf>,
    /// Order each row's entries descending by value (equal values by ascending index with
    /// --deterministic); short rows list their L indices so, then -1
    #[arg(long)]
    pub sorted: bool,
    /// Among the scores equal to the K-th largest, select the lowest indices: each row's index
    /// set is a function of the scores alone, the same on every run and backend (with --sorted,
    /// the output bytes are)
    #[arg(long)]
    pub deterministic: bool,
}

/// A decode step's prior boundary and the boundary it writes for the next step.
#[derive(Args, Clone, Debug, Default)]
pub struct PriorArgs {
    /// Each row's prior boundary: float32, 1-D, one per row (NaN: none), typically the
    /// previous decode step's --boundary-out. A row first admits the scores a few coarse bins
    /// below it and certifies them in one pass; the output never depends on the prior
    #[arg(long, value_name = "FILE")]
    pub prior: Option<PathBuf>,
    /// Coarse bins below a row's prior that its cutoff (P) and its rescue band (R >= P) reach
    /// [default: 2/8]
    #[arg(long, value_name = "P/R", requires = "prior", value_parser = parse_prior_bins)]
    pub prior_bins: Option<Prior>,
    /// Also write each row's K-th largest score (float32, 1-D; NaN for a row of L <= K) to
    /// this .npy: the next decode step's --prior
    #[arg(long, value_name = "FILE")]
    pub boundary_out: Option<PathBuf>,
}

fn parse_prior_bins(text: &str) -> Result<Prior, String> {
    match text.parse::<Prior>() {
        Ok(Prior::None) => Err("give P/R, e.g. 2/8".into()),
        Ok(bins) => Ok(bins),
        Err(e) => Err(e.to_string()),
    }
}

impl PriorArgs {
    /// The spec's prior: `--prior-bins`, or [`Prior::SUGGESTED`] with `--prior`.
    pub fn prior(&self) -> Prior {
        match (&self.prior, self.prior_bins) {
            (None, _) => Prior::None,
            (Some(_), Some(bins)) => bins,
            (Some(_), None) => Prior::SUGGESTED,
        }
    }
}

/// The interface fields the flags ask for; `values` when a values file is read or written,
/// `boundary` when a boundary file is.
pub fn interface(
    rows: &RowArgs,
    out: &OutputArgs,
    values: bool,
    prior: Prior,
    boundary: bool,
) -> Io {
    Io {
        values,
        order: if out.sorted {
            Order::Sorted
        } else {
            Order::Any
        },
        ties: if out.deterministic {
            Ties::Lowest
        } else {
            Ties::Any
        },
        rows: if rows.starts.is_some() {
            Rows::Window {
                relative: rows.relative_to_start,
            }
        } else if rows.seq_lens.is_some() {
            Rows::Decode
        } else {
            Rows::Lengths
        },
        transform: if out.offsets.is_some() {
            Transform::Offset
        } else if out.page_rows.is_some() {
            Transform::PagedRows
        } else if out.page_table.is_some() {
            Transform::Paged
        } else {
            Transform::None
        },
        prior,
        boundary,
    }
}

/// The interface keys of the text form, which the flags set instead.
const INTERFACE_KEYS: [&str; 7] = [
    "values",
    "order",
    "ties",
    "rows",
    "transform",
    "prior",
    "boundary",
];

/// Whether `--spec` names an interface field (which the flags set instead).
pub fn names_interface(choice: &SpecChoice) -> bool {
    INTERFACE_KEYS.iter().any(|key| choice.names(key))
}

/// The spec of a call: `choice` (else `default`) at rank `k`, for scores of `dtype`, with the
/// interface `io`. A `dtype` named in `--spec` must be the file's; digits the spec does not
/// name follow the dtype (`Digits::default_for`); the interface comes from the flags only.
pub fn call_spec(
    choice: &SpecChoice,
    k: usize,
    default: impl FnOnce() -> Spec,
    dtype: Dtype,
    io: Io,
) -> Result<Spec, CliError> {
    if let Some(key) = INTERFACE_KEYS.iter().find(|key| choice.names(key)) {
        return Err(CliError::Usage(format!(
            "--spec names `{key}`: give the call's interface with the flags (--values-out, \
             --sorted, --deterministic, --starts/--ends, --seq-lens, --offsets, --page-table, \
             --prior, --boundary-out); --spec sets the selector"
        )));
    }
    let mut spec = choice.resolve_unvalidated(k)?.unwrap_or_else(default);
    spec.k = u32::try_from(k).unwrap_or(u32::MAX);
    if choice.names("dtype") && spec.dtype != dtype {
        return Err(CliError::Usage(format!(
            "--spec says dtype={} but the scores are {dtype}; drop dtype from --spec (the file \
             decides) or pass scores of that dtype",
            spec.dtype
        )));
    }
    if spec.dtype != dtype && !choice.names("digits") {
        spec.digits = Digits::default_for(dtype, spec.coarse_bits);
    }
    spec.dtype = dtype;
    spec.io = io;
    spec.validate()?;
    Ok(spec)
}

/// The backend for `spec` under `choice`: a spec the GPU path refuses
/// (`topk_runtime::cuda::gpu_refusal`) takes the CPU under `auto`, with the reason, and is
/// refused under `cuda`.
pub fn backend_for(spec: Option<&Spec>, choice: BackendChoice) -> Result<Resolved, CliError> {
    match (spec.and_then(topk::runtime::cuda::gpu_refusal), choice) {
        (Some(why), BackendChoice::Cuda) => Err(CliError::Usage(format!("--backend cuda: {why}"))),
        (Some(why), BackendChoice::Auto) => Ok(Resolved {
            backend: Backend::Cpu,
            fallback_reason: Some(why),
        }),
        _ => Ok(backend::resolve(choice.as_str())?),
    }
}
