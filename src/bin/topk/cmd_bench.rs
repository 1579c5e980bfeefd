use crate::CmdResult;
use clap::Args;

/// pending
#[derive(Args)]
pub struct BenchArgs {}

pub fn run(_a: BenchArgs) -> CmdResult {
    Err(crate::error::CliError::Usage("pending".into()))
}
