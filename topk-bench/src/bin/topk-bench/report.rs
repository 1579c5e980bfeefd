//! How results are worded, and printing to stdout that stops quietly when the reader
//! (`| head`) goes away.

use std::io::Write as _;
use topk_runtime::{Route, RouteStats};

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

/// Route counts as a JSON object keyed by route name (every route, zeros included).
pub fn routes_json(stats: &RouteStats) -> serde_json::Value {
    Route::ALL
        .iter()
        .map(|&r| (r.name().to_string(), stats.count(r).into()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

pub use topk::units::{gbps, millis, size};
