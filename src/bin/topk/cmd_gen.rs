//! `topk gen`: generated score matrices, and what they look like to the selector.

use crate::args::{parse_k, parse_profile};
use crate::error::CliError;
use crate::inputs::{self, LengthsKind};
use crate::{progress, report, CmdResult};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use topk_runtime::data::stats::{profile_stats, UNDERFILL_RHO, UNDERFILL_STRIDE};
use topk_runtime::data::Profile;

const EXAMPLES: &str = "\
Examples:
  topk gen --profile indexer --rows 64 --width 262144 --out s.npy --lengths-out l.npy
  topk gen --profile ties-at-k --rows 8 --width 100000 --k 64 --lengths full --out s.npy --lengths-out l.npy
  topk gen --profile iid --rows 512 --width 131072 --stats
  topk gen --profile all --rows 256 --width 65536 --stats

Profiles: indexer, iid, all-equal, two-values, ties-at-k, sorted-asc, sorted-desc, periodic,
infinities, signed-zeros, subnormals, huge, tiny.";

/// Generate a score matrix and its lengths, or report a profile's statistics
///
/// Every score is a function of (seed, row, column, length, K) alone, so the same arguments
/// always give the same matrix, on the CPU and on the GPU. Scores past a row's length are
/// -inf. `indexer` has the sink and recency structure of sparse-attention indexer scores,
/// `iid` is exchangeable, and the other profiles are adversarial (ties, infinities, signed
/// zeros, subnormals, values FP16 cannot tell apart, ...).
///
/// --stats prints, per profile, the share of the exact top-K found in the first and last tenth
/// of each row, and how often a stride-128 view at 1.5 K (no rescue) underfills, over the
/// terminal causal window of --rows rows ending at --width.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct GenArgs {
    /// Score profile (see the list below), or `all` with --stats
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
    /// The K profiles are shaped around (e.g. ties at rank K) and --stats measures
    #[arg(long, value_parser = parse_k, default_value = "2048")]
    k: usize,
    /// Where to write the float32 [rows, width] scores (.npy)
    #[arg(long, value_name = "FILE", requires = "lengths_out")]
    out: Option<PathBuf>,
    /// Where to write the int32 [rows] valid lengths (.npy)
    #[arg(long, value_name = "FILE", requires = "out")]
    lengths_out: Option<PathBuf>,
    /// Valid lengths of the rows
    #[arg(long, value_enum, default_value_t = LengthsKind::Causal)]
    lengths: LengthsKind,
    /// Print the endpoint share of the exact top-K and the primary underfill rate
    #[arg(long)]
    stats: bool,
}

pub fn run(a: GenArgs) -> CmdResult {
    let profiles: Vec<Profile> = if a.profile == "all" {
        if a.out.is_some() {
            return Err(CliError::Usage(
                "--profile all only works with --stats and no --out: one file holds one profile"
                    .into(),
            ));
        }
        Profile::ALL.to_vec()
    } else {
        vec![parse_profile(&a.profile)
            .map_err(|e| CliError::Usage(format!("{e}, or `all` with --stats")))?]
    };
    if a.out.is_none() && !a.stats {
        return Err(CliError::Usage(
            "nothing to do: give --out and --lengths-out to write the matrix, or --stats".into(),
        ));
    }
    let lengths = a.lengths.lengths(a.rows, a.width)?;
    if let (Some(out), Some(lengths_out)) = (&a.out, &a.lengths_out) {
        inputs::check_output_path("--out", out)?;
        inputs::check_output_path("--lengths-out", lengths_out)?;
        if out == lengths_out {
            return Err(CliError::Usage(
                "--out and --lengths-out name the same file; give two different paths".into(),
            ));
        }
        let data = inputs::generate(profiles[0], a.seed, a.k, &lengths, a.width)?;
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
            "generated {} scores, {} rows x {} ({} lengths, seed {}) -> {}, {}",
            profiles[0],
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
    }
    if a.stats {
        print_stats(&profiles, &a)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_stats(profiles: &[Profile], a: &GenArgs) -> Result<(), CliError> {
    report::line(format_args!(
        "statistics over the causal window of {} rows ending at {}, k={}, seed {}:",
        a.rows, a.width, a.k, a.seed
    ));
    report::line(format_args!(
        "{:<13} {:>6} {:>22} {:>26}",
        "profile",
        "rows",
        "top-K in end deciles",
        format!(
            "underfill s={} rho={}",
            UNDERFILL_STRIDE,
            UNDERFILL_RHO.as_f64()
        )
    ));
    for &profile in profiles {
        let bar = progress::spinner(&format!("measuring {profile}"));
        let stats = profile_stats(profile, a.rows, a.width, a.seed, a.k as u32);
        bar.finish_and_clear();
        let stats = stats?;
        if stats.rows == 0 {
            report::line(format_args!(
                "{:<13} {:>6} {:>22} {:>26}",
                profile.name(),
                0,
                "n/a",
                "n/a (no row longer than K)"
            ));
        } else {
            report::line(format_args!(
                "{:<13} {:>6} {:>21.1}% {:>25.2}%",
                profile.name(),
                stats.rows,
                stats.endpoint_share * 100.0,
                stats.underfill_rate * 100.0
            ));
        }
    }
    Ok(())
}
