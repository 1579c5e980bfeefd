//! Shared helpers for the `topk-bench` command-line tests: run the binary, check its outcome.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// The result of one `topk-bench` run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The run failed with exit code 2 and one `error: ...` line that mentions every needle.
    pub fn assert_bad_input(&self, needles: &[&str]) {
        assert_eq!(self.code, 2, "expected exit 2; stderr: {}", self.stderr);
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "expected one error line, got: {:?}",
            self.stderr
        );
        assert!(lines[0].starts_with("error: "), "{:?}", lines[0]);
        for n in needles {
            assert!(
                lines[0].to_lowercase().contains(&n.to_lowercase()),
                "error line {:?} does not mention {n:?}",
                lines[0]
            );
        }
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
    }

    pub fn assert_success(&self) {
        assert_eq!(
            self.code, 0,
            "expected success; stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
    }
}

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
