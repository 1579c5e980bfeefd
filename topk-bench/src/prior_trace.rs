//! A row's prior against its view on a synthetic decode trace (`topk_runtime::data::DecodeTrace`),
//! on the CPU backend: each step of a batch of growing sequences is selected once with every
//! prior setting, each setting fed its own previous step's boundary, and every output is checked
//! against the CPU verifier. What it counts is what the kernels decide the same way (the routes
//! and the candidates |Q0| are the CPU backend's, route for route); the times are the CPU's.

use std::time::{Duration, Instant};
use topk_dsl::{Io, Prior, Spec};
use topk_runtime::call::{CallIo, CallOut, IndexTransform, RowSource};
use topk_runtime::data::DecodeTrace;
use topk_runtime::{cpu, Error, Result, Route, ScoreRows};

/// What one prior setting did over the steps of a trace after the first (whose prior is NaN).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SettingSummary {
    /// Rows selected.
    pub rows: u64,
    /// Rows certified at the prior's cutoff.
    pub prior_primary: u64,
    /// Rows certified in the prior's band.
    pub prior_rescue: u64,
    /// Rows that started again from the view (or the exact routes).
    pub fallback: u64,
    /// Candidates admitted |Q0|, summed over the rows.
    pub candidates: u64,
    /// Time of the selections.
    pub elapsed: Duration,
}

/// The trace's steps selected with `base` under each prior of `priors` (with `boundary=true`);
/// every output verified. Returns one summary per prior, in order.
pub fn run_trace(
    trace: &DecodeTrace,
    steps: usize,
    base: &Spec,
    priors: &[Prior],
) -> Result<Vec<SettingSummary>> {
    let width = trace.start_lens.iter().max().copied().unwrap_or(0) + steps;
    let rows = trace.start_lens.len();
    let k = base.k as usize;
    let specs: Vec<Spec> = priors
        .iter()
        .map(|&prior| Spec {
            io: Io {
                prior,
                boundary: true,
                ..base.io
            },
            ..*base
        })
        .collect();
    let mut carried = vec![vec![f32::NAN; rows]; specs.len()];
    let mut out = vec![SettingSummary::default(); specs.len()];
    for t in 0..steps {
        let step = trace.step(t, width);
        let scores = ScoreRows {
            data: &step.scores,
            rows,
            width,
            pitch: width,
        };
        for (s, spec) in specs.iter().enumerate() {
            let nan = vec![f32::NAN; rows];
            let io = CallIo {
                rows: RowSource::Lengths(&step.lengths),
                transform: IndexTransform::None,
                prior: (spec.io.prior != Prior::None).then_some(&carried[s][..]),
            };
            let mut indices = vec![0i32; rows * k];
            let mut boundary = nan.clone();
            let call = CallOut {
                indices: &mut indices,
                pitch: k,
                values: None,
                boundary: Some(&mut boundary),
            };
            let start = Instant::now();
            let stats = cpu::select_with(spec, &scores, &io, call, false)?;
            let elapsed = start.elapsed();
            let report = cpu::verify_with(spec, &scores, &io, &indices, k, None)?;
            if !report.is_exact() {
                return Err(Error::Input(format!("{spec}, step {t}: {report}")));
            }
            carried[s] = boundary;
            if t == 0 {
                continue; // no prior yet: every setting proposes from the view
            }
            let summary = &mut out[s];
            summary.rows += stats.total_rows() - stats.count(Route::Short);
            summary.prior_primary += stats.count(Route::PriorPrimary);
            summary.prior_rescue += stats.count(Route::PriorRescue);
            summary.candidates += stats.candidates;
            summary.elapsed += elapsed;
        }
    }
    for summary in &mut out {
        summary.fallback = summary.rows - summary.prior_primary - summary.prior_rescue;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_prior_certifies_where_the_scores_do_not_move() {
        let trace = DecodeTrace {
            start_lens: vec![9_000, 12_000],
            dims: 8,
            drift: 0.0,
            seed: 5,
        };
        let base = Spec::parse("k=256").unwrap();
        let priors = [Prior::None, Prior::SUGGESTED];
        let got = run_trace(&trace, 4, &base, &priors).unwrap();
        assert_eq!(got[0].rows, 6);
        assert_eq!(got[0].prior_primary + got[0].prior_rescue, 0);
        // Without drift a row gains one score per step: the previous K-th largest certifies.
        assert_eq!(got[1].prior_primary, 6, "{:?}", got[1]);
        assert_eq!(got[1].fallback, 0);
    }
}
