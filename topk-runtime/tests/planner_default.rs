//! The default map: which family and proposal a shape gets without a spec or autotune record,
//! on the H200's facts (`policy_facts.rs` has the map on other facts).

use topk_dsl::{Mapping, Proposal, RowLocalVariant, Spec};
use topk_runtime::policy::{self, sampled_proposal, DeviceFacts, Shape};

/// The default map on the H200.
fn default_spec(k: u32, m_cap: u32, width: u32) -> Spec {
    policy::default_spec(&DeviceFacts::h200(), k, m_cap, width)
}

/// The rule of the default map that takes a shape on `facts`.
fn rule(facts: &DeviceFacts, k: u32, m_cap: u32, width: u32) -> &'static str {
    policy::choose(facts, &Shape { k, m_cap, width }).0.name
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
fn short_rows_go_to_the_streaming_kernel_or_the_pool() {
    use topk_runtime::policy::{pool_from_rows, SHORT_POOL_FROM_ROWS};
    // Small batches: the streaming row-local kernel (faster than the register tile at every
    // batch size measured).
    for width in [4_096, 16_384, 40_000] {
        assert_eq!(
            default_spec(2048, 16, width).mapping,
            Mapping::RowLocal(RowLocalVariant::Streaming)
        );
    }
    assert_eq!(
        default_spec(2048, 512, 131_072).mapping,
        Mapping::Persistent
    );
    // Rows up to 16K fill the pool from 512 rows, wider ones from 1024.
    assert_eq!(pool_from_rows(16_384), SHORT_POOL_FROM_ROWS);
    for (rows, width, pooled) in [
        (511, 16_384, false),
        (512, 16_384, true),
        (512, 8_192, true),
        (1023, 40_000, false),
        (1024, 40_000, true),
        (16_384, 8_192, true),
    ] {
        let spec = default_spec(2048, rows, width);
        spec.validate().unwrap();
        assert_eq!(
            spec.mapping == Mapping::Persistent,
            pooled,
            "{rows} x {width}: {spec}"
        );
        if pooled && width <= 16_384 {
            assert!(spec.exact_below() > width, "{spec}: every row exact");
        }
    }
    // Large batches take 384-thread CTAs, smaller ones 256.
    assert_eq!(default_spec(2048, 4096, 16_384).threads, 384);
    assert_eq!(default_spec(2048, 1024, 12_289).threads, 256);
    // No batch size takes the register tile by default (a spec still can).
    for (rows, width) in [(512, 16_384), (4096, 12_288), (16, 8_192)] {
        assert_ne!(
            default_spec(2048, rows, width).mapping,
            Mapping::RowLocal(RowLocalVariant::Register)
        );
    }
}

#[test]
fn rows_up_to_64k_retain_a_narrower_margin() {
    use topk_dsl::{Centi, Proposal};
    use topk_runtime::policy::{persistent_spec_for, SHORT_MARGIN_MAX_WIDTH};
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
        topk_runtime::policy::persistent_spec(512)
    );
}

#[test]
fn a_few_long_rows_take_the_cluster_kernel_where_clusters_exist() {
    let h200 = DeviceFacts::h200();
    let cc8 = DeviceFacts {
        cc_major: 8,
        clusters8: 0,
        clusters16: 0,
        ..h200
    };
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
        let name = format!("cluster{ctas}");
        assert_eq!(rule(&h200, 2048, m_cap, width), name, "{m_cap} x {width}");
        let spec = default_spec(2048, m_cap, width);
        assert_eq!(spec.mapping, Mapping::Cluster { ctas }, "{m_cap} x {width}");
        spec.validate().unwrap();
        // Before compute capability 9.0 there are no clusters.
        let older = policy::default_spec(&cc8, 2048, m_cap, width);
        assert!(
            matches!(older.mapping, Mapping::Staged | Mapping::Persistent),
            "{older}"
        );
        older.validate().unwrap();
    }
    assert_eq!(
        policy::default_spec(&cc8, 2048, 8, 1 << 20).mapping,
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
        assert_eq!(topk_runtime::policy::cluster_spec(512, ctas), exact_1024);
    }
    for (m_cap, width) in [
        (17u32, 1u32 << 19),
        (33, 1 << 20),
        (9, 1 << 17),
        (1, (1 << 16) - 1),
        (16, 1 << 22),
        (1, (1 << 22) + 4),
    ] {
        let name = rule(&h200, 2048, m_cap, width);
        assert!(!name.starts_with("cluster"), "{m_cap} x {width}: {name}");
    }
    // Up to 8 rows of 64K-256K: exact 8-CTA clusters.
    for (m_cap, width) in [(1u32, 1u32 << 16), (8, 1 << 17), (4, (1 << 18) - 1)] {
        assert_eq!(
            rule(&h200, 2048, m_cap, width),
            "cluster8",
            "{m_cap} x {width}"
        );
        assert_eq!(
            policy::default_spec(&h200, 2048, m_cap, width),
            topk_runtime::policy::cluster_spec(2048, 8),
            "{m_cap} x {width}"
        );
    }
}

#[test]
fn long_rows_on_clusters_sample_the_view_and_shorter_ones_build_the_exact_boundary() {
    use topk_runtime::policy::{persistent_spec_for, sampled_cluster_spec};
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
        topk_runtime::policy::cluster_spec(128, 8)
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
            topk_runtime::policy::cluster_spec(2048, ctas),
            "{m_cap} x {width}"
        );
    }
}

#[test]
fn a_few_very_long_rows_take_the_stage_chain() {
    use topk_runtime::policy::{context_parallel_spec, staged_pays};
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
    use topk_runtime::policy::{persistent_spec, persistent_spec_for, WIDE_MARGIN_FROM_WIDTH};
    let rho = |spec: topk_dsl::Spec| match spec.proposal {
        Proposal::Sampled { rho, .. } => rho,
        Proposal::Exact => panic!("{spec} does not sample"),
    };
    for width in [131_072, 262_144, WIDE_MARGIN_FROM_WIDTH - 1] {
        // 512 rows: the two-CTA pool at every width, not staggered (many rows of 128K take three
        // CTAs; many rows from 256K stagger), with the tail margin of more rows than the pool.
        let spec = default_spec(2048, 512, width);
        assert_eq!(untailed(spec), persistent_spec(2048), "{width}");
        assert_eq!(spec.tail_rows, 264, "{spec}");
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
    use topk_runtime::policy::{persistent_spec, sampled_cluster_spec, EXACT_BELOW_PER_K};
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
