//! Where a phase-probe build's time went ([`topk_codegen::probe`]): each probed row's worker,
//! start and phase times decoded from its route and phase words, and their spread.

use topk_runtime::Route;

/// One row of a phase-probe launch: who ran it, when it started (microseconds after the
/// launch's first row started) and how long its phases took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowTimeline {
    /// Row index in the call.
    pub row: usize,
    /// The worker (CTA of the pool) that ran it.
    pub worker: u32,
    /// The route it took.
    pub route: Route,
    /// Start, microseconds after the launch's first row started.
    pub start_us: f64,
    /// Proposal phase, microseconds.
    pub proposal_us: f64,
    /// Certification pass, microseconds.
    pub pass_us: f64,
    /// Refinement, microseconds.
    pub refine_us: f64,
}

impl RowTimeline {
    /// From the (route word, phase word) pairs of a probed launch ([`topk_codegen::probe`]).
    pub fn from_info(info: &[i32]) -> Vec<RowTimeline> {
        use topk_codegen::probe::{start_offsets_us, PhaseTimes, RowStamp};
        let rows: Vec<(usize, RowStamp, PhaseTimes)> = info
            .chunks_exact(2)
            .enumerate()
            .map(|(row, pair)| (row, RowStamp::decode(pair[0]), PhaseTimes::decode(pair[1])))
            .filter(|(_, stamp, _)| stamp.route != Route::Short as u8)
            .collect();
        let stamps: Vec<RowStamp> = rows.iter().map(|r| r.1).collect();
        rows.iter()
            .zip(start_offsets_us(&stamps))
            .map(|(&(row, stamp, t), start_us)| RowTimeline {
                row,
                worker: stamp.worker,
                route: Route::from_code(stamp.route).unwrap_or(Route::Short),
                start_us,
                proposal_us: t.proposal_us,
                pass_us: t.pass_us,
                refine_us: t.refine_us,
            })
            .collect()
    }
}

/// Distribution of one phase over the rows that ran it: mean, p50, p90, max, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
        if v.is_empty() {
            return Spread::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Spread {
            mean: v.iter().sum::<f64>() / n as f64,
            p50: v[n / 2],
            p90: v[(n * 9 / 10).min(n - 1)],
            max: v[n - 1],
        }
    }
}

/// Where the rows' time went in a phase-probe build (rows longer than K only).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseSummary {
    /// Probed rows (longer than K).
    pub rows: usize,
    /// Proposal times.
    pub proposal: Spread,
    /// Certification pass times.
    pub pass: Spread,
    /// Refinement times.
    pub refine: Spread,
}

impl PhaseSummary {
    /// From the (route word, phase word) pairs of a probed launch.
    pub fn from_info(info: &[i32]) -> PhaseSummary {
        PhaseSummary::of(&RowTimeline::from_info(info))
    }

    /// The spread of each phase over a probed launch's rows.
    pub fn of(timeline: &[RowTimeline]) -> PhaseSummary {
        let spread =
            |phase: fn(&RowTimeline) -> f64| Spread::of(timeline.iter().map(phase).collect());
        PhaseSummary {
            rows: timeline.len(),
            proposal: spread(|t| t.proposal_us),
            pass: spread(|t| t.pass_us),
            refine: spread(|t| t.refine_us),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PhaseSummary;
    use topk_codegen::probe::{PASS_UNIT_NS, PHASE_UNIT_NS};

    #[test]
    fn phase_summary_skips_short_rows_and_spreads_the_rest() {
        let word = |a: u32, b: u32, d: u32| (a | (d << 10) | (b << 20)) as i32;
        // (route, word): one short row (ignored), three primary rows.
        let info = [
            0,
            0,
            1,
            word(10, 100, 20),
            1,
            word(30, 300, 40),
            2,
            word(20, 200, 60),
        ];
        let s = PhaseSummary::from_info(&info);
        assert_eq!(s.rows, 3);
        let unit = PHASE_UNIT_NS as f64 / 1e3;
        assert!((s.proposal.mean - 20.0 * unit).abs() < 1e-9);
        assert_eq!(s.proposal.p50, 20.0 * unit);
        assert_eq!(s.proposal.max, 30.0 * unit);
        assert_eq!(s.refine.max, 60.0 * unit);
        assert_eq!(s.pass.p50, 200.0 * PASS_UNIT_NS as f64 / 1e3);
    }
}
