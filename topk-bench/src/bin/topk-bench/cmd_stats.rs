//! `topk-bench stats`: what generated score profiles look like to the selector.

use crate::args::{parse_k, parse_profile};
use crate::{report, CmdResult};
use clap::Args;
use std::process::ExitCode;
use topk::cli::CliError;
use topk_bench::profile_stats::{profile_stats, UNDERFILL_RHO, UNDERFILL_STRIDE};
use topk_runtime::data::Profile;

const EXAMPLES: &str = "\
Examples:
  topk-bench stats --profile iid --rows 512 --width 131072
  topk-bench stats --profile all --rows 256 --width 65536

Profiles: indexer, iid, all-equal, two-values, ties-at-k, sorted-asc, sorted-desc, periodic,
infinities, signed-zeros, subnormals, huge, tiny (as in `topk gen`), or all.";

/// Report what generated score profiles look like to the selector
///
/// Prints, per profile, the share of the exact top-K found in the first and last tenth of each
/// row, and how often a stride-128 view at 1.5 K (no rescue) underfills, over the terminal
/// causal window of --rows rows ending at --width (the matrices `topk gen` writes).
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct StatsArgs {
    /// Score profile (see the list below), or `all`
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
    /// The K the profiles are shaped around and the statistics measure
    #[arg(long, value_parser = parse_k, default_value = "2048")]
    k: usize,
}

pub fn run(a: StatsArgs) -> CmdResult {
    let profiles: Vec<Profile> = if a.profile == "all" {
        Profile::ALL.to_vec()
    } else {
        vec![parse_profile(&a.profile).map_err(|e| CliError::Usage(format!("{e}, or `all`")))?]
    };
    if a.width > i32::MAX as usize {
        return Err(CliError::Usage(format!(
            "--width {} is beyond the int32 index range; use at most {}",
            a.width,
            i32::MAX
        )));
    }
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
    for profile in profiles {
        let stats = profile_stats(profile, a.rows, a.width, a.seed, a.k as u32)?;
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
    Ok(ExitCode::SUCCESS)
}
