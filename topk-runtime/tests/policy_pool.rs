//! The default persistent pool's knobs on the H200's facts: block size, prefetch, the late
//! start of half the pool, and the tail margin of its last rows.

use topk_dsl::{Mapping, Spec};
use topk_runtime::policy::{self, DeviceFacts};

/// The default map on the H200.
fn default_spec(k: u32, m_cap: u32, width: u32) -> Spec {
    policy::default_spec(&DeviceFacts::h200(), k, m_cap, width)
}

/// `spec` without its tail margin.
fn untailed(spec: Spec) -> Spec {
    Spec {
        tail_rows: 0,
        tail_rho: Spec::default().tail_rho,
        ..spec
    }
}

#[test]
fn persistent_block_size_follows_width_and_batch() {
    use topk_runtime::policy::{
        persistent_spec, persistent_spec_for, SHORT_PERSISTENT_WIDTH, TRIPLE_CTA_FROM_ROWS,
        TRIPLE_CTA_MAX_WIDTH,
    };
    let threads = |m_cap, width| {
        let spec = default_spec(2048, m_cap, width);
        assert_eq!(spec.mapping, Mapping::Persistent, "{m_cap} x {width}");
        // Same policy and view as the persistent default for that width: only the CTA size
        // differs.
        assert_eq!(spec.proposal, persistent_spec_for(2048, width).proposal);
        assert_eq!(spec.view_run, persistent_spec(2048).view_run);
        spec.threads
    };
    // Short rows: four CTAs per SM, three once the call has many rows.
    for width in [49_152, SHORT_PERSISTENT_WIDTH] {
        assert_eq!(threads(1024, width), 256, "width {width}");
        assert_eq!(
            threads(TRIPLE_CTA_FROM_ROWS - 1, width),
            256,
            "width {width}"
        );
        assert_eq!(threads(TRIPLE_CTA_FROM_ROWS, width), 384, "width {width}");
        assert_eq!(threads(24_576, width), 384, "width {width}");
    }
    // Up to 128K: three CTAs per SM for many rows, two for fewer.
    assert_eq!(threads(1024, TRIPLE_CTA_MAX_WIDTH), 512);
    assert_eq!(threads(TRIPLE_CTA_FROM_ROWS, TRIPLE_CTA_MAX_WIDTH), 384);
    assert_eq!(threads(8192, TRIPLE_CTA_MAX_WIDTH), 384);
    // Between 64K and 128K: three CTAs for many rows, two for fewer.
    assert_eq!(threads(24_576, SHORT_PERSISTENT_WIDTH + 1), 384);
    assert_eq!(threads(512, SHORT_PERSISTENT_WIDTH + 1), 512);
    // Wider rows: two CTAs per SM at every batch.
    assert_eq!(threads(8192, TRIPLE_CTA_MAX_WIDTH + 1), 512);
    // K above 2048 keeps 512 threads (its frontier leaves room for two CTAs).
    assert_eq!(default_spec(4096, 24_576, 40_000).threads, 512);
    assert_eq!(default_spec(4096, 8192, 1 << 17).threads, 512);
}

#[test]
fn three_cta_pools_at_k_2048_and_only_they_prefetch() {
    // Every default spec at K = 2048 sends one row-stream batch ahead exactly when it runs the
    // 384-thread pool (many rows up to 128K); other ranks and block sizes send none.
    let mut prefetching = 0;
    for k in [512u32, 1024, 2048, 4096] {
        for m_cap in [64u32, 512, 1024, 2048, 8192, 24_576] {
            for width in [16_384u32, 40_000, 65_536, 131_072, 262_144, 1 << 20] {
                let spec = default_spec(k, m_cap, width);
                let expected = u8::from(
                    k == 2048 && spec.mapping == Mapping::Persistent && spec.threads == 384,
                );
                assert_eq!(
                    spec.prefetch, expected,
                    "K = {k}, {m_cap} x {width}: {spec}"
                );
                assert_eq!(spec.validate(), Ok(()), "{spec}");
                prefetching += usize::from(expected);
            }
        }
    }
    // 2048-24576 rows of 16K-128K at K = 2048.
    assert_eq!(
        prefetching,
        3 * 4,
        "the 384-thread shapes of the grid above"
    );
}

#[test]
fn many_rows_from_256k_stagger_half_the_pool() {
    use topk_runtime::policy::{stagger_from_rows, STAGGER_FROM_WIDTH, STAGGER_US};
    // About four rows per worker, as a power of two: 1024 on the H200's 264 workers.
    let pool = default_spec(2048, 8192, 1 << 18);
    let from_rows = stagger_from_rows(&DeviceFacts::h200(), &pool);
    assert_eq!(from_rows, 1024);
    // Every staggered plan is a valid 512-thread persistent spec.
    for (m_cap, width) in [
        (from_rows, STAGGER_FROM_WIDTH),
        (8192, 1 << 18),
        (1024, 1 << 19),
        (4096, 1 << 20),
    ] {
        let spec = default_spec(2048, m_cap, width);
        assert_eq!(spec.stagger_us, STAGGER_US, "{m_cap} x {width}: {spec}");
        assert_eq!((spec.mapping, spec.threads), (Mapping::Persistent, 512));
        assert_eq!(spec.validate(), Ok(()));
    }
    // Not for fewer rows (512 rows of 256K: two a worker), narrower rows, three-CTA pools,
    // other ranks, or the few-row kernels.
    for (k, m_cap, width) in [
        (2048, from_rows - 1, 1 << 18),
        (2048, 512, 1 << 18),
        (2048, 8192, (1 << 18) - 1),
        (2048, 8192, 1 << 17),
        (1024, 8192, 1 << 18),
        (4096, 8192, 1 << 18),
        (2048, 4, 1 << 20),
    ] {
        let spec = default_spec(k, m_cap, width);
        assert_eq!(spec.stagger_us, 0, "K = {k}, {m_cap} x {width}: {spec}");
    }
}

#[test]
fn the_default_pool_widens_its_tail_rows_margin_from_128k_below_rho_2() {
    use topk_runtime::policy::{persistent_tail_rho, TAIL_FROM_WIDTH, TAIL_RHO};
    // 512-thread pools at K = 2048 from 128K, where the default margin is rho 1.75: the tail is
    // sized to the pool (264 workers on the H200) and the spec stays valid.
    for (m_cap, width) in [
        (512, TAIL_FROM_WIDTH),
        (1024, 1 << 18),
        (600, (1 << 19) - 1),
    ] {
        let tailed = default_spec(2048, m_cap, width);
        let spec = untailed(tailed);
        assert_eq!(
            persistent_tail_rho(width, &spec),
            Some(TAIL_RHO),
            "{m_cap} x {width}: {spec}"
        );
        assert_eq!((tailed.tail_rows, tailed.tail_rho), (264, TAIL_RHO));
        assert_eq!(tailed.validate(), Ok(()), "{tailed}");
        // A spec that has its tail keeps it.
        assert_eq!(persistent_tail_rho(width, &tailed), None);
    }
    // Calls of at most one pool of rows have no tail.
    assert_eq!(default_spec(2048, 264, 1 << 18).tail_rows, 0);
    // Each condition broken alone, from the 1024 x 256K default: narrower rows, a margin of 2
    // already (the default from 512K), three- and four-CTA pools, another rank, another map.
    let base = untailed(default_spec(2048, 1024, 1 << 18));
    let wide = topk_dsl::Spec {
        proposal: topk_runtime::policy::persistent_spec_for(2048, 1 << 20).proposal,
        ..base
    };
    let others = [
        ("narrower rows", base, TAIL_FROM_WIDTH - 1),
        ("rho 2", wide, 1 << 18),
        (
            "384 threads",
            topk_dsl::Spec {
                threads: 384,
                ..base
            },
            1 << 18,
        ),
        (
            "256 threads",
            topk_dsl::Spec {
                threads: 256,
                ..base
            },
            1 << 18,
        ),
        ("K = 1024", topk_dsl::Spec { k: 1024, ..base }, 1 << 18),
        (
            "cluster(8)",
            topk_dsl::Spec {
                mapping: Mapping::Cluster { ctas: 8 },
                ..base
            },
            1 << 18,
        ),
    ];
    for (why, spec, width) in others {
        assert_eq!(persistent_tail_rho(width, &spec), None, "{why}: {spec}");
    }
    // The default map's other pools at K = 2048: three CTAs for many rows of 128K, four for
    // short rows, and the default margin of 2 from 512K.
    for (m_cap, width) in [(4096, 1 << 17), (16_384, 1 << 16), (1024, 1 << 19)] {
        let spec = default_spec(2048, m_cap, width);
        assert_eq!(
            persistent_tail_rho(width, &spec),
            None,
            "{m_cap} x {width}: {spec}"
        );
    }
}
