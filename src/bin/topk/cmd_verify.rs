//! `topk verify`: check an index file against the exact Top-K contract.

use crate::args::{parse_k, SpecChoice};
use crate::call_args::{self, OutputArgs, RowArgs};
use crate::call_inputs::{self, CallFiles};
use crate::cmd_select::named_dtype;
use crate::{inputs, progress, report, select_call, CmdResult, EXIT_FAILED_CHECK};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use topk::cli::CliError;
use topk_dsl::Dtype;

const EXAMPLES: &str = "\
Examples:
  topk verify --scores s.npy --lengths l.npy --indices i.npy --k 2048
  topk select --scores s.npy --k 64 --out i.npy && topk verify --scores s.npy --indices i.npy --k 64
  topk verify --scores s.safetensors --starts ks.npy --ends ke.npy --relative-to-start \
      --page-table pt.npy --page-size 64 --indices slots.npy --values v.npy --sorted --deterministic --k 2048

With the interface flags of `topk select` (windows, decode rows, --offsets, --page-table), each
index is mapped back through the transform to a position of its row's window first (one that
no position maps to is a violation). --values checks the values bit for bit (-inf beside -1),
--sorted the descending order, --deterministic that the lowest indices won the ties at rank K
(and, with --sorted, ascending indices among equal values), --boundary that each row's value
is its K-th largest score.";

/// Check Top-K indices against the scores they were selected from
///
/// For a row of length L > K: K distinct indices in [0, L), and no unselected score greater
/// than the smallest selected one (eq. 30 of the paper; any order, any tie-breaking). For
/// L <= K: every index 0..L in any order, then -1 in the remaining slots. Exits with 0 when
/// every row satisfies the contract, 1 when some row does not (the first few are printed), and
/// 2 when the inputs cannot be checked.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct VerifyArgs {
    /// Score matrix: float32, float16 or bfloat16, 2-D [rows, width], C order (.npy or
    /// .safetensors)
    #[arg(long, value_name = "FILE")]
    scores: PathBuf,
    /// Tensor to read from a .safetensors score file [default: its only tensor, or `scores`]
    #[arg(long, value_name = "NAME")]
    tensor: Option<String>,
    #[command(flatten)]
    rows: RowArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// Values to check beside the indices: [rows, K] in the scores' dtype
    #[arg(long, value_name = "FILE")]
    values: Option<PathBuf>,
    /// Boundaries to check (what `topk select --boundary-out` writes): float32 [rows], each
    /// row's K-th largest score, NaN for a row of L <= K
    #[arg(long, value_name = "FILE")]
    boundary: Option<PathBuf>,
    /// Names the scores' dtype where the file cannot (`dtype=bf16` for a .npy of uint16
    /// bfloat16 bit patterns); only `dtype` matters here
    #[arg(long, value_name = "TEXT")]
    spec: Option<String>,
    /// Index matrix to check: int32 (or int64), 2-D [rows, K]
    #[arg(long, value_name = "FILE")]
    indices: PathBuf,
    /// The K the indices were selected with
    #[arg(long, value_parser = parse_k)]
    k: usize,
}

pub fn run(a: VerifyArgs) -> CmdResult {
    let indices = topk::io::read_indices(&a.indices, None).map_err(CliError::input("--indices"))?;
    let io = call_args::interface(
        &a.rows,
        &a.output,
        a.values.is_some(),
        topk_dsl::Prior::None,
        a.boundary.is_some(),
    );
    let choice = SpecChoice {
        spec: a.spec.clone(),
        preset: None,
    };
    let file = call_inputs::open_scores(&a.scores, a.tensor.as_deref(), named_dtype(&choice)?)?;
    check_shape(&a, indices.rows, indices.k, file.rows)?;
    if file.dtype != Dtype::F32 || !io.is_default() {
        let spec = call_args::call_spec(&choice, a.k, topk_dsl::Spec::default, file.dtype, io)?;
        let shape = (file.rows, file.width);
        let files = CallFiles::read(&a.rows, &a.output, file.rows, file.width)?;
        let scores = file.read()?;
        let bar = progress::spinner("verifying");
        let checked = select_call::Checked {
            indices: &indices.data,
            values: a.values.as_deref(),
            boundary: a.boundary.as_deref(),
        };
        let verified = select_call::verify(&spec, scores, shape, &files, checked, &a.scores);
        bar.finish_and_clear();
        return conclude(verified, &a);
    }
    let problem = inputs::load(&a.scores, a.tensor.as_deref(), a.rows.lengths.as_deref())?;
    let bar = progress::spinner("verifying");
    let verified = topk_runtime::cpu::verify(&problem.matrix(), a.k, &indices.data, a.k);
    bar.finish_and_clear();
    conclude(verified.map_err(inputs::locate_in(&a.scores)), &a)
}

/// The index file has one row per score row and K slots.
fn check_shape(a: &VerifyArgs, rows: usize, k: usize, score_rows: usize) -> Result<(), CliError> {
    if rows != score_rows {
        return Err(CliError::Usage(format!(
            "--indices: `{}` has {} rows but the scores have {}; pass the indices selected from these scores",
            a.indices.display(),
            rows,
            score_rows
        )));
    }
    if k != a.k {
        return Err(CliError::Usage(format!(
            "--indices: `{}` has {} slots per row but --k is {}; pass the K the indices were selected with",
            a.indices.display(),
            k,
            a.k
        )));
    }
    Ok(())
}

/// Print the verdict; exit 0 when exact, 1 when not.
fn conclude(
    verified: Result<topk_runtime::cpu::VerifyReport, CliError>,
    a: &VerifyArgs,
) -> CmdResult {
    let verdict = verified?;
    if verdict.is_exact() {
        report::line(format_args!(
            "exact: all {} rows satisfy the Top-K contract at k={}",
            verdict.rows_checked, a.k
        ));
        Ok(ExitCode::SUCCESS)
    } else {
        report::line(format_args!("NOT EXACT: {verdict}"));
        Ok(ExitCode::from(EXIT_FAILED_CHECK))
    }
}
