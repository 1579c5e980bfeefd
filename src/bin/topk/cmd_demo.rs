use crate::CmdResult;
use clap::Args;

/// pending
#[derive(Args)]
pub struct DemoArgs {}

pub fn run(_a: DemoArgs) -> CmdResult {
    Err(crate::error::CliError::Usage("pending".into()))
}
