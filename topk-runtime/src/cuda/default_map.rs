//! The default map: which Spec a shape gets without a spec or an autotune record, from the
//! paper's width thresholds (§6.4) and the H200 measurements in bench/RESULTS.md. Pure functions
//! of (K, M_cap, N) and, for thread-block clusters, the compute capability.

use topk_dsl::{Centi, Mapping, Proposal, RowLocalVariant, Spec};

/// Batches of at least this many rows take the persistent kernel already from 16K-wide rows:
/// at 1024 and 4096 rows of 16K-64K it measured 1.3-1.6x faster than the streaming row-local
/// kernel (bench/RESULTS.md, crossover sweep); at 64 rows the row-local kernel stays ahead.
pub const PERSISTENT_FROM_ROWS: u32 = 1024;

/// Batches of [`PERSISTENT_FROM_ROWS`] rows or more of at least this width take the persistent
/// kernel (whose rows this short all take the exact coarse boundary, [`EXACT_BELOW_PER_K`])
/// instead of the register row-local one: at 4096 rows of 12K-16K it took 0.58-0.60x the time
/// on both profiles (bench/RESULTS.md, short-row calls). Narrower rows were not timed and keep
/// the register tile.
pub const REGISTER_PERSISTENT_FROM_WIDTH: u32 = 12_289;

/// The default execution map (paper Fig. 6, simplified to the families generated so far):
/// register row-local for rows that fit a 1024-thread register tile (but batches of
/// [`PERSISTENT_FROM_ROWS`] rows or more from [`REGISTER_PERSISTENT_FROM_WIDTH`]), streaming
/// row-local below the width where sampling starts to pay (paper §6.4: 32K-64K) unless the
/// batch has [`PERSISTENT_FROM_ROWS`] rows or more, persistent sampled above (block size from
/// [`persistent_threads`]); for a few long rows the cluster kernel, 16 or 8 CTAs per row
/// ([`cluster_ctas`]), sampled from 1M-2M scores ([`cluster_samples`]), or, for a few very long
/// rows, the stage chain ([`staged_pays`]).
/// The sampled policy keeps the paper's stride 128 at K = 2048 but retains rho = 1.75 instead of
/// 1.5 and rescues at 2.5K instead of 1.75K: an underfilled row is a tail of extra row passes on
/// one CTA, and on the H200 the wider margin measured faster over the whole operator matrix
/// (worst N >= 256K shape 1.56x the floor instead of 1.78x on i.i.d. rows, bench/RESULTS.md).
pub fn default_spec(k: u32, m_cap: u32, width: u32) -> Spec {
    default_spec_on(9, k, m_cap, width)
}

/// [`default_spec`] for a device of compute capability `cc_major`.x: without thread-block
/// clusters (before 9.0) the rows [`cluster_ctas`] picks go to the stage chain or the
/// persistent pool instead.
pub fn default_spec_on(cc_major: u32, k: u32, m_cap: u32, width: u32) -> Spec {
    let register_tile = topk_codegen::REGISTER_ITEMS * 1024;
    // The row-local kernels propose exactly: no view to group.
    let rowlocal = |variant| Spec {
        mapping: Mapping::RowLocal(variant),
        proposal: Proposal::Exact,
        threads: 1024,
        ..context_parallel_spec(k)
    };
    if width <= register_tile
        && (m_cap < PERSISTENT_FROM_ROWS || width < REGISTER_PERSISTENT_FROM_WIDTH)
    {
        rowlocal(RowLocalVariant::Register)
    } else if width < 49_152 && m_cap < PERSISTENT_FROM_ROWS {
        rowlocal(RowLocalVariant::Streaming)
    } else if let Some(ctas) = cluster_ctas(m_cap, width).filter(|_| cc_major >= 9) {
        default_cluster_spec(k, m_cap, width, ctas)
    } else if staged_pays(m_cap, width) {
        staged_spec(k)
    } else {
        let threads = persistent_threads(k, m_cap, width);
        Spec {
            threads,
            stagger_us: persistent_stagger_us(k, m_cap, width, threads),
            prefetch: persistent_prefetch(k, threads),
            ..persistent_spec_for(k, width)
        }
    }
}

/// Late start of half the default persistent pool, microseconds: [`STAGGER_US`] for calls of
/// at least [`STAGGER_FROM_ROWS`] rows from [`STAGGER_FROM_WIDTH`] on two 512-thread CTAs per
/// SM at K = 2048, else none. With every worker starting at once, the two CTAs of an SM propose
/// and refine their rows at the same time and DRAM idles; staggered, one streams while the
/// other does. Measured on the H200 (bench/RESULTS.md, what moved the numbers: one A/B of two
/// interleaved rounds over the matrix, and two earlier runs): 1024-8192 rows of 256K-512K
/// 0.95-1.00x the time on indexer rows and 0.99-1.00x on i.i.d. rows. Not for 512 rows of 256K
/// (i.i.d. rows 1.02x slower: two rows per worker leave the late half a tail) nor at 128K
/// (i.i.d. 1024 rows 1.04x slower). The kernel skips the late start when a call has fewer than
/// three live rows per worker, and the planner drops it on a device that does not hold two of
/// these CTAs per SM.
pub fn persistent_stagger_us(k: u32, m_cap: u32, width: u32, threads: u32) -> u16 {
    if k == 2048 && threads == 512 && m_cap >= STAGGER_FROM_ROWS && width >= STAGGER_FROM_WIDTH {
        STAGGER_US
    } else {
        0
    }
}

/// Row-stream batches the default persistent pool sends to L2 ahead of their loads (the spec's
/// `prefetch`): one on the 384-thread pool at K = 2048 ([`persistent_threads`]: calls of many
/// rows up to 128K), else none. Measured on the H200 at K = 2048 with one batch ahead on every
/// kernel against none (bench/RESULTS.md, what moved the numbers): on 384-thread pools
/// 2048-8192 rows of 128K took 0.944-0.982x the time, the short-row calls of 48K-64K 0.93-0.95x
/// and the later trace calls they plan 0.92-0.96x; on 512-thread pools every call took
/// 1.02-1.11x and on 256-thread pools 1.01-1.04x, so those keep none. Other K were not timed.
pub fn persistent_prefetch(k: u32, threads: u32) -> u8 {
    u8::from(k == 2048 && threads == 384)
}

/// Margin of a persistent pool's tail rows (`Spec::tail_rows`, about the last row each worker
/// starts; the planner sets it, sized to the pool, on the specs of the default map and of
/// autotune records, never on a given spec): [`TAIL_RHO`] on 512-thread pools at K = 2048 for
/// rows of [`TAIL_FROM_WIDTH`] and wider whose margin is narrower and that have no tail yet,
/// else none. A band rescue reads its row a second time on one CTA; on one of the last rows it
/// ends the call late. Measured on the H200 with two 512-thread CTAs per SM (bench/RESULTS.md,
/// what moved the numbers: the shipped build against the one before, one round; an experiment
/// build with the same rule, two rounds, agreeing within 0.003): 1024 rows of 128K-256K
/// 0.957-0.978x the time (it removed rescued rows there); 512 rows 0.905x where it removed one
/// (indexer 256K), else 1.001-1.017x. Rows of 256K-512K were not timed. From 512K the default
/// margin is already 2.
pub fn persistent_tail_rho(width: u32, spec: &Spec) -> Option<Centi> {
    let narrower = matches!(spec.proposal, Proposal::Sampled { rho, .. } if rho < TAIL_RHO);
    let pool_of_512 = spec.mapping == Mapping::Persistent && spec.threads == 512;
    let untailed = spec.tail_rows == 0;
    (spec.k == 2048 && pool_of_512 && untailed && width >= TAIL_FROM_WIDTH && narrower)
        .then_some(TAIL_RHO)
}

/// The tail rows' margin.
pub const TAIL_RHO: Centi = Centi(200);
/// Narrowest rows with a tail margin.
pub const TAIL_FROM_WIDTH: u32 = 1 << 17;

/// The default pool's stagger, microseconds (a row pass of 256K takes about 60 us there; 12 us
/// measured within 1% of 16, 24 us slower on i.i.d. rows).
pub const STAGGER_US: u16 = 16;
/// Fewest rows of a staggered call: about four rows per worker on the H200's 264 workers.
pub const STAGGER_FROM_ROWS: u32 = 1024;
/// Narrowest rows of a staggered call.
pub const STAGGER_FROM_WIDTH: u32 = 1 << 18;

/// Block size of the default persistent pool: 384 threads (three CTAs per SM) for calls of at
/// least [`TRIPLE_CTA_FROM_ROWS`] rows up to [`TRIPLE_CTA_MAX_WIDTH`], else 256 (four per SM) up
/// to [`SHORT_PERSISTENT_WIDTH`], else 512 (two per SM). Above K = 2048 the frontier is twice
/// as large and only two 512-thread CTAs fit.
pub fn persistent_threads(k: u32, m_cap: u32, width: u32) -> u32 {
    if k > 2048 {
        512
    } else if m_cap >= TRIPLE_CTA_FROM_ROWS && width <= TRIPLE_CTA_MAX_WIDTH {
        384
    } else if width <= SHORT_PERSISTENT_WIDTH {
        256
    } else {
        512
    }
}

/// Widest rows for which calls of many rows run three 384-thread persistent CTAs per SM. Rows
/// this short spend a large share of their time in the proposal and refinement chains, which
/// more rows in flight hide. Measured on the H200 in one interleaved A/B (bench/RESULTS.md, what
/// moved the numbers): against two 512-thread CTAs 0.969-0.978x the time at 2048-8192 rows of
/// 128K on i.i.d. rows and 1.009-1.012x (slightly slower) on indexer rows; against four
/// 256-thread CTAs 0.91-0.98x on the first trace calls (16K-24K rows of 24K-64K) on both
/// profiles. From 256K three CTAs were slower at every batch (3-23%, an earlier run).
pub const TRIPLE_CTA_MAX_WIDTH: u32 = 1 << 17;
/// Fewest rows per call for the 384-thread pool: at 1024 rows of 128K it measured even with
/// 512 threads, and fewer rows leave the third CTA of an SM without a row.
pub const TRIPLE_CTA_FROM_ROWS: u32 = 2048;

/// The cluster kernel of `ctas` CTAs per row (8 or 16) at rank `k` (exact coarse boundary,
/// 1024 threads).
pub fn cluster_spec(k: u32, ctas: u8) -> Spec {
    Spec {
        mapping: Mapping::Cluster { ctas },
        proposal: Proposal::Exact,
        threads: 1024,
        ..context_parallel_spec(k)
    }
}

/// The default map's cluster kernel of `ctas` CTAs for `m_cap` rows of `width`: sampled where
/// [`cluster_samples`] says so (on [`sampled_cluster_threads`] threads), else exact.
fn default_cluster_spec(k: u32, m_cap: u32, width: u32, ctas: u8) -> Spec {
    let sampled = sampled_cluster_spec(k, ctas, width);
    // Below K = 256 the persistent policy proposes exactly: then so does the cluster.
    if cluster_samples(m_cap, width, ctas) && sampled.proposal != Proposal::Exact {
        Spec {
            threads: sampled_cluster_threads(k, m_cap, ctas),
            ..sampled
        }
    } else {
        cluster_spec(k, ctas)
    }
}

/// The cluster kernel of `ctas` CTAs per row with the persistent kernel's sampled proposal for
/// rows of `width` ([`persistent_spec_for`]: its view and margin), on 1024 threads (the default
/// map takes 512 for many rows, [`sampled_cluster_threads`]).
pub fn sampled_cluster_spec(k: u32, ctas: u8, width: u32) -> Spec {
    let persistent = persistent_spec_for(k, width);
    Spec {
        mapping: Mapping::Cluster { ctas },
        threads: 1024,
        // Cluster rows are long: every one samples.
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

/// The cluster size a batch of at most `m_cap` rows of `width` scores takes by default, if any
/// (on devices with thread-block clusters, compute capability 9.0+; see [`default_spec_on`]).
/// The persistent pool would run one CTA per row and leave most SMs idle. Measured on the H200
/// (bench/RESULTS.md, few long rows):
/// - 16 CTAs (a non-portable cluster size) for 256K-4M scores and at most
///   [`CLUSTER16_MAX_ROWS`] rows: 0.62-0.96x the time of 8-CTA clusters at 1-7 rows (the wider
///   the row, the larger the gain); 8 rows take two waves of 16-CTA clusters there and run
///   1.2-1.7x slower than 8-CTA ones.
/// - 8 CTAs for 256K-2M scores and at most 16 rows, about one wave of clusters: 1.0-3.3x faster
///   than the persistent pool at 1-16 rows (even at 16 x 256K) and up to 2.7x faster than the
///   stage chain (even at 16 x 2M).
/// - 8 CTAs, sampled, for rows of 1M-4M up to [`SAMPLED_CLUSTER_SCORES`] scores per call
///   (32 x 1M, 16 x 2M, 8 x 4M): 0.62-0.72x the time of the persistent pool at 32 x 1M and
///   about half that of the stage chain at 8 x 4M (0.056-0.060 against 0.114 ms); at 64 x 1M
///   the persistent pool is ahead on indexer rows (0.127 against 0.144 ms).
pub fn cluster_ctas(m_cap: u32, width: u32) -> Option<u8> {
    if (CLUSTER_FROM_WIDTH..=CLUSTER16_TO_WIDTH).contains(&width) && m_cap <= CLUSTER16_MAX_ROWS {
        Some(16)
    } else if (CLUSTER_FROM_WIDTH..=CLUSTER_TO_WIDTH).contains(&width) && m_cap <= CLUSTER_MAX_ROWS
        || (SAMPLED_CLUSTER8_FROM_WIDTH..=CLUSTER16_TO_WIDTH).contains(&width)
            && m_cap as u64 * width as u64 <= SAMPLED_CLUSTER_SCORES
    {
        Some(8)
    } else {
        None
    }
}

/// Whether the default cluster kernel of `ctas` CTAs for `m_cap` rows of `width` samples the
/// row's view (one pass over the row) instead of building the exact coarse boundary (a
/// histogram pass, then a collection pass). Measured on the H200 (bench/RESULTS.md, few long
/// rows), sampled against exact at K = 2048:
/// - 16 CTAs from 2M scores: 0.71-0.85x at 1 x 2M, 0.60-0.63x at 1 x 4M; at 1 x 1M and
///   4 x 1M sampled was faster on indexer rows (0.88-0.93x) and slower on i.i.d. ones
///   (1.18-1.20x), so rows below 2M keep the exact boundary.
/// - 8 CTAs from 1M scores and 8 rows: 0.72-0.95x at 8-16 rows of 1M, 0.62-0.68x at 8 x 2M;
///   at 8 x 512K sampled was slower (1.14-1.25x with the pair view).
pub fn cluster_samples(m_cap: u32, width: u32, ctas: u8) -> bool {
    match ctas {
        16 => width >= SAMPLED_CLUSTER16_FROM_WIDTH,
        _ => width >= SAMPLED_CLUSTER8_FROM_WIDTH && m_cap > CLUSTER16_MAX_ROWS,
    }
}

/// Threads per CTA of the default sampled cluster kernel of `ctas` CTAs for `m_cap` rows at rank
/// `k`: 512 (two CTAs per SM, twice as many clusters resident) for 8-CTA clusters from
/// [`CLUSTER512_FROM_ROWS`] rows at K <= 2048, else 1024. Measured on the H200 (bench/RESULTS.md, few long
/// rows): 512 threads run 16 rows of 1M-2M in 0.73-0.77x the time of 1024 (one wave of 16
/// clusters instead of two of 15) and 32 rows of 1M in 0.96x, but 8 rows in 1.21-1.40x.
pub fn sampled_cluster_threads(k: u32, m_cap: u32, ctas: u8) -> u32 {
    // Above K = 2048 the frontier doubles and two CTAs no longer fit an SM's shared memory.
    if ctas == 8 && m_cap >= CLUSTER512_FROM_ROWS && k <= 2048 {
        512
    } else {
        1024
    }
}

/// Row widths and batch sizes the default map sends to the cluster kernel (see
/// [`cluster_ctas`], [`cluster_samples`] and [`sampled_cluster_threads`]).
pub const CLUSTER_FROM_WIDTH: u32 = 1 << 18;
pub const CLUSTER_TO_WIDTH: u32 = 1 << 21;
pub const CLUSTER_MAX_ROWS: u32 = 16;
pub const CLUSTER16_TO_WIDTH: u32 = 1 << 22;
/// 16-CTA clusters resident at once on the 132-SM H200 (8 rows took two waves).
pub const CLUSTER16_MAX_ROWS: u32 = 7;
pub const SAMPLED_CLUSTER8_FROM_WIDTH: u32 = 1 << 20;
pub const SAMPLED_CLUSTER16_FROM_WIDTH: u32 = 1 << 21;
/// More rows than the H200 holds 1024-thread 8-CTA clusters at once (15).
pub const CLUSTER512_FROM_ROWS: u32 = 16;
/// Scores per call up to which sampled 8-CTA clusters take rows of 1M-4M (about two waves of
/// the 15 clusters the H200 holds at once).
pub const SAMPLED_CLUSTER_SCORES: u64 = 32 << 20;

/// Whether a batch of at most `m_cap` rows of `width` scores takes the stage chain
/// (`map=staged`) by default: rows of at least 1M scores, and at most one row per 128K scores
/// of width (8 rows of 1M, 32 of 4M). The one-CTA-per-row pool then leaves most SMs idle while
/// the stages spread every row over chunk CTAs. Measured on the H200 (bench/RESULTS.md, few long
/// rows): 1.3-2x faster than the persistent pool at 1-8 rows of 1M, 1.5-3.5x at 8-32 rows of 4M;
/// even at 32 rows of 1M; slower at 64+ rows of 1M and at every batch of 256K rows tried. Where
/// [`cluster_ctas`] picks a cluster, the cluster kernel is the default.
pub fn staged_pays(m_cap: u32, width: u32) -> bool {
    width >= STAGED_FROM_WIDTH
        && (m_cap as u64) * STAGED_SCORES_PER_ROW <= width as u64
        && (width as usize) <= crate::sharding::MAX_SHARDED_POSITIONS
}

/// Narrowest rows the default map sends to the stage chain.
pub const STAGED_FROM_WIDTH: u32 = 1 << 20;
/// Row width per batch row below which the stage chain pays (see [`staged_pays`]).
pub const STAGED_SCORES_PER_ROW: u64 = 1 << 17;

/// Widest rows for which the persistent pool runs 256-thread CTAs (four per SM) instead of
/// 512: with rows this short a CTA spends most of a row in its proposal and refinement chains,
/// and twice as many rows in flight hide them. Measured on the H200 (bench/RESULTS.md, short
/// rows): 7-20% faster on the first calls of the traces (16K-24K rows of 24K-64K), 2-30% slower
/// from 128K up, where a row's certification pass dominates and the 256-thread CTA's half-size
/// shared frontier spills. K above 2048 keeps 512 threads (its larger frontier would leave
/// room for fewer CTAs).
pub const SHORT_PERSISTENT_WIDTH: u32 = 65_536;

/// The persistent kernel with the default sampled proposal at rank `k`: the default map for
/// long rows and the CPU backend's default policy. At K >= 2048 (stride 128) the view is
/// grouped in pairs (`view=run(2)`: two adjacent scores every 256 positions, the same sample
/// count from half the 32-byte sectors): over the operator matrix on the H200 it measured
/// 3.5-5% faster in geometric mean than the stride view on both profiles (bench/RESULTS.md,
/// grouped views); smaller K keep the stride view, which is all that was timed there.
///
/// Rows shorter than [`EXACT_BELOW_PER_K`] x K (at most 24576 scores) take the exact coarse
/// boundary instead of the view.
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

/// Rows shorter than this many times K (K at most 2048) skip the persistent default's view and
/// take the exact coarse boundary: two passes over the row, the second from L2 while rows this
/// short stay resident, and a small frontier to refine, against a view, one pass and a
/// frontier of ~1.75 K. Measured on the H200 at K = 2048 (bench/RESULTS.md, short-row calls):
/// the first trace call (24576 rows of lengths 1-24576) took 0.93x the time with rows below
/// 16K-24K exact on both profiles, 8192 rows of 16K-24K 0.98x (i.i.d.) and 1.00x (indexer),
/// 1024-4096 rows of 12K-16K 1.00x; with rows up to 32K exact, rows of 28K-32K took
/// 1.06-1.12x. Above K = 2048 the threshold stays at 24576: longer rows no longer stay in L2 for
/// the second pass.
pub const EXACT_BELOW_PER_K: u32 = 12;

/// Row width from which the persistent default retains rho = 2 instead of 1.75.
pub const WIDE_MARGIN_FROM_WIDTH: u32 = 1 << 19;

/// Widest rows for which the persistent default retains rho = 1.5 and rescues at 2 K instead of
/// 1.75 and 2.5 K (K >= 2048). On rows this short the refinement of the admitted frontier is
/// as long as the pass itself, so fewer candidates pay: measured on the H200 in one sweep
/// (bench/RESULTS.md, short-row calls), the second and third trace calls (rows of 24K-64K)
/// took 0.97-0.98x the time on both profiles; 12288 rows of 64K-128K 0.98x (i.i.d.) and 1.00x
/// (indexer), so wider rows keep 1.75.
pub const SHORT_MARGIN_MAX_WIDTH: u32 = 1 << 16;

/// The persistent default for rows of `width` scores: [`persistent_spec`], with the retention
/// margin narrowed to rho = 1.5 (rescue 2) up to [`SHORT_MARGIN_MAX_WIDTH`] and widened to
/// rho = 2 from [`WIDE_MARGIN_FROM_WIDTH`] at K >= 2048. On rows of 512K or more
/// the ~300 more candidates a row admits cost little, while an underfilled row (a band pass
/// over the whole row) is a tail on one CTA: measured on the H200 in one run against
/// rho = 1.75 (bench/RESULTS.md, retention margin), 512 x 512K and 512 x 1M i.i.d. rows took
/// 0.90x and 0.88x the time (the one rescued row of each call is gone) and the other 512K-1M
/// shapes 0.97-1.02x; at 128K-256K rho = 2 was up to 6% slower on i.i.d. rows, so they keep
/// 1.75.
pub fn persistent_spec_for(k: u32, width: u32) -> Spec {
    let spec = persistent_spec(k);
    let Proposal::Sampled {
        stride,
        rescue,
        exact_below,
        ..
    } = spec.proposal
    else {
        return spec;
    };
    // Timed at K = 2048 only; smaller K keep the margin their stride was calibrated for.
    if k < 2048 {
        return spec;
    }
    let (rho, rescue) = if width >= WIDE_MARGIN_FROM_WIDTH {
        (Centi(200), rescue)
    } else if width <= SHORT_MARGIN_MAX_WIDTH {
        (Centi(150), Some(Centi(200)))
    } else {
        return spec;
    };
    Spec {
        proposal: Proposal::Sampled {
            stride,
            rho,
            rescue,
            exact_below,
        },
        ..spec
    }
}

/// The persistent policy with the stride view: the context-parallel selector's default (its
/// stages sample the row-phased stride view only).
pub fn context_parallel_spec(k: u32) -> Spec {
    Spec {
        k,
        proposal: sampled_proposal(k),
        ..Spec::default()
    }
}

/// The default sampled proposal for rank `k`: stride 128 at K >= 2048; for smaller K the
/// stride shrinks with K so the view keeps the same sample rank (q = ceil(1.75 K / s) = 28), whose
/// calibration the K = 2048 measurements rest on (at K = 512 a stride-128 view would hold only
/// 6 samples above the target). Below K = 256 the view would cost more than an eighth of the
/// row, and the exact proposal is used instead. Only K = 2048 has been timed on a GPU so far.
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
