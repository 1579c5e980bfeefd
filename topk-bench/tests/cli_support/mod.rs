//! Shared helpers for the `topk-bench` command-line tests: run the binary, check its outcome.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

#[path = "../../../tests/cli_support/run.rs"]
mod run;
pub use run::Run;

/// Runs `topk-bench` with `args`.
pub fn topk_bench(args: &[&str]) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_topk-bench"))
        .args(args)
        .output()
        .expect("the topk-bench binary runs");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}
