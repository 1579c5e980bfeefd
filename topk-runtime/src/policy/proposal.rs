//! The selector policies the default map is built from, none of them device-dependent: the
//! sampled proposal per rank, the persistent default's view, margins and short-row rule, and the
//! specs of the cluster kernel and the stage chain.

use std::ops::RangeInclusive;
use topk_dsl::{Centi, Mapping, Proposal, Spec};

/// The default sampled proposal for rank `k`: stride 128 at K >= 2048 (the paper's §6.4);
/// smaller K shrink the stride with K so that the view keeps the sample rank
/// (q = ceil(1.75 K / s) = 28) the K = 2048 calibration rests on; below K = 256 the view would
/// cost more than an eighth of the row and the proposal is exact. Only K = 2048 has been timed
/// (bench/RESULTS.md, "Latency ablations").
pub fn sampled_proposal(k: u32) -> Proposal {
    let stride = if k >= 2048 {
        128
    } else {
        let s = 128 * k / 2048;
        if s == 0 {
            0
        } else {
            1 << (31 - s.leading_zeros())
        }
    };
    if stride < 16 {
        return Proposal::Exact;
    }
    Proposal::Sampled {
        stride,
        rho: Centi(175),
        rescue: Some(Centi(250)),
        exact_below: 0,
    }
}

/// The persistent policy on the stride view: the context-parallel selector's default (its
/// stages sample the row-phased stride view only) and the stage chain's.
pub fn context_parallel_spec(k: u32) -> Spec {
    Spec {
        k,
        proposal: sampled_proposal(k),
        ..Spec::default()
    }
}

/// Rows shorter than this many times K (K at most 2048, so at most 24576 scores) take the exact
/// coarse boundary instead of the view: two passes, the second from L2 while rows this short
/// stay resident, and a small frontier (bench/RESULTS.md, "What moved the numbers", codegen
/// version 6). Longer rows no longer stay in L2 for the second pass.
pub const EXACT_BELOW_PER_K: u32 = 12;

/// The persistent kernel with the default sampled proposal at rank `k`, the CPU backend's
/// default: at K >= 2048 the view groups pairs (`view=run(2)`, bench/RESULTS.md "Grouped views
/// on the GPU"; smaller K keep the stride view, all that was timed there), and rows shorter
/// than [`EXACT_BELOW_PER_K`] x K take the exact coarse boundary.
pub fn persistent_spec(k: u32) -> Spec {
    let spec = context_parallel_spec(k);
    Spec {
        view_run: if k >= 2048 { 2 } else { 1 },
        proposal: spec
            .proposal
            .with_exact_below(EXACT_BELOW_PER_K * k.min(2048)),
        ..spec
    }
}

/// Row width from which the persistent default retains rho = 2 ([`MARGINS`]).
pub const WIDE_MARGIN_FROM_WIDTH: u32 = 1 << 19;
/// Widest rows on which the persistent default retains rho = 1.5 ([`MARGINS`]).
pub const SHORT_MARGIN_MAX_WIDTH: u32 = 1 << 16;

/// A retention margin of the persistent default for a band of row widths, at K >= 2048 (smaller
/// K keep the margin their stride was calibrated for); widths in no band keep
/// [`sampled_proposal`]'s rho = 1.75 and rescue 2.5 (bench/RESULTS.md, "Retention margin of the
/// default map").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Margin {
    /// Row widths the margin applies to.
    pub widths: RangeInclusive<u32>,
    /// Primary target rank, a multiple of K.
    pub rho: Centi,
    /// Rescue rank, a multiple of K.
    pub rescue: Centi,
    /// Why, in a line.
    pub why: &'static str,
    /// The section of bench/RESULTS.md or docs/experiments.md (the history) that measured it.
    pub measured: &'static str,
}

/// The persistent default's margins by row width.
pub const MARGINS: [Margin; 2] = [
    Margin {
        widths: 0..=SHORT_MARGIN_MAX_WIDTH,
        rho: Centi(150),
        rescue: Centi(200),
        why: "on rows this short refining the frontier costs as much as the pass: fewer \
              candidates pay",
        measured: "Short-row calls",
    },
    Margin {
        widths: WIDE_MARGIN_FROM_WIDTH..=u32::MAX,
        rho: Centi(200),
        rescue: Centi(250),
        why: "an underfilled row is a band pass on one CTA at the end of the call, while the \
              extra candidates cost little",
        measured: "Retention margin of the default map",
    },
];

/// The persistent default for rows of `width` scores: [`persistent_spec`] with the margin of
/// [`MARGINS`] for that width.
pub fn persistent_spec_for(k: u32, width: u32) -> Spec {
    let spec = persistent_spec(k);
    let Proposal::Sampled {
        stride,
        exact_below,
        ..
    } = spec.proposal
    else {
        return spec;
    };
    let margin = MARGINS.iter().find(|m| m.widths.contains(&width));
    match margin.filter(|_| k >= 2048) {
        Some(m) => Spec {
            proposal: Proposal::Sampled {
                stride,
                rho: m.rho,
                rescue: Some(m.rescue),
                exact_below,
            },
            ..spec
        },
        None => spec,
    }
}

/// The exact cluster kernel of `ctas` CTAs per row (8 or 16) at rank `k`, on 1024 threads.
pub fn cluster_spec(k: u32, ctas: u8) -> Spec {
    Spec {
        mapping: Mapping::Cluster { ctas },
        proposal: Proposal::Exact,
        threads: 1024,
        ..context_parallel_spec(k)
    }
}

/// The cluster kernel of `ctas` CTAs per row with the persistent default's view and margin for
/// rows of `width` ([`persistent_spec_for`]), every row sampled (cluster rows are long), on
/// 1024 threads.
pub fn sampled_cluster_spec(k: u32, ctas: u8, width: u32) -> Spec {
    let persistent = persistent_spec_for(k, width);
    Spec {
        mapping: Mapping::Cluster { ctas },
        threads: 1024,
        proposal: persistent.proposal.with_exact_below(0),
        ..persistent
    }
}

/// The stage chain at rank `k` with the context-parallel policy (its stages sample the stride
/// view).
pub fn staged_spec(k: u32) -> Spec {
    Spec {
        mapping: Mapping::Staged,
        ..context_parallel_spec(k)
    }
}
