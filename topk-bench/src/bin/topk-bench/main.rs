//! `topk-bench`: the benchmark harness's command line (timed and verified runs, profile
//! statistics, charts of the GPU results).

mod args;
mod cmd_bench;
mod cmd_plot;
mod cmd_stats;
mod error;
mod plot;
mod report;

use clap::{Parser, Subcommand};
use error::CliError;
use std::process::ExitCode;

/// The benchmark harness of the topk selector.
///
/// `bench` times the selection alone on one input and verifies what was timed, `stats` measures
/// what a data profile looks like to the selector, and `plot` draws the GPU results of
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
    Plot(cmd_plot::PlotArgs),
}

/// Exit status of a command that ran to the end but found its result wanting (an inexact
/// benchmark).
pub const EXIT_FAILED_CHECK: u8 = 1;
/// Exit status of a command that could not run: bad input, bad arguments, missing device.
pub const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Bench(a) => cmd_bench::run(a),
        Command::Stats(a) => cmd_stats::run(a),
        Command::Plot(a) => cmd_plot::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// What a subcommand returns: its exit status, or the error that stopped it.
pub type CmdResult = Result<ExitCode, CliError>;
