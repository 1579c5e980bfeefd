//! The sampled-path ablations of `bench/ablations.sh`: time over the floor per policy, and the
//! crossover runs (`cross-*`) against the row width, a panel per profile and rows per call.

use super::canvas;
use super::floor_bars::{floor_bars, FloorBars};
use super::jsonl::{self, Lines, Measurement, Source};
use super::line_chart::{line_chart, LineChart, LinePanel};

pub const ABLATIONS: Source = Source {
    label: "ablation",
    lines: Lines::All,
    writer: "bash bench/ablations.sh",
};

/// The name prefix of the crossover runs; every other ablation is a policy bar.
const CROSS: &str = "cross-";

/// Time over the floor of each policy (rho, stride, rescue, exact proposal) per shape.
pub fn ablation_latency(runs: &[Measurement], from: &str) -> Result<String, String> {
    let runs: Vec<&Measurement> = runs.iter().filter(|m| !is_cross(m)).collect();
    let chart = FloorBars {
        title: format!(
            "Sampled-path ablations: time over the one-read floor per policy{}",
            jsonl::k_suffix(&runs)
        ),
        group_desc: "policy",
        group: |m| m.label.clone(),
        series: Measurement::shape,
        from,
    };
    floor_bars(&chart, &runs)
}

/// Latency against the row width N of each crossover policy, a panel per (profile, M).
pub fn crossover(runs: &[Measurement], from: &str) -> Result<String, String> {
    let runs: Vec<&Measurement> = runs.iter().filter(|m| is_cross(m)).collect();
    let policies = jsonl::distinct(&runs, |m| m.label.clone());
    let mut batches = jsonl::distinct(&runs, |m| m.rows);
    batches.sort_unstable();
    let mut skipped = Vec::new();
    let mut panels = Vec::new();
    for profile in jsonl::distinct(&runs, |m| m.profile.clone()) {
        for &rows in &batches {
            let mut lines = vec![Vec::new(); policies.len()];
            for m in runs
                .iter()
                .filter(|m| m.profile == profile && m.rows == rows)
            {
                let Some(i) = policies.iter().position(|p| *p == m.label) else {
                    continue;
                };
                match m.ms() {
                    Ok(ms) => lines[i].push((m.width as f64, ms)),
                    Err(why) => {
                        skipped.push(format!("{profile} {} {} ({why})", m.shape(), m.label))
                    }
                }
            }
            panels.push(LinePanel {
                caption: format!("profile {profile}, M = {rows}"),
                lines,
            });
        }
    }
    let mut notes = vec![
        format!("From {from}, the {CROSS}* lines; medians, only outputs verified exact are drawn."),
        canvas::not_drawn(&skipped),
    ];
    // What each policy ran, as the bench script wrote it.
    for policy in &policies {
        let spec = runs
            .iter()
            .find_map(|m| (m.label == *policy).then_some(m.spec.as_deref()).flatten());
        if let Some(spec) = spec {
            notes.push(format!("{policy}: {spec}"));
        }
    }
    line_chart(&LineChart {
        title: format!(
            "Crossover: latency against the row width per policy{}",
            jsonl::k_suffix(&runs)
        ),
        x_desc: "row width N",
        y_desc: "latency (ms)",
        x_label: |x| canvas::width_label(x.round() as u64),
        series: policies,
        panels,
        cols: batches.len(),
        reference: None,
        notes,
    })
}

fn is_cross(m: &Measurement) -> bool {
    m.label.starts_with(CROSS)
}
