//! How results are worded, and printing to stdout that stops quietly when the reader
//! (`| head`) goes away.

pub use topk::cli::line;
use topk_runtime::{Route, RouteStats};

/// Route counts as a JSON object keyed by route name (every route, zeros included).
pub fn routes_json(stats: &RouteStats) -> serde_json::Value {
    Route::ALL
        .iter()
        .map(|&r| (r.name().to_string(), stats.count(r).into()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

pub use topk::units::{gbps, millis, size};
