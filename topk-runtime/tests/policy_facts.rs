//! The default map on other devices' facts: the H200's thresholds follow the SMs, CTAs per SM
//! and resident clusters, and the planner's device adjustments are made before compiling.

use topk_dsl::{Mapping, Proposal, Spec};
use topk_runtime::policy::{self, DeviceFacts, MeasuredOccupancy, Shape};

fn spec_on(facts: &DeviceFacts, k: u32, m_cap: u32, width: u32) -> Spec {
    policy::default_spec(facts, k, m_cap, width)
}

fn rule_on(facts: &DeviceFacts, m_cap: u32, width: u32) -> &'static str {
    let shape = Shape {
        k: 2048,
        m_cap,
        width,
    };
    policy::choose(facts, &shape).0.name
}

#[test]
fn ctas_per_sm_follow_the_launch_bounds_and_shared_memory() {
    let h200 = DeviceFacts::h200();
    let pool = |threads| Spec {
        threads,
        ..policy::persistent_spec(2048)
    };
    for (threads, ctas) in [(256, 4), (384, 3), (512, 2)] {
        assert_eq!(h200.ctas_per_sm(&pool(threads)), ctas, "{threads} threads");
    }
    assert_eq!(h200.pool(&pool(512)), 264);
    // Above K = 2048 the frontier doubles: one 512-thread CTA per SM.
    let wide_k = Spec {
        threads: 512,
        ..policy::persistent_spec(4096)
    };
    assert_eq!(h200.ctas_per_sm(&wide_k), 1);
    assert_eq!(h200.ctas_per_sm(&policy::cluster_spec(2048, 16)), 1);
    // 164 KiB of shared memory per SM (an A100): two 384-thread CTAs, three of 256.
    let a100 = DeviceFacts {
        smem_per_sm: 164 << 10,
        ..h200
    };
    assert_eq!(a100.ctas_per_sm(&pool(384)), 2);
    assert_eq!(a100.ctas_per_sm(&pool(256)), 3);
    // A count the occupancy calculator reported replaces the estimate for that layout only.
    let layout = topk_codegen::Layout::of(&pool(512), topk_codegen::Family::Persistent);
    let measured = DeviceFacts {
        measured: Some(MeasuredOccupancy {
            threads: 512,
            dynamic_smem: layout.dynamic_smem,
            ctas_per_sm: 1,
        }),
        ..h200
    };
    assert_eq!(measured.ctas_per_sm(&pool(512)), 1);
    assert_eq!(measured.ctas_per_sm(&pool(256)), 4);
}

#[test]
fn sixteen_cta_clusters_take_the_rows_of_one_wave_and_eight_the_rest() {
    let h200 = DeviceFacts::h200();
    for clusters16 in 0..=7 {
        let facts = DeviceFacts { clusters16, ..h200 };
        for m_cap in 1..=7 {
            for width in [1 << 18, 1 << 20, 3 << 20, 1 << 22] {
                let on_h200 = spec_on(&h200, 2048, m_cap, width);
                assert_eq!(on_h200.mapping, Mapping::Cluster { ctas: 16 });
                let spec = spec_on(&facts, 2048, m_cap, width);
                // Where fewer 16-CTA clusters are resident than rows, the same spec on 8 CTAs.
                let expected = if m_cap <= clusters16 {
                    on_h200
                } else {
                    Spec {
                        mapping: Mapping::Cluster { ctas: 8 },
                        ..on_h200
                    }
                };
                assert_eq!(spec, expected, "{clusters16} resident, {m_cap} x {width}");
            }
        }
    }
    // A device holding more 16-CTA clusters gives them as many rows.
    let more = DeviceFacts {
        clusters16: 10,
        ..h200
    };
    assert_eq!(rule_on(&more, 10, 1 << 20), "cluster16");
    assert_eq!(rule_on(&more, 11, 1 << 20), "cluster8");
    assert_eq!(rule_on(&h200, 8, 1 << 20), "cluster8");
}

#[test]
fn eight_cta_cluster_rows_follow_the_resident_clusters() {
    let h200 = DeviceFacts::h200();
    // The H200: 15 resident, so 16 rows of 256K-2M, 512 threads from 16 rows, 32M scores.
    assert_eq!(policy::cluster8_wave_rows(&h200), 16);
    assert_eq!(policy::sampled_cluster8_scores(&h200), 32 << 20);
    let more = DeviceFacts {
        clusters8: 20,
        ..h200
    };
    assert_eq!(rule_on(&h200, 17, 1 << 19), "persistent");
    assert_eq!(rule_on(&more, 21, 1 << 19), "cluster8");
    assert_eq!(rule_on(&more, 22, 1 << 19), "persistent");
    assert_eq!(spec_on(&more, 2048, 20, 1 << 20).threads, 1024);
    assert_eq!(spec_on(&more, 2048, 21, 1 << 20).threads, 512);
    assert_eq!(rule_on(&more, 42, 1 << 20), "cluster8");
    assert_eq!(rule_on(&more, 43, 1 << 20), "persistent");
    // Sampled from 1M at 8 rows or more; fewer rows sample from 2M, as 16-CTA clusters do.
    let few16 = DeviceFacts {
        clusters16: 2,
        ..h200
    };
    let sampled = |s: Spec| s.proposal != Proposal::Exact;
    assert!(!sampled(spec_on(&few16, 2048, 4, 1 << 20)));
    assert!(sampled(spec_on(&few16, 2048, 4, 1 << 21)));
    assert!(sampled(spec_on(&h200, 2048, 8, 1 << 20)));
    // No clusters: compute capability 8, or none resident.
    for facts in [
        DeviceFacts {
            cc_major: 8,
            clusters8: 0,
            clusters16: 0,
            ..h200
        },
        DeviceFacts {
            clusters8: 0,
            clusters16: 0,
            ..h200
        },
    ] {
        assert!(!facts.has_clusters());
        for (m_cap, width) in [(1, 1 << 18), (8, 1 << 20), (32, 1 << 20)] {
            assert!(!rule_on(&facts, m_cap, width).starts_with("cluster"));
        }
    }
}

#[test]
fn the_stagger_needs_two_ctas_per_sm_and_the_tail_is_the_pool() {
    let h200 = DeviceFacts::h200();
    let staggered = spec_on(&h200, 2048, 1024, 1 << 18);
    assert_eq!((staggered.stagger_us, staggered.tail_rows), (16, 264));
    // One 512-thread CTA per SM (less shared memory): no stagger, a pool of 132.
    let single = DeviceFacts {
        smem_per_sm: 100 << 10,
        ..h200
    };
    let spec = spec_on(&single, 2048, 1024, 1 << 18);
    assert_eq!((spec.stagger_us, spec.tail_rows), (0, 132));
    assert_eq!(
        Spec {
            stagger_us: 16,
            tail_rows: 264,
            ..spec
        },
        staggered
    );
    // The same where the occupancy calculator reported one CTA for the pool's layout.
    let layout = topk_codegen::Layout::of(&staggered, topk_codegen::Family::Persistent);
    let measured = DeviceFacts {
        measured: Some(MeasuredOccupancy {
            threads: 512,
            dynamic_smem: layout.dynamic_smem,
            ctas_per_sm: 1,
        }),
        ..h200
    };
    assert_eq!(spec_on(&measured, 2048, 1024, 1 << 18), spec);
    // 100 SMs: 200 workers, a tail of 200 rows, a stagger from 512 rows (four a worker, as a
    // power of two), none at 511.
    let smaller = DeviceFacts { sms: 100, ..h200 };
    let spec = spec_on(&smaller, 2048, 512, 1 << 18);
    assert_eq!((spec.stagger_us, spec.tail_rows), (16, 200));
    assert_eq!(spec_on(&smaller, 2048, 511, 1 << 18).stagger_us, 0);
    // Calls of at most one pool of rows have no tail.
    assert_eq!(spec_on(&smaller, 2048, 200, 1 << 17).tail_rows, 0);
    assert_eq!(spec_on(&smaller, 2048, 201, 1 << 17).tail_rows, 200);
}

#[test]
fn tuned_specs_take_the_tail_of_the_pool_they_run_on() {
    let h200 = DeviceFacts::h200();
    let tuned = policy::persistent_spec(2048);
    let tailed = policy::with_tail(&h200, tuned, 1024, 1 << 18);
    assert_eq!((tailed.tail_rows, tailed.tail_rho), (264, policy::TAIL_RHO));
    // Not over a pool's worth of rows, not on three-CTA pools, not twice.
    assert_eq!(policy::with_tail(&h200, tuned, 264, 1 << 18), tuned);
    let triple = Spec {
        threads: 384,
        ..tuned
    };
    assert_eq!(policy::with_tail(&h200, triple, 1024, 1 << 18), triple);
    assert_eq!(policy::with_tail(&h200, tailed, 1024, 1 << 18), tailed);
}

#[test]
fn the_h200_facts_read_as_documented() {
    let text = DeviceFacts::h200().to_string();
    assert_eq!(
        text,
        "132 SMs, compute capability 9.0, 228 KiB shared memory and 2048 threads per SM, \
         15 / 7 resident 8- / 16-CTA clusters"
    );
}
