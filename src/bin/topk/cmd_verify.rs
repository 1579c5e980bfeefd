//! `topk verify`: check an index file against the exact Top-K contract.

use crate::args::parse_k;
use crate::error::CliError;
use crate::{inputs, progress, report, CmdResult, EXIT_FAILED_CHECK};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLES: &str = "\
Examples:
  topk verify --scores s.npy --lengths l.npy --indices i.npy --k 2048
  topk select --scores s.npy --k 64 --out i.npy && topk verify --scores s.npy --indices i.npy --k 64";

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
    /// Score matrix: float32, 2-D [rows, width], C order (.npy or .safetensors)
    #[arg(long, value_name = "FILE")]
    scores: PathBuf,
    /// Tensor to read from a .safetensors score file [default: its only tensor, or `scores`]
    #[arg(long, value_name = "NAME")]
    tensor: Option<String>,
    /// Valid length of each row: int32 or int64, 1-D, one per row [default: full width]
    #[arg(long, value_name = "FILE")]
    lengths: Option<PathBuf>,
    /// Index matrix to check: int32 (or int64), 2-D [rows, K]
    #[arg(long, value_name = "FILE")]
    indices: PathBuf,
    /// The K the indices were selected with
    #[arg(long, value_parser = parse_k)]
    k: usize,
}

pub fn run(a: VerifyArgs) -> CmdResult {
    let indices = topk::io::read_indices(&a.indices, None).map_err(CliError::input("--indices"))?;
    let problem = inputs::load(&a.scores, a.tensor.as_deref(), a.lengths.as_deref())?;
    if indices.rows != problem.scores.rows {
        return Err(CliError::Usage(format!(
            "--indices: `{}` has {} rows but the scores have {}; pass the indices selected from these scores",
            a.indices.display(),
            indices.rows,
            problem.scores.rows
        )));
    }
    if indices.k != a.k {
        return Err(CliError::Usage(format!(
            "--indices: `{}` has {} slots per row but --k is {}; pass the K the indices were selected with",
            a.indices.display(),
            indices.k,
            a.k
        )));
    }
    let bar = progress::spinner("verifying");
    let verified = topk_runtime::cpu::verify(&problem.matrix(), a.k, &indices.data, a.k);
    bar.finish_and_clear();
    let verdict = verified.map_err(inputs::locate_in(&a.scores))?;
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
