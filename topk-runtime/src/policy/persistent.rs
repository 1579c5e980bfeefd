//! The knobs of the default persistent pool, applied in order to [`persistent_spec_for`]: its
//! block size, the row-stream prefetch, the late start of half the pool, and the margin of a
//! call's last rows (the tail, which the planner gives autotune records as well).

use super::{persistent_spec_for, DeviceFacts, Shape};
use topk_dsl::{Centi, Mapping, Proposal, Spec};

/// One knob of the persistent pool.
pub struct Knob {
    /// Its name in the canonical spec text.
    pub name: &'static str,
    /// Sets the knob on the pool's spec for a shape on a device.
    pub apply: fn(Spec, &Shape, &DeviceFacts) -> Spec,
    /// Why, in a line.
    pub why: &'static str,
    /// The section of bench/RESULTS.md or docs/experiments.md (the history) that measured it.
    pub measured: &'static str,
}

/// The pool's knobs, in the order they apply (each may read the ones before).
pub const KNOBS: [Knob; 4] = [
    Knob {
        name: "threads",
        apply: |spec, s, _| Spec {
            threads: persistent_threads(s.k, s.m_cap, s.width),
            ..spec
        },
        why: "short rows spend their time in the per-row chains, which more CTAs per SM hide; \
              long rows want the larger shared frontier of two CTAs",
        measured: "Short-row calls; What moved the numbers",
    },
    Knob {
        name: "prefetch",
        apply: |spec, s, _| Spec {
            prefetch: persistent_prefetch(s.k, spec.threads),
            ..spec
        },
        why: "three CTAs per SM leave DRAM idle between batches; other pools lost with it",
        measured: "What moved the numbers",
    },
    Knob {
        name: "stagger",
        apply: |spec, s, facts| Spec {
            stagger_us: stagger_for(facts, s, &spec),
            ..spec
        },
        why: "with two CTAs per SM starting together, both propose and refine at once while \
              DRAM idles; started apart, one streams while the other does",
        measured: "What moved the numbers",
    },
    Knob {
        name: "tail",
        apply: |spec, s, facts| with_tail(facts, spec, s.m_cap, s.width),
        why: "a band rescue on one of the last rows a pool starts ends the call late",
        measured: "What moved the numbers",
    },
];

/// The default persistent pool for a shape on a device: [`persistent_spec_for`] with
/// [`KNOBS`].
pub fn persistent_default(s: &Shape, facts: &DeviceFacts) -> Spec {
    let base = persistent_spec_for(s.k, s.width);
    KNOBS
        .iter()
        .fold(base, |spec, knob| (knob.apply)(spec, s, facts))
}

/// Widest rows on which the pool runs four 256-thread CTAs per SM instead of two of 512.
pub const SHORT_PERSISTENT_WIDTH: u32 = 65_536;
/// Widest rows on which calls of many rows run three 384-thread CTAs per SM.
pub const TRIPLE_CTA_MAX_WIDTH: u32 = 1 << 17;
/// Fewest rows per call for the 384-thread pool: fewer leave the third CTA of an SM idle.
pub const TRIPLE_CTA_FROM_ROWS: u32 = 2048;

/// Block size of the default pool: 384 threads for calls of at least [`TRIPLE_CTA_FROM_ROWS`]
/// rows up to [`TRIPLE_CTA_MAX_WIDTH`], else 256 up to [`SHORT_PERSISTENT_WIDTH`], else 512.
/// Above K = 2048 the frontier doubles and only 512-thread CTAs are used.
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

/// Row-stream batches the pool sends to L2 ahead of their loads: one on the 384-thread pool at
/// K = 2048, else none (other K were not timed).
pub fn persistent_prefetch(k: u32, threads: u32) -> u8 {
    u8::from(k == 2048 && threads == 384)
}

/// The pool's stagger, microseconds.
pub const STAGGER_US: u16 = 16;
/// Narrowest rows of a staggered call.
pub const STAGGER_FROM_WIDTH: u32 = 1 << 18;
/// Rows per worker from which a call staggers, rounded down to a power of two (the batch sizes
/// measured): with fewer, the late half is a tail (the kernel itself skips the late start below
/// three live rows per worker).
pub const STAGGER_ROWS_PER_WORKER: u32 = 4;

/// The stagger a pool of `threads` threads at rank `k` may take for rows of `width`, whatever
/// the batch and device: [`STAGGER_US`] for 512-thread pools at K = 2048 from
/// [`STAGGER_FROM_WIDTH`], else 0 (also an autotune candidate).
pub fn persistent_stagger_us(k: u32, width: u32, threads: u32) -> u16 {
    if k == 2048 && threads == 512 && width >= STAGGER_FROM_WIDTH {
        STAGGER_US
    } else {
        0
    }
}

/// Fewest rows of a staggered call of `spec`'s pool on `facts`: about
/// [`STAGGER_ROWS_PER_WORKER`] rows per worker, as a power of two.
pub fn stagger_from_rows(facts: &DeviceFacts, spec: &Spec) -> u32 {
    let rows = STAGGER_ROWS_PER_WORKER * facts.pool(spec);
    1 << (31 - rows.max(1).leading_zeros())
}

/// The default pool's stagger for a shape: [`persistent_stagger_us`] for calls of at least
/// [`stagger_from_rows`] rows, on a device that holds two of these CTAs per SM (the pairs it
/// offsets).
fn stagger_for(facts: &DeviceFacts, s: &Shape, spec: &Spec) -> u16 {
    let paired = facts.ctas_per_sm(spec) == 2;
    if paired && s.m_cap >= stagger_from_rows(facts, spec) {
        persistent_stagger_us(s.k, s.width, spec.threads)
    } else {
        0
    }
}

/// The tail rows' margin.
pub const TAIL_RHO: Centi = Centi(200);
/// Narrowest rows with a tail margin.
pub const TAIL_FROM_WIDTH: u32 = 1 << 17;

/// The margin of a persistent pool's last rows, if `spec` takes one: [`TAIL_RHO`] on 512-thread
/// pools at K = 2048 for rows of [`TAIL_FROM_WIDTH`] and wider whose margin is narrower and
/// that have no tail yet.
pub fn persistent_tail_rho(width: u32, spec: &Spec) -> Option<Centi> {
    let narrower = matches!(spec.proposal, Proposal::Sampled { rho, .. } if rho < TAIL_RHO);
    let pool_of_512 = spec.mapping == Mapping::Persistent && spec.threads == 512;
    let untailed = spec.tail_rows == 0;
    (spec.k == 2048 && pool_of_512 && untailed && width >= TAIL_FROM_WIDTH && narrower)
        .then_some(TAIL_RHO)
}

/// `spec` with the tail margin ([`persistent_tail_rho`]) on the pool's last wave, one row per worker
/// (`tail=RHO@POOL`), for calls of more than one pool of rows; unchanged otherwise. The
/// planner applies it to the default map's specs and to autotune records (whose candidates
/// cannot know the pool), never to a given spec.
pub fn with_tail(facts: &DeviceFacts, spec: Spec, m_cap: u32, width: u32) -> Spec {
    let pool = facts.pool(&spec);
    match persistent_tail_rho(width, &spec) {
        Some(rho) if m_cap > pool => Spec {
            tail_rows: pool,
            tail_rho: rho,
            ..spec
        },
        _ => spec,
    }
}
