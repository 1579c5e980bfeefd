//! The default map as an ordered table of rules: the first rule that takes a shape on a device
//! gives its spec (paper Fig. 6, simplified to the families generated so far).

use super::persistent::persistent_default;
use super::proposal::{cluster_spec, context_parallel_spec, sampled_cluster_spec, staged_spec};
use super::{DeviceFacts, Shape};
use topk_dsl::{Mapping, Proposal, RowLocalVariant, Spec};

/// One rule of the default map.
pub struct Rule {
    /// Its name in `topk plan --table`.
    pub name: &'static str,
    /// Whether it takes the shape on the device.
    pub takes: fn(&Shape, &DeviceFacts) -> bool,
    /// The spec it gives, knobs included.
    pub spec: fn(&Shape, &DeviceFacts) -> Spec,
    /// Why, in a line.
    pub why: &'static str,
    /// The section of bench/RESULTS.md or docs/experiments.md (the history) that measured it.
    pub measured: &'static str,
}

/// The default map, in order.
pub const MAP: [Rule; 5] = [
    Rule {
        name: "streaming",
        takes: |s, _| s.width < STREAMING_BELOW_WIDTH && s.m_cap < pool_from_rows(s.width),
        spec: |s, _| streaming_row_local(s.k),
        why: "below the width where sampling pays (paper §6.4), unless the batch fills the pool; \
              faster than holding a row in registers at every batch size measured",
        measured: "Latency ablations (crossover); GPU exactness tests (seventh set)",
    },
    Rule {
        name: "cluster16",
        takes: |s, f| {
            f.has_clusters()
                && (CLUSTER_FROM_WIDTH..=CLUSTER16_TO_WIDTH).contains(&s.width)
                && s.m_cap <= f.clusters16
        },
        spec: |s, f| cluster(s, f, 16),
        why: "one wave of 16-CTA clusters spreads each of a few long rows over 16 SMs where the \
              pool would run one CTA per row; sampled from 2M",
        measured: "A few long rows; Sampled cluster kernels",
    },
    Rule {
        name: "cluster8",
        takes: |s, f| {
            let (m, w) = (s.m_cap, s.width);
            f.has_clusters()
                && ((CLUSTER_FROM_WIDTH..=CLUSTER_TO_WIDTH).contains(&w)
                    && m <= cluster8_wave_rows(f)
                    || (SAMPLED_CLUSTER8_FROM_WIDTH..=CLUSTER16_TO_WIDTH).contains(&w)
                        && m as u64 * w as u64 <= sampled_cluster8_scores(f)
                    || (SHORT_CLUSTER8_FROM_WIDTH..CLUSTER_FROM_WIDTH).contains(&w)
                        && m <= SHORT_CLUSTER8_MAX_ROWS)
        },
        spec: |s, f| cluster(s, f, 8),
        why: "about a wave of 8-CTA clusters for more rows than 16-CTA clusters hold, and for up \
              to 8 rows of 64K-256K; sampled from 1M, on two 512-thread CTAs per SM past a wave \
              of 1024-thread ones",
        measured: "A few long rows; Sampled cluster kernels; A few rows of 64K-128K",
    },
    Rule {
        name: "staged",
        takes: |s, _| staged_pays(s.m_cap, s.width),
        spec: |s, _| staged_spec(s.k),
        why: "a few very long rows spread over the position chunks of the stage chain",
        measured: "A few long rows",
    },
    Rule {
        name: "persistent",
        takes: |_, _| true,
        spec: persistent_default,
        why: "one CTA per row, sampled, for everything else; its knobs are `policy::KNOBS`",
        measured: "Operator matrix; What moved the numbers",
    },
];

/// Batches of at least this many rows wider than [`SHORT_POOL_MAX_WIDTH`] take the persistent
/// pool instead of the streaming row-local kernel.
pub const PERSISTENT_FROM_ROWS: u32 = 1024;
/// Widest rows that the pool takes from [`SHORT_POOL_FROM_ROWS`] rows.
pub const SHORT_POOL_MAX_WIDTH: u32 = 16_384;
/// Batches of at least this many rows of at most [`SHORT_POOL_MAX_WIDTH`] scores take the
/// persistent pool.
pub const SHORT_POOL_FROM_ROWS: u32 = 512;

/// Fewest rows of `width` that take the persistent pool instead of the streaming row-local
/// kernel.
pub const fn pool_from_rows(width: u32) -> u32 {
    if width <= SHORT_POOL_MAX_WIDTH {
        SHORT_POOL_FROM_ROWS
    } else {
        PERSISTENT_FROM_ROWS
    }
}

/// Rows narrower than this take the streaming row-local kernel in small batches.
pub const STREAMING_BELOW_WIDTH: u32 = 49_152;

/// Narrowest rows of the cluster kernel.
pub const CLUSTER_FROM_WIDTH: u32 = 1 << 18;
/// Narrowest rows that a batch of at most [`SHORT_CLUSTER8_MAX_ROWS`] rows spreads over exact
/// 8-CTA clusters (narrower ones keep one CTA per row).
pub const SHORT_CLUSTER8_FROM_WIDTH: u32 = 1 << 16;
/// Most rows narrower than [`CLUSTER_FROM_WIDTH`] that take exact 8-CTA clusters: past a wave
/// of them (about 15 rows) the pool's one CTA per row is faster.
pub const SHORT_CLUSTER8_MAX_ROWS: u32 = 8;
/// Widest rows of exact 8-CTA clusters.
pub const CLUSTER_TO_WIDTH: u32 = 1 << 21;
/// Widest rows of 16-CTA and sampled 8-CTA clusters.
pub const CLUSTER16_TO_WIDTH: u32 = 1 << 22;
/// Narrowest rows on which 16-CTA clusters sample.
pub const SAMPLED_CLUSTER16_FROM_WIDTH: u32 = 1 << 21;
/// Narrowest rows on which 8-CTA clusters sample (at [`SAMPLED_CLUSTER8_FROM_ROWS`] rows or
/// more; fewer sample from [`SAMPLED_CLUSTER16_FROM_WIDTH`], as 16-CTA clusters do).
pub const SAMPLED_CLUSTER8_FROM_WIDTH: u32 = 1 << 20;
/// Fewest rows on which 8-CTA clusters sample rows of 1M-2M.
pub const SAMPLED_CLUSTER8_FROM_ROWS: u32 = 8;
/// Waves of rows of [`SAMPLED_CLUSTER8_FROM_WIDTH`] up to which sampled 8-CTA clusters take
/// rows of 1M-4M ([`sampled_cluster8_scores`]).
pub const SAMPLED_CLUSTER_WAVES: u64 = 2;

/// Rows of about one wave of 8-CTA clusters on `facts`: the 1024-thread clusters resident at
/// once, and one more (from that many rows sampled clusters run two 512-thread CTAs per SM).
pub fn cluster8_wave_rows(facts: &DeviceFacts) -> u32 {
    facts.clusters8 + 1
}

/// Scores per call up to which sampled 8-CTA clusters take rows of 1M-4M:
/// [`SAMPLED_CLUSTER_WAVES`] waves of rows of 1M.
pub fn sampled_cluster8_scores(facts: &DeviceFacts) -> u64 {
    SAMPLED_CLUSTER_WAVES * cluster8_wave_rows(facts) as u64 * SAMPLED_CLUSTER8_FROM_WIDTH as u64
}

/// The default cluster kernel of `ctas` CTAs for a shape: sampled on wide enough rows (when K
/// samples at all), else exact; sampled 8-CTA clusters past a wave of rows run 512 threads at
/// K <= 2048 (above it two CTAs no longer fit an SM's shared memory).
fn cluster(s: &Shape, facts: &DeviceFacts, ctas: u8) -> Spec {
    let samples = match ctas {
        16 => s.width >= SAMPLED_CLUSTER16_FROM_WIDTH,
        _ => {
            s.width >= SAMPLED_CLUSTER16_FROM_WIDTH
                || s.width >= SAMPLED_CLUSTER8_FROM_WIDTH && s.m_cap >= SAMPLED_CLUSTER8_FROM_ROWS
        }
    };
    let sampled = sampled_cluster_spec(s.k, ctas, s.width);
    if !samples || sampled.proposal == Proposal::Exact {
        return cluster_spec(s.k, ctas);
    }
    let halved = ctas == 8 && s.m_cap >= cluster8_wave_rows(facts) && s.k <= 2048;
    Spec {
        threads: if halved { 512 } else { 1024 },
        ..sampled
    }
}

/// Narrowest rows of the stage chain.
pub const STAGED_FROM_WIDTH: u32 = 1 << 20;
/// Row width per batch row from which the stage chain pays.
pub const STAGED_SCORES_PER_ROW: u64 = 1 << 17;

/// Whether a batch of at most `m_cap` rows of `width` scores takes the stage chain (where no
/// cluster rule took it): rows from [`STAGED_FROM_WIDTH`], at most one row per
/// [`STAGED_SCORES_PER_ROW`] of width, within the chain's position limit.
pub fn staged_pays(m_cap: u32, width: u32) -> bool {
    width >= STAGED_FROM_WIDTH
        && (m_cap as u64) * STAGED_SCORES_PER_ROW <= width as u64
        && (width as usize) <= crate::sharding::MAX_SHARDED_POSITIONS
}

/// The exact streaming row-local kernel at rank `k` on 1024 threads (no view to group).
fn streaming_row_local(k: u32) -> Spec {
    Spec {
        mapping: Mapping::RowLocal(RowLocalVariant::Streaming),
        proposal: Proposal::Exact,
        threads: 1024,
        ..context_parallel_spec(k)
    }
}
