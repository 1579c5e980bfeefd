//! `topk-bench`: the benchmark harness's command line (timed and verified runs, profile
//! statistics, charts of the GPU results).

mod args;
mod cmd_bench;
mod cmd_plot;
mod cmd_stats;
mod cmd_trace;
mod plot;
mod report;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
pub use topk::cli::{CliError, EXIT_FAILED_CHECK};

/// The benchmark harness of the topk selector.
///
/// `bench` times the selection alone on one input and verifies what was timed, `stats` measures
/// what a data profile looks like to the selector, `trace` measures a row's prior against its
/// view on a synthetic decode trace (CPU backend), and `plot` draws the GPU results of
/// bench/results as SVG charts. The GPU programs behind bench/RESULTS.md are the binaries
/// `operator-matrix` and `context-parallel` of this package.
#[derive(Parser)]
#[command(name = "topk-bench", version, propagate_version = true)]
#[command(after_help = "Every subcommand has its own --help with examples.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Bench(cmd_bench::BenchArgs),
    Stats(cmd_stats::StatsArgs),
    Trace(cmd_trace::TraceArgs),
    Plot(cmd_plot::PlotArgs),
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Bench(a) => cmd_bench::run(a),
        Command::Stats(a) => cmd_stats::run(a),
        Command::Trace(a) => cmd_trace::run(a),
        Command::Plot(a) => cmd_plot::run(a),
    };
    topk::cli::exit_with(result)
}

/// What a subcommand returns: its exit status, or the error that stopped it.
pub type CmdResult = Result<ExitCode, CliError>;
