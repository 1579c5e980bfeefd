//! Variants of one kernel on the whole operator matrix: the retention margins of
//! `bench/margin-sweep.sh`, the KV-split kernels of `bench/kvsplit.sh` and the grouped views of
//! `bench/views.sh`, as time over the floor per shape, a bar per variant.

use super::floor_bars::{floor_bars, FloorBars};
use super::jsonl::{self, Lines, Measurement, Source};

pub const MARGINS: Source = Source {
    label: "variant",
    lines: Lines::All,
    writer: "bash bench/margin-sweep.sh",
};

pub const KVSPLIT: Source = Source {
    label: "variant",
    lines: Lines::All,
    writer: "bash bench/kvsplit.sh",
};

pub const VIEWS: Source = Source {
    label: "variant",
    lines: Lines::All,
    writer: "bash bench/views.sh",
};

/// The persistent sampled kernel at each (rho, rescue) pair.
pub fn margins(runs: &[Measurement], from: &str) -> Result<String, String> {
    per_shape("Retention margin (rho, rescue)", runs, from)
}

/// `map=kvsplit(2|4|8)` against the default map.
pub fn kvsplit(runs: &[Measurement], from: &str) -> Result<String, String> {
    per_shape("KV-split kernels against the default map", runs, from)
}

/// The default map's kernel with `view=run(R)` against the stride view (`run=1`).
pub fn views(runs: &[Measurement], from: &str) -> Result<String, String> {
    per_shape("Grouped views view=run(R)", runs, from)
}

fn per_shape(what: &str, runs: &[Measurement], from: &str) -> Result<String, String> {
    let runs: Vec<&Measurement> = runs.iter().collect();
    let chart = FloorBars {
        title: format!(
            "{what}: time over the one-read floor per shape{}",
            jsonl::k_suffix(&runs)
        ),
        group_desc: "shape M x N",
        group: Measurement::shape,
        series: |m| m.label.clone(),
        from,
    };
    floor_bars(&chart, &runs)
}
