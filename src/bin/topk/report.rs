//! How results are worded: times, throughput, sizes; and printing to stdout that stops quietly
//! when the reader (`| head`) goes away.

use std::io::Write as _;

/// Print one line on stdout; exit quietly if stdout was closed.
pub fn line(text: impl std::fmt::Display) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{text}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(crate::EXIT_BAD_INPUT as i32);
    }
}

pub use topk::units::{gbps, millis, size};
