use crate::CmdResult;
use clap::Args;

/// pending
#[derive(Args)]
pub struct GenArgs {}

pub fn run(_a: GenArgs) -> CmdResult {
    Err(crate::error::CliError::Usage("pending".into()))
}
