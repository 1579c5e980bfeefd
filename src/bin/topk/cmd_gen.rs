//! `topk gen`: generated score matrices, written as `.npy` files.

use crate::args::{parse_k, parse_profile};
use crate::inputs::{self, LengthsKind};
use crate::{progress, report, CmdResult};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use topk::cli::CliError;

const EXAMPLES: &str = "\
Examples:
  topk gen --profile indexer --rows 64 --width 262144 --out s.npy --lengths-out l.npy
  topk gen --profile ties-at-k --rows 8 --width 100000 --k 64 --lengths full --out s.npy --lengths-out l.npy

Profiles: indexer, iid, all-equal, two-values, ties-at-k, sorted-asc, sorted-desc, periodic,
infinities, signed-zeros, subnormals, huge, tiny.
What a profile looks like to the selector: `topk-bench stats` (the benchmark harness).";

/// Generate a score matrix and its lengths
///
/// Every score is a function of (seed, row, column, length, K) alone, so the same arguments
/// always give the same matrix, on the CPU and on the GPU. Scores past a row's length are
/// -inf. `indexer` has the sink and recency structure of sparse-attention indexer scores,
/// `iid` is exchangeable, and the other profiles are adversarial (ties, infinities, signed
/// zeros, subnormals, values FP16 cannot tell apart, ...).
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct GenArgs {
    /// Score profile (see the list below)
    #[arg(long, value_name = "NAME")]
    profile: String,
    /// Number of rows
    #[arg(long)]
    rows: usize,
    /// Allocated row width (columns)
    #[arg(long)]
    width: usize,
    /// Seed of the counter-based generator
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The K profiles are shaped around (e.g. ties at rank K)
    #[arg(long, value_parser = parse_k, default_value = "2048")]
    k: usize,
    /// Where to write the float32 [rows, width] scores (.npy)
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Where to write the int32 [rows] valid lengths (.npy)
    #[arg(long, value_name = "FILE")]
    lengths_out: PathBuf,
    /// Valid lengths of the rows
    #[arg(long, value_enum, default_value_t = LengthsKind::Causal)]
    lengths: LengthsKind,
}

pub fn run(a: GenArgs) -> CmdResult {
    let profile = parse_profile(&a.profile)?;
    let lengths = a.lengths.lengths(a.rows, a.width)?;
    let (out, lengths_out) = (&a.out, &a.lengths_out);
    inputs::check_output_path("--out", out)?;
    inputs::check_output_path("--lengths-out", lengths_out)?;
    if out == lengths_out {
        return Err(CliError::Usage(
            "--out and --lengths-out name the same file; give two different paths".into(),
        ));
    }
    let data = inputs::generate(profile, a.seed, a.k, &lengths, a.width)?;
    let bar = progress::spinner("writing");
    let written = topk::io::npy::write(out, &[a.rows, a.width], &data).and_then(|()| {
        topk::io::npy::write(lengths_out, &[a.rows], &lengths).inspect_err(|_| {
            // Leave no scores without their lengths.
            let _ = std::fs::remove_file(out);
        })
    });
    bar.finish_and_clear();
    written.map_err(CliError::Output)?;
    report::line(format_args!(
        "generated {profile} scores, {} rows x {} ({} lengths, seed {}) -> {}, {}",
        a.rows,
        a.width,
        match a.lengths {
            LengthsKind::Causal => "causal",
            LengthsKind::Full => "full",
        },
        a.seed,
        out.display(),
        lengths_out.display()
    ));
    Ok(ExitCode::SUCCESS)
}
