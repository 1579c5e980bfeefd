//! `topk`: exact Top-K selection of long ragged score rows from the command line.

mod args;
mod call_args;
mod call_inputs;
mod cmd_autotune;
mod cmd_codegen;
mod cmd_demo;
mod cmd_gen;
mod cmd_kernels;
mod cmd_plan;
mod cmd_routes;
mod cmd_select;
mod cmd_spec;
mod cmd_verify;
mod inputs;
mod progress;
mod report;
mod select_call;

use clap::{Parser, Subcommand};
use std::process::ExitCode;
pub use topk::cli::{CliError, EXIT_FAILED_CHECK};

/// Exact sample-guided Top-K for long, ragged score rows.
///
/// Every row of a float32 score matrix has a valid length L; `topk` returns, per row, the
/// indices of its K largest valid scores (any order), or every valid index followed by -1 when
/// L <= K. Selection runs on the GPU through NVRTC-compiled kernels generated from a spec, or on
/// the CPU with the same algorithm.
#[derive(Parser)]
#[command(name = "topk", version, propagate_version = true)]
#[command(
    after_help = "Start with `topk demo`. Every subcommand has its own --help with examples. \
                  Benchmarks, profile statistics and charts: the `topk-bench` command."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Select(cmd_select::SelectArgs),
    Verify(cmd_verify::VerifyArgs),
    Gen(cmd_gen::GenArgs),
    Demo(cmd_demo::DemoArgs),
    Spec(cmd_spec::SpecArgs),
    Codegen(cmd_codegen::CodegenArgs),
    Kernels(cmd_kernels::KernelsArgs),
    Autotune(cmd_autotune::AutotuneArgs),
    Plan(cmd_plan::PlanArgs),
    Routes(cmd_routes::RoutesArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Select(a) => cmd_select::run(a),
        Command::Verify(a) => cmd_verify::run(a),
        Command::Gen(a) => cmd_gen::run(a),
        Command::Demo(a) => cmd_demo::run(a),
        Command::Spec(a) => cmd_spec::run(a),
        Command::Codegen(a) => cmd_codegen::run(a),
        Command::Kernels(a) => cmd_kernels::run(a),
        Command::Autotune(a) => cmd_autotune::run(a),
        Command::Plan(a) => cmd_plan::run(a),
        Command::Routes(a) => cmd_routes::run(a),
    };
    topk::cli::exit_with(result)
}

/// What a subcommand returns: its exit status, or the error that stopped it.
pub type CmdResult = Result<ExitCode, CliError>;
