//! The part of a merged benchmark file (`bench/peers/merge_results.py`, schema
//! `topk-bench-merged/1`) that the charts draw.

use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

pub const SCHEMA: &str = "topk-bench-merged/1";
/// The label of our own selector next to the peers' names.
pub const OURS: &str = "ours";

#[derive(Deserialize)]
pub struct Merged {
    pub schema: String,
    pub meta: Meta,
    pub peer_names: Vec<String>,
    /// Every measured call; those with a `trace` belong to one of `traces`.
    pub calls: Vec<Item>,
    /// One item per trace, its times the sums over the trace's calls.
    pub traces: Vec<Item>,
}

#[derive(Deserialize)]
pub struct Meta {
    pub profile: Option<String>,
    pub gpu: Option<String>,
    pub k: Option<u64>,
    pub read_bandwidth_bps: Option<f64>,
}

/// A call or a whole trace, with every selector's time.
#[derive(Deserialize)]
pub struct Item {
    pub name: String,
    pub rows: u64,
    pub width: u64,
    #[serde(default)]
    pub trace: Option<String>,
    #[serde(default)]
    pub calls: Option<u64>,
    pub floor_ms: f64,
    pub ours: Timing,
    pub peers: HashMap<String, Timing>,
    pub best_peer: Option<String>,
    pub speedup_vs_best: Option<f64>,
    pub ours_x_floor: Option<f64>,
}

#[derive(Deserialize)]
pub struct Timing {
    pub status: Option<String>,
    pub median_ms: Option<f64>,
}

impl Timing {
    /// The time, when it was measured and the output was exact.
    pub fn ok_ms(&self) -> Option<f64> {
        positive(self.median_ms).filter(|_| self.status.as_deref() == Some("ok"))
    }

    pub fn status(&self) -> &str {
        self.status.as_deref().unwrap_or("missing")
    }
}

impl Item {
    /// `(selector, timing)` for ours and then each peer in `names` order; a peer absent from
    /// this item reads as missing.
    pub fn timings<'a>(&'a self, names: &'a [String]) -> Vec<(&'a str, &'a Timing)> {
        static MISSING: Timing = Timing {
            status: None,
            median_ms: None,
        };
        let mut out = vec![(OURS, &self.ours)];
        out.extend(
            names
                .iter()
                .map(|n| (n.as_str(), self.peers.get(n).unwrap_or(&MISSING))),
        );
        out
    }
}

impl Merged {
    /// Read and check a merged file; the error says what is wrong and how to get a good one.
    pub fn load(path: &Path) -> Result<Merged, String> {
        let regenerate = "write it again with bench/peers/merge_results.py";
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        let merged: Merged = serde_json::from_str(&text).map_err(|e| {
            format!(
                "`{}` is not a merged benchmark result ({e}); {regenerate}",
                path.display()
            )
        })?;
        if merged.schema != SCHEMA {
            return Err(format!(
                "`{}` has schema `{}`, not `{SCHEMA}`; {regenerate}",
                path.display(),
                merged.schema
            ));
        }
        Ok(merged)
    }

    /// The shapes measured on their own (outside traces), in the file's order.
    pub fn shapes(&self) -> Vec<&Item> {
        self.calls.iter().filter(|c| c.trace.is_none()).collect()
    }

    /// `ours` and the peers, in the order of the result table.
    pub fn selectors(&self) -> Vec<&str> {
        std::iter::once(OURS)
            .chain(self.peer_names.iter().map(String::as_str))
            .collect()
    }

    /// `profile indexer, NVIDIA H200, K=2048`: what the run measured, for titles.
    pub fn context(&self) -> String {
        let m = &self.meta;
        let mut parts = vec![format!(
            "profile {}",
            m.profile.as_deref().unwrap_or("unknown")
        )];
        parts.push(m.gpu.clone().unwrap_or_else(|| "unknown device".into()));
        if let Some(k) = m.k {
            parts.push(format!("K={k}"));
        }
        parts.join(", ")
    }
}

/// A finite positive number, or nothing: only those can be drawn on a log axis or as a ratio.
pub fn positive(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite() && *x > 0.0)
}
