//! The default map: which family and proposal a shape gets without a spec or autotune record.

use topk_dsl::{Mapping, Proposal, RowLocalVariant};
use topk_runtime::cuda::plan::{default_spec, sampled_proposal};

#[test]
fn the_view_keeps_its_sample_rank_as_k_shrinks() {
    for (k, stride) in [
        (16384, 128),
        (4096, 128),
        (2048, 128),
        (1024, 64),
        (512, 32),
        (256, 16),
    ] {
        match sampled_proposal(k) {
            Proposal::Sampled { stride: s, .. } => assert_eq!(s, stride, "K = {k}"),
            Proposal::Exact => panic!("K = {k} should sample"),
        }
        let spec = default_spec(k, 4096, 262_144);
        spec.validate().unwrap();
        // q = ceil(1.75 K / s): 28 samples above the target at every sampled K up to 2048.
        if k <= 2048 {
            assert_eq!(spec.sample_rank(), Some(28), "K = {k}");
        }
    }
    for k in [1, 7, 100, 255] {
        assert_eq!(sampled_proposal(k), Proposal::Exact, "K = {k}");
        default_spec(k, 64, 262_144).validate().unwrap();
    }
}

#[test]
fn short_rows_go_to_the_row_local_kernels() {
    assert_eq!(
        default_spec(2048, 512, 16_384).mapping,
        Mapping::RowLocal(RowLocalVariant::Register)
    );
    assert_eq!(
        default_spec(2048, 512, 40_000).mapping,
        Mapping::RowLocal(RowLocalVariant::Streaming)
    );
    assert_eq!(
        default_spec(2048, 512, 131_072).mapping,
        Mapping::Persistent
    );
    // Large batches of mid-width rows: the persistent pool (crossover sweep).
    let big = default_spec(2048, 4096, 40_000);
    assert_eq!(big.mapping, Mapping::Persistent);
    big.validate().unwrap();
    // Large batches of rows wider than 12K: the persistent pool too, every row of it exact
    // (exact_below); narrower ones and small batches keep the register tile.
    let wide16 = default_spec(2048, 4096, 16_384);
    assert_eq!(wide16.mapping, Mapping::Persistent);
    assert_eq!(wide16.threads, 384);
    assert!(wide16.exact_below() >= 16_384);
    assert_eq!(default_spec(2048, 1024, 12_289).threads, 256);
    assert_eq!(
        default_spec(2048, 4096, 12_288).mapping,
        Mapping::RowLocal(RowLocalVariant::Register)
    );
    assert_eq!(
        default_spec(2048, 1023, 16_384).mapping,
        Mapping::RowLocal(RowLocalVariant::Register)
    );
}

#[test]
fn rows_up_to_64k_retain_a_narrower_margin() {
    use topk_dsl::{Centi, Proposal};
    use topk_runtime::cuda::plan::{persistent_spec_for, SHORT_MARGIN_MAX_WIDTH};
    for width in [40_000, SHORT_MARGIN_MAX_WIDTH] {
        let spec = default_spec(2048, 4096, width);
        assert!(
            matches!(
                spec.proposal,
                Proposal::Sampled {
                    rho: Centi(150),
                    rescue: Some(Centi(200)),
                    exact_below: 24_576,
                    ..
                }
            ),
            "{spec}"
        );
        assert_eq!(spec.proposal, persistent_spec_for(2048, width).proposal);
        spec.validate().unwrap();
    }
    assert!(matches!(
        default_spec(2048, 4096, SHORT_MARGIN_MAX_WIDTH + 1).proposal,
        Proposal::Sampled {
            rho: Centi(175),
            ..
        }
    ));
    // Measured at K = 2048 only: smaller K keep their margin.
    assert_eq!(
        persistent_spec_for(512, 40_000),
        topk_runtime::cuda::plan::persistent_spec(512)
    );
}

#[test]
fn a_few_long_rows_take_the_cluster_kernel_where_clusters_exist() {
    use topk_runtime::cuda::plan::{cluster_ctas, default_spec_on};
    for (m_cap, width, ctas) in [
        (1u32, 1u32 << 18, 16u8),
        (7, 1 << 18, 16),
        (1, 1 << 22, 16),
        (7, 1 << 22, 16),
        (8, 1 << 18, 8),
        (16, 1 << 18, 8),
        (8, 1 << 20, 8),
        (16, 1 << 21, 8),
        (32, 1 << 20, 8),
        (8, 1 << 22, 8),
    ] {
        assert_eq!(cluster_ctas(m_cap, width), Some(ctas), "{m_cap} x {width}");
        let spec = default_spec(2048, m_cap, width);
        assert_eq!(spec.mapping, Mapping::Cluster { ctas }, "{m_cap} x {width}");
        spec.validate().unwrap();
        assert_eq!(default_spec_on(9, 2048, m_cap, width), spec);
        // Before compute capability 9.0 there are no clusters.
        let older = default_spec_on(8, 2048, m_cap, width);
        assert!(
            matches!(older.mapping, Mapping::Staged | Mapping::Persistent),
            "{older}"
        );
        older.validate().unwrap();
    }
    assert_eq!(
        default_spec_on(8, 2048, 8, 1 << 20).mapping,
        Mapping::Staged
    );
    // The cluster spec is the exact proposal on 1024 threads, nothing else changed.
    for ctas in [8u8, 16] {
        let exact_1024 = topk_dsl::Spec {
            k: 512,
            mapping: Mapping::Cluster { ctas },
            proposal: topk_dsl::Proposal::Exact,
            threads: 1024,
            ..topk_dsl::Spec::default()
        };
        assert_eq!(
            topk_runtime::cuda::plan::cluster_spec(512, ctas),
            exact_1024
        );
    }
    for (m_cap, width) in [
        (17u32, 1u32 << 19),
        (33, 1 << 20),
        (1, 1 << 17),
        (16, 1 << 22),
        (1, (1 << 22) + 4),
    ] {
        assert_eq!(cluster_ctas(m_cap, width), None, "{m_cap} x {width}");
    }
}

#[test]
fn long_rows_on_clusters_sample_the_view_and_shorter_ones_build_the_exact_boundary() {
    use topk_runtime::cuda::plan::{persistent_spec_for, sampled_cluster_spec};
    for (m_cap, width, ctas) in [
        (1u32, 1u32 << 21, 16u8),
        (7, 1 << 22, 16),
        (8, 1 << 20, 8),
        (32, 1 << 20, 8),
        (16, 1 << 21, 8),
        (8, 1 << 22, 8),
    ] {
        let spec = default_spec(2048, m_cap, width);
        // 512-thread CTAs (two per SM) from 16 rows on 8-CTA clusters.
        let threads = if ctas == 8 && m_cap >= 16 { 512 } else { 1024 };
        assert_eq!(
            spec,
            topk_dsl::Spec {
                threads,
                ..sampled_cluster_spec(2048, ctas, width)
            },
            "{m_cap} x {width}"
        );
        // The persistent kernel's view and margin for that width (not its short-row rule).
        let persistent = persistent_spec_for(2048, width);
        assert_eq!(spec.proposal, persistent.proposal.with_exact_below(0));
        assert_eq!(spec.view_run, persistent.view_run);
        spec.validate().unwrap();
    }
    // Above K = 2048 two 512-thread CTAs would not fit an SM: 1024 threads.
    assert_eq!(default_spec(4096, 16, 1 << 20).threads, 1024);
    assert_eq!(default_spec(2048, 16, 1 << 20).threads, 512);
    // Below K = 256 the proposal is exact: the exact cluster kernel on 1024 threads.
    assert_eq!(
        default_spec(128, 32, 1 << 20),
        topk_runtime::cuda::plan::cluster_spec(128, 8)
    );
    for (m_cap, width, ctas) in [
        (1u32, 1u32 << 20, 16u8),
        (4, 1 << 20, 16),
        (7, 1 << 18, 16),
        (8, 1 << 19, 8),
        (16, 1 << 18, 8),
    ] {
        assert_eq!(
            default_spec(2048, m_cap, width),
            topk_runtime::cuda::plan::cluster_spec(2048, ctas),
            "{m_cap} x {width}"
        );
    }
}

#[test]
fn a_few_very_long_rows_take_the_stage_chain() {
    use topk_runtime::cuda::plan::{context_parallel_spec, staged_pays};
    for (m_cap, width) in [(16u32, 1u32 << 22), (32, 1 << 22), (1, 1 << 30)] {
        assert!(staged_pays(m_cap, width), "{m_cap} x {width}");
        let spec = default_spec(2048, m_cap, width);
        assert_eq!(spec.mapping, Mapping::Staged, "{m_cap} x {width}");
        // The context-parallel policy: the stages sample the stride view.
        assert_eq!(spec.proposal, context_parallel_spec(2048).proposal);
        assert_eq!(spec.view_run, 1);
    }
    for (m_cap, width) in [(33u32, 1u32 << 20), (64, 1 << 20), (33, 1 << 22)] {
        assert!(!staged_pays(m_cap, width), "{m_cap} x {width}");
        assert_eq!(
            default_spec(2048, m_cap, width).mapping,
            Mapping::Persistent,
            "{m_cap} x {width}"
        );
    }
}

#[test]
fn persistent_block_size_follows_width_and_batch() {
    use topk_runtime::cuda::plan::{
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
fn kvsplit_workspace_fixes_the_spill_so_an_overflowing_segment_forces_a_rescan() {
    use topk_codegen::{Family, Layout, SEGMENT_CAP};
    use topk_runtime::cuda::plan::{workspace_size, CONTROL_WORDS};
    for splits in [2u8, 4, 8] {
        let spec = topk_dsl::Spec::parse(&format!(
            "k=512,map=kvsplit({splits}),propose=sampled(stride=128,rho=1.5,rescue=1.75)"
        ))
        .unwrap();
        let layout = Layout::of(&spec, Family::KvSplit { splits });
        for width in [20_281u32, 262_144, 1 << 20] {
            let (spill, bytes) = workspace_size(&layout, width, 264);
            // The finisher copies staged pairs only when the row's total fits CAP1 + spill;
            // that total must then fit one segment's staging, whatever the width.
            assert_eq!(layout.frontier_cap1 + spill, SEGMENT_CAP, "width {width}");
            let words = CONTROL_WORDS as u64
                + 264
                    * (4 * spill as u64
                        + (splits as u64 * 2 * SEGMENT_CAP as u64 + 2 + splits as u64));
            assert_eq!(bytes, 4 * words);
        }
    }
    // Other families: spill follows the width up to its bound, never the row count.
    let spec = topk_dsl::Spec::parse("k=2048,map=persistent").unwrap();
    let layout = Layout::of(&spec, Family::Persistent);
    let (small, _) = workspace_size(&layout, 5000, 264);
    assert_eq!(small, 5000 - layout.frontier_cap1);
    let (a, wa) = workspace_size(&layout, 1 << 20, 264);
    let (b, wb) = workspace_size(&layout, 1 << 22, 264);
    assert_eq!((a, wa), (b, wb));
}

#[test]
fn every_default_spec_is_valid_and_generates() {
    for k in [1u32, 100, 256, 512, 2048, 4096, 16_384] {
        for m_cap in [1u32, 64, 1024, 8192] {
            for width in [
                2_048u32, 16_384, 40_000, 65_536, 131_072, 1_048_576, 4_194_304,
            ] {
                let spec = default_spec(k, m_cap, width);
                spec.validate()
                    .unwrap_or_else(|e| panic!("K={k} M={m_cap} N={width}: {spec}: {e}"));
                topk_codegen::generate(&spec)
                    .unwrap_or_else(|e| panic!("K={k} M={m_cap} N={width}: {spec}: {e}"));
            }
        }
    }
}

#[test]
fn rows_from_512k_retain_a_wider_margin() {
    use topk_dsl::{Centi, Proposal};
    use topk_runtime::cuda::plan::{persistent_spec, persistent_spec_for, WIDE_MARGIN_FROM_WIDTH};
    let rho = |spec: topk_dsl::Spec| match spec.proposal {
        Proposal::Sampled { rho, .. } => rho,
        Proposal::Exact => panic!("{spec} does not sample"),
    };
    for width in [131_072, 262_144, WIDE_MARGIN_FROM_WIDTH - 1] {
        // 512 rows: the two-CTA pool at every width, not staggered (many rows of 128K take three
        // CTAs; many rows from 256K stagger).
        let spec = default_spec(2048, 512, width);
        assert_eq!(spec, persistent_spec(2048), "{width}");
        assert_eq!(rho(spec), Centi(175));
    }
    for width in [WIDE_MARGIN_FROM_WIDTH, 1 << 20] {
        // The stagger of calls this large is checked in many_rows_from_256k_stagger_half_the_pool.
        let spec = topk_dsl::Spec {
            stagger_us: 0,
            ..default_spec(2048, 4096, width)
        };
        assert_eq!(spec, persistent_spec_for(2048, width), "{width}");
        assert_eq!(rho(spec), Centi(200), "{width}");
        // Nothing else moves: same stride, rescue, view and threads as the narrower default.
        let narrow = persistent_spec(2048);
        assert_eq!(
            topk_dsl::Spec {
                proposal: narrow.proposal,
                ..spec
            },
            narrow
        );
        spec.validate().unwrap();
    }
    // Exact proposals (small K) have no margin to widen; smaller sampled K keep theirs.
    assert_eq!(persistent_spec_for(64, 1 << 20), persistent_spec(64));
    assert_eq!(persistent_spec_for(512, 1 << 20), persistent_spec(512));
    assert!(matches!(
        persistent_spec(512).proposal,
        Proposal::Sampled { .. }
    ));
}

#[test]
fn short_rows_of_the_persistent_default_take_the_exact_boundary() {
    use topk_dsl::{Mapping, Proposal};
    use topk_runtime::cuda::plan::{persistent_spec, sampled_cluster_spec, EXACT_BELOW_PER_K};
    // 12 K up to K = 2048, then capped at 24576 (rows that stay in L2 for the second pass).
    for (k, below) in [
        (256, 3072),
        (512, 6144),
        (2048, 24_576),
        (4096, 24_576),
        (16_384, 24_576),
    ] {
        assert_eq!(persistent_spec(k).exact_below(), below, "k={k}");
        assert_eq!(EXACT_BELOW_PER_K * k.min(2048), below);
    }
    // Every persistent default carries it (the width only moves the margin and the block size).
    for (m_cap, width) in [
        (24_576, 65_536),
        (4096, 131_072),
        (512, 1 << 20),
        (16, 300_000),
    ] {
        let spec = default_spec(2048, m_cap, width);
        spec.validate().unwrap();
        if spec.mapping == Mapping::Persistent {
            assert_eq!(spec.exact_below(), 24_576, "{spec}");
        } else {
            assert_eq!(spec.exact_below(), 0, "{spec}");
        }
    }
    // The sampled clusters borrow the persistent view and margin, not the short-row rule.
    for ctas in [8, 16] {
        let cluster = sampled_cluster_spec(2048, ctas, 1 << 20);
        cluster.validate().unwrap();
        assert!(matches!(
            cluster.proposal,
            Proposal::Sampled { exact_below: 0, .. }
        ));
    }
    // Exact proposals (K below 256) have nothing to switch off.
    assert_eq!(persistent_spec(64).exact_below(), 0);
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
    use topk_runtime::cuda::plan::{STAGGER_FROM_ROWS, STAGGER_FROM_WIDTH, STAGGER_US};
    // Every staggered plan is a valid 512-thread persistent spec.
    for (m_cap, width) in [
        (STAGGER_FROM_ROWS, STAGGER_FROM_WIDTH),
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
        (2048, STAGGER_FROM_ROWS - 1, 1 << 18),
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
    use topk_runtime::cuda::plan::{persistent_tail_rho, TAIL_FROM_WIDTH, TAIL_RHO};
    // 512-thread pools at K = 2048 from 128K, where the default margin is rho 1.75: the planner
    // sizes the tail to the pool and the spec stays valid.
    for (m_cap, width) in [
        (512, TAIL_FROM_WIDTH),
        (1024, 1 << 18),
        (600, (1 << 19) - 1),
    ] {
        let spec = default_spec(2048, m_cap, width);
        assert_eq!(
            persistent_tail_rho(width, &spec),
            Some(TAIL_RHO),
            "{m_cap} x {width}: {spec}"
        );
        let tailed = topk_dsl::Spec {
            tail_rows: 264,
            tail_rho: TAIL_RHO,
            ..spec
        };
        assert_eq!(tailed.validate(), Ok(()), "{tailed}");
        // A spec that has its tail keeps it.
        assert_eq!(persistent_tail_rho(width, &tailed), None);
    }
    // Each condition broken alone, from the 1024 x 256K default: narrower rows, a margin of 2
    // already (the default from 512K), three- and four-CTA pools, another rank, another map.
    let base = default_spec(2048, 1024, 1 << 18);
    let wide = topk_dsl::Spec {
        proposal: topk_runtime::cuda::plan::persistent_spec_for(2048, 1 << 20).proposal,
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
