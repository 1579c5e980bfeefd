//! `topk-bench trace`: a row's prior against its view on a synthetic decode trace.

use crate::args::parse_k;
use crate::{report, CmdResult};
use clap::Args;
use std::process::ExitCode;
use topk::cli::CliError;
use topk_bench::prior_trace::run_trace;
use topk_dsl::{Prior, Spec};
use topk_runtime::data::DecodeTrace;

const EXAMPLES: &str = "\
Examples:
  topk-bench trace
  topk-bench trace --rows 8 --start 65536 --steps 16 --drift 0.005,0.02,0.05 \\
      --priors none,0/0,1/4,2/8,4/16

Each step every sequence grows by one position and its query drifts by --drift (see
topk_runtime::data::DecodeTrace); a prior setting is fed its own previous step's boundaries.";

/// Measure a row's prior against its view on a synthetic decode trace (CPU backend)
///
/// For each drift and prior setting, prints the rows of the steps after the first that
/// certified at the prior's cutoff or band, those that started again from the view, the mean
/// candidates |Q0| a row refined and the CPU time per step; every output is verified. The routes
/// and candidates are the ones the GPU kernels take (the CPU backend is their reference, route
/// for route); the times are this machine's.
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct TraceArgs {
    /// Sequences (rows per step)
    #[arg(long, default_value_t = 8)]
    rows: usize,
    /// Length of the first sequence at step 0; sequence b starts at start - b * start / (2 rows)
    #[arg(long, default_value_t = 131_072)]
    start: usize,
    /// Decode steps
    #[arg(long, default_value_t = 12)]
    steps: usize,
    /// Query drifts per step, comma-separated
    #[arg(long, default_value = "0.005,0.02,0.05", value_delimiter = ',')]
    drift: Vec<f32>,
    /// Prior settings, comma-separated: none (the view alone) or P/R
    #[arg(long, default_value = "none,0/0,1/4,2/8,4/16", value_delimiter = ',')]
    priors: Vec<Prior>,
    /// Entries of the key and query vectors
    #[arg(long, default_value_t = 16)]
    dims: usize,
    /// Rank K
    #[arg(long, value_parser = parse_k, default_value = "2048")]
    k: usize,
    /// The selector's spec besides K and the prior [default: the persistent pool's]
    #[arg(long, value_name = "TEXT")]
    spec: Option<String>,
    /// Seed of the trace
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn run(a: TraceArgs) -> CmdResult {
    if a.rows == 0 || a.steps < 2 || a.start <= a.k {
        return Err(CliError::Usage(format!(
            "a trace needs --rows >= 1, --steps >= 2 and --start > K = {} (got {}, {}, {})",
            a.k, a.rows, a.steps, a.start
        )));
    }
    let mut base = match &a.spec {
        Some(text) => Spec::parse(text)?,
        None => Spec::default(),
    };
    base.k = a.k as u32;
    base.validate()?;
    let start_lens: Vec<usize> = (0..a.rows)
        .map(|b| (a.start - b * a.start / (2 * a.rows)).max(a.k + 1))
        .collect();
    report::line(format_args!(
        "decode trace: {} rows of {}..{} scores, {} steps, {} dims, K = {}, {}",
        a.rows,
        start_lens.last().unwrap_or(&0),
        a.start,
        a.steps,
        a.dims,
        a.k,
        base
    ));
    report::line(format_args!(
        "| drift | prior | rows | at prior | in band | from view | mean Q0 | ms per step |"
    ));
    report::line(format_args!("|--:|---|--:|--:|--:|--:|--:|--:|"));
    for &drift in &a.drift {
        let trace = DecodeTrace {
            start_lens: start_lens.clone(),
            dims: a.dims,
            drift,
            seed: a.seed,
        };
        let summaries = run_trace(&trace, a.steps, &base, &a.priors)?;
        for (prior, s) in a.priors.iter().zip(summaries) {
            report::line(format_args!(
                "| {drift} | {prior} | {} | {} | {} | {} | {:.0} | {:.2} |",
                s.rows,
                s.prior_primary,
                s.prior_rescue,
                s.fallback,
                s.candidates as f64 / s.rows.max(1) as f64,
                s.elapsed.as_secs_f64() * 1e3 / (a.steps - 1) as f64
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}
