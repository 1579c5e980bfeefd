//! Rows sharded over GPUs (the `context-parallel` program): speedup over the single-GPU default
//! plan against the number of ranks, a line per shape, a panel per profile.

use super::canvas;
use super::jsonl::{self, Lines, Measurement, Source};
use super::line_chart::{line_chart, LineChart, LinePanel};

pub const CONTEXT_PARALLEL: Source = Source {
    label: "how",
    lines: Lines::Braced,
    writer: "the context-parallel program (bench/run_all_gpu.sh) on the GPU machine",
};

/// The single-GPU default plan on the whole rows: the time every speedup is taken against.
const ONE_GPU: &str = "1-gpu";
/// The staged pipeline on one GPU without collectives, drawn at one rank.
const SHARDED_ONE: &str = "sharded-1";
const NCCL: &str = "nccl";

pub fn context_parallel(runs: &[Measurement], from: &str) -> Result<String, String> {
    let runs: Vec<&Measurement> = runs.iter().collect();
    let shapes = jsonl::distinct(&runs, |m| m.shape());
    let mut skipped = Vec::new();
    let mut panels = Vec::new();
    for profile in jsonl::distinct(&runs, |m| m.profile.clone()) {
        let mut lines = vec![Vec::new(); shapes.len()];
        for (line, shape) in lines.iter_mut().zip(&shapes) {
            let here: Vec<&Measurement> = runs
                .iter()
                .copied()
                .filter(|m| m.profile == profile && m.shape() == *shape)
                .collect();
            if here.is_empty() {
                continue;
            }
            // A rerun appends its lines, so the last one-GPU time counts.
            let base = here
                .iter()
                .rev()
                .find(|m| m.label == ONE_GPU)
                .ok_or("not measured")
                .and_then(|m| m.ms());
            let base = match base {
                Ok(ms) => ms,
                Err(why) => {
                    skipped.push(format!("{profile} {shape} ({ONE_GPU} {why})"));
                    continue;
                }
            };
            for m in &here {
                let ranks = match (m.label.as_str(), m.ranks) {
                    (SHARDED_ONE, _) => 1,
                    (NCCL, Some(r)) if r > 1 => r,
                    (NCCL, None) => {
                        skipped.push(format!("{profile} {shape} {NCCL} (no rank count)"));
                        continue;
                    }
                    _ => continue,
                };
                match m.ms() {
                    Ok(ms) => line.push((ranks as f64, base / ms)),
                    Err(why) => skipped.push(format!("{profile} {shape} {ranks} ranks ({why})")),
                }
            }
        }
        panels.push(LinePanel {
            caption: format!("profile {profile}"),
            lines,
        });
    }
    let notes = vec![
        format!(
            "1 rank: {SHARDED_ONE}, the staged pipeline on one GPU without collectives; more \
             ranks: one per GPU over NCCL. Speedup: {ONE_GPU} time / time."
        ),
        format!("From {from}; medians, only outputs verified exact are drawn."),
        canvas::not_drawn(&skipped),
    ];
    line_chart(&LineChart {
        title: format!(
            "Context parallelism: speedup over one GPU against ranks{}",
            jsonl::k_suffix(&runs)
        ),
        x_desc: "ranks (GPUs)",
        y_desc: "speedup over 1-gpu",
        x_label: |x| format!("{x:.0}"),
        series: shapes,
        cols: panels.len(),
        panels,
        reference: Some((1.0, format!("1.0: {ONE_GPU}, the single-GPU default plan"))),
        notes,
    })
}
