//! Everything that stops a subcommand before it can finish; printed as one `error: ...` line.

use topk::io::IoError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// An input file or folder that cannot be used; `flag` names the option it came from.
    #[error("{flag}: {source}")]
    Input { flag: &'static str, source: IoError },
    /// An output file that cannot be written.
    #[error("{0}")]
    Output(IoError),
    /// Inputs that are readable but do not fit together, or arguments that conflict.
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Runtime(#[from] topk_runtime::Error),
    #[error(transparent)]
    Spec(#[from] topk_dsl::SpecError),
}
