//! The outcome of one run of a command-line program and what the tests assert of it (shared
//! with the `topk-bench` command-line tests).

/// The result of one run of a command-line program.
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

    /// The run exited 0.
    pub fn assert_success(&self) {
        assert_eq!(
            self.code, 0,
            "expected success; stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
    }
}
