//! The default map printed over a grid of shapes (`topk plan --table`).

use super::{choose, DeviceFacts, Shape};
use std::fmt::Write;

/// The shapes of a table: every combination of its ranks, row counts and widths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Ranks K.
    pub ks: Vec<u32>,
    /// Row counts `M_cap`.
    pub rows: Vec<u32>,
    /// Row widths `N`.
    pub widths: Vec<u32>,
}

impl Default for Grid {
    /// A grid that meets every rule and knob of the map on the H200's facts.
    fn default() -> Grid {
        Grid {
            ks: vec![256, 512, 2048, 4096],
            rows: vec![1, 7, 8, 16, 32, 512, 1024, 2048, 8192],
            widths: [8, 16, 24, 48, 64, 128, 256, 512, 1024, 2048, 4096]
                .iter()
                .map(|kib| kib << 10)
                .collect(),
        }
    }
}

/// One line per shape of `grid` (K, rows, width, then the rule that took it and the spec's
/// canonical text), after a header naming the facts.
pub fn map_table(facts: &DeviceFacts, grid: &Grid) -> String {
    let mut out = format!("# the default map on {facts}\n");
    let _ = writeln!(
        out,
        "{:>5} {:>6} {:>6}  {:<10} spec",
        "K", "rows", "width", "rule"
    );
    for &k in &grid.ks {
        for &m_cap in &grid.rows {
            for &width in &grid.widths {
                let (rule, spec) = choose(facts, &Shape { k, m_cap, width });
                let _ = writeln!(
                    out,
                    "{k:>5} {m_cap:>6} {:>6}  {:<10} {spec}",
                    compact(width),
                    rule.name
                );
            }
        }
    }
    out
}

/// `n` in K or M when it is a whole number of them.
fn compact(n: u32) -> String {
    if n >= 1 << 20 && n.trailing_zeros() >= 20 {
        format!("{}M", n >> 20)
    } else if n >= 1 << 10 && n.trailing_zeros() >= 10 {
        format!("{}K", n >> 10)
    } else {
        n.to_string()
    }
}
