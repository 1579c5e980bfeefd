//! What the command-line programs (`topk`, `topk-bench`) share: the error that stops a
//! subcommand, their exit statuses, and how a subcommand's result becomes one.

use crate::io::IoError;
use std::io::Write as _;
use std::process::ExitCode;

/// Exit status of a command that ran to the end but found its result wanting (a contract
/// violation, an inexact result, a kernel that does not compile).
pub const EXIT_FAILED_CHECK: u8 = 1;
/// Exit status of a command that could not run: bad input, bad arguments, missing device.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Everything that stops a subcommand before it can finish; printed as one `error: ...` line.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// An input file or folder that cannot be used; `flag` names the option it came from.
    #[error("{flag}: {source}")]
    Input {
        /// The option the input came from.
        flag: &'static str,
        /// Why it cannot be used.
        source: IoError,
    },
    /// An output file that cannot be written.
    #[error("{0}")]
    Output(IoError),
    /// Inputs that are readable but do not fit together, or arguments that conflict.
    #[error("{0}")]
    Usage(String),
    /// The runtime refused or failed.
    #[error(transparent)]
    Runtime(#[from] topk_runtime::Error),
    /// A spec that breaks a rule of its form.
    #[error(transparent)]
    Spec(#[from] topk_dsl::SpecError),
    /// Code generation refused the spec.
    #[error(transparent)]
    Codegen(#[from] topk_codegen::CodegenError),
}

impl CliError {
    /// Maps a file error of the option `flag` to [`CliError::Input`], for `map_err`.
    pub fn input(flag: &'static str) -> impl FnOnce(IoError) -> CliError {
        move |source| CliError::Input { flag, source }
    }
}

/// A subcommand's exit status, or its error printed as one `error: ...` line and
/// [`EXIT_BAD_INPUT`].
pub fn exit_with(result: Result<ExitCode, CliError>) -> ExitCode {
    result.unwrap_or_else(|e| {
        eprintln!("error: {e}");
        ExitCode::from(EXIT_BAD_INPUT)
    })
}

/// Prints one line on stdout; exits quietly (status 0) when the reader went away (`| head`).
pub fn line(text: impl std::fmt::Display) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(EXIT_BAD_INPUT as i32);
    }
}
