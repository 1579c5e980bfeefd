//! `topk demo`: the whole story in one command.

use crate::args::{parse_k, parse_profile, BackendChoice};
use crate::inputs::{self, LengthsKind, Problem};
use crate::{progress, report, CmdResult, EXIT_FAILED_CHECK};
use clap::Args;
use std::process::ExitCode;
use topk::backend::{self, Backend, Repetitions};
use topk::io::Scores;

const EXAMPLES: &str = "\
Examples:
  topk demo
  topk demo --backend cpu --rows 256 --width 131072
  topk demo --profile iid --k 1024";

/// Generate indexer-like scores, select their Top-K exactly, and compare with a baseline
///
/// Generates a matrix shaped like one call of a sparse-attention indexer (a terminal causal
/// window: row r has length width - rows + r + 1), selects the K largest scores of every row on
/// the best available backend, verifies the result against the exact contract, and times it
/// beside the textbook CPU selector (`select_nth_unstable_by` on each row, rows in parallel).
#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct DemoArgs {
    /// Rows of the generated matrix
    #[arg(long, default_value_t = 64)]
    rows: usize,
    /// Width of the generated matrix
    #[arg(long, default_value_t = 262_144)]
    width: usize,
    /// Indices selected per row
    #[arg(long, value_parser = parse_k, default_value = "2048")]
    k: usize,
    /// Score profile (as in `topk gen`)
    #[arg(long, default_value = "indexer")]
    profile: String,
    /// Seed of the generator
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Where to run the selector
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// Timed runs of each selector (the median is reported)
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    iters: u64,
}

pub fn run(a: DemoArgs) -> CmdResult {
    let profile = parse_profile(&a.profile)?;
    let chosen = backend::resolve(a.backend.as_str())?;
    let lengths = LengthsKind::Causal.lengths(a.rows, a.width)?;
    let data = inputs::generate(profile, a.seed, a.k, &lengths, a.width)?;
    let problem = Problem {
        scores: Scores {
            rows: a.rows,
            width: a.width,
            data,
        },
        lengths,
    };
    let valid = problem.valid_bytes();
    report::line(format_args!(
        "scores    {profile} profile, {} rows x {} (causal lengths {}..={}), {} of valid scores",
        a.rows,
        a.width,
        problem.lengths.first().copied().unwrap_or(0),
        problem.lengths.last().copied().unwrap_or(0),
        report::size(valid)
    ));
    let reason = chosen
        .fallback_reason
        .as_ref()
        .map_or(String::new(), |why| format!(" ({why})"));
    report::line(format_args!("backend   {}{reason}", chosen.backend));

    let reps = Repetitions {
        warmup: 1,
        iters: a.iters as usize,
    };
    let matrix = problem.matrix();
    let bar = progress::spinner("selecting");
    let ours = backend::benchmark(chosen.backend, None, a.k, &matrix, reps);
    bar.finish_and_clear();
    let ours = ours?;
    let bar = progress::spinner("baseline");
    let baseline = backend::benchmark_baseline(&matrix, a.k, reps);
    bar.finish_and_clear();
    let (base_timing, base_verdict) = baseline?;

    let verdict = |exact: bool| if exact { "exact" } else { "NOT EXACT" };
    report::line(format_args!(
        "selector  {:>10}  {:>7.2} GB/s  {}  [{}]",
        report::millis(ours.timing.median),
        report::gbps(valid, ours.timing.median),
        verdict(ours.verdict.exact),
        ours.spec
    ));
    report::line(format_args!("          routes: {}", ours.stats));
    report::line(format_args!(
        "baseline  {:>10}  {:>7.2} GB/s  {}  [select_nth_unstable_by per row, cpu]",
        report::millis(base_timing.median),
        report::gbps(valid, base_timing.median),
        verdict(base_verdict.exact)
    ));
    let speedup = base_timing.median.as_secs_f64() / ours.timing.median.as_secs_f64();
    report::line(format_args!("speedup   {speedup:.1}x"));
    let how = match chosen.backend {
        Backend::Cuda => "the selector as CUDA graph replays (scores already on the GPU)",
        Backend::Cpu => "the selector by wall clock",
    };
    report::line(format_args!(
        "timing    median of {} runs each: {how}; the baseline by wall clock on {} CPU threads",
        a.iters,
        rayon::current_num_threads()
    ));
    if !ours.verdict.exact {
        for v in &ours.verdict.violations {
            eprintln!("  {v}");
        }
        return Ok(ExitCode::from(EXIT_FAILED_CHECK));
    }
    Ok(ExitCode::SUCCESS)
}
