//! The policy module against the default map it replaces (`cuda::default_map`) and the
//! planner's device fix-ups of that map (16-CTA clusters to 8 where fewer are resident than
//! rows, the stagger only at two CTAs per SM, the tail sized to the pool).

use topk_dsl::{Mapping, Spec};
use topk_runtime::cuda::default_map as old;
use topk_runtime::policy::{self, DeviceFacts};

/// What the old planner compiled for the default map: `default_spec_on`, then its fix-ups with
/// the occupancy the calculator reports (here the facts' model) and the 16-CTA clusters the
/// driver reports.
fn old_planned(facts: &DeviceFacts, k: u32, m_cap: u32, width: u32) -> Spec {
    let mut spec = old::default_spec_on(facts.cc_major, k, m_cap, width);
    if spec.mapping == (Mapping::Cluster { ctas: 16 }) && facts.clusters16 < m_cap {
        spec.mapping = Mapping::Cluster { ctas: 8 };
    }
    if spec.stagger_us > 0 && facts.ctas_per_sm(&spec) != 2 {
        spec.stagger_us = 0;
    }
    if let Some(rho) = old::persistent_tail_rho(width, &spec) {
        let pool = facts.sms * facts.ctas_per_sm(&spec);
        if m_cap > pool {
            let tailed = Spec {
                tail_rows: pool,
                tail_rho: rho,
                ..spec
            };
            if facts.ctas_per_sm(&tailed) == facts.ctas_per_sm(&spec) {
                spec = tailed;
            }
        }
    }
    spec
}

fn ks() -> Vec<u32> {
    vec![
        1, 7, 100, 128, 255, 256, 300, 512, 1000, 1024, 2047, 2048, 2049, 3000, 4096, 16_384,
    ]
}

fn rows() -> Vec<u32> {
    let mut rows: Vec<u32> = (0..=40).collect();
    for r in [
        63, 64, 65, 255, 256, 263, 264, 265, 396, 397, 511, 512, 513, 527, 528, 529, 1023, 1024,
        1025, 1055, 1056, 1057, 2047, 2048, 2049, 4096, 8192, 24_576, 65_536,
    ] {
        rows.push(r);
    }
    rows
}

fn widths() -> Vec<u32> {
    let mut w = vec![1u32, 2048, 8192, 12_288, 12_289, 24_576, 40_000, 3 << 20];
    for edge in [
        1u32 << 14,
        49_152,
        1 << 16,
        1 << 17,
        1 << 18,
        1 << 19,
        1 << 20,
        1 << 21,
        1 << 22,
        1 << 23,
        1 << 27,
        1 << 30,
        topk_runtime::sharding::MAX_SHARDED_POSITIONS as u32,
    ] {
        w.extend([edge - 1, edge, edge + 1]);
    }
    w.push(topk_runtime::cuda::plan::MAX_WIDTH);
    w
}

fn assert_same_on(facts: &DeviceFacts) -> usize {
    let mut n = 0;
    for k in ks() {
        for m_cap in rows() {
            for width in widths() {
                let new = policy::default_spec(facts, k, m_cap, width);
                let old = old_planned(facts, k, m_cap, width);
                assert_eq!(new, old, "K={k} {m_cap} x {width} on {facts:?}");
                n += 1;
            }
        }
    }
    n
}

#[test]
fn the_policy_gives_the_old_default_map_on_the_h200_with_and_without_clusters() {
    let h200 = DeviceFacts::h200();
    assert_same_on(&h200);
    // Compute capability 8: no clusters.
    let cc8 = DeviceFacts {
        cc_major: 8,
        clusters8: 0,
        clusters16: 0,
        ..h200
    };
    let n = assert_same_on(&cc8);
    assert!(n > 30_000, "{n} shapes");
}

#[test]
fn the_policy_makes_the_old_planners_fixups_before_compiling() {
    let h200 = DeviceFacts::h200();
    // Fewer 16-CTA clusters resident than rows (none where the size is unsupported): 8 CTAs.
    for clusters16 in 0..=7 {
        assert_same_on(&DeviceFacts { clusters16, ..h200 });
    }
    // Fewer CTAs per SM (less shared memory): the stagger only where an SM holds two of the
    // pool's CTAs, the tail sized to the pool.
    for smem_kib in [164, 100] {
        assert_same_on(&DeviceFacts {
            smem_per_sm: smem_kib << 10,
            ..h200
        });
    }
    // Other SM counts with the same stagger threshold (about four rows per worker, as a power of
    // two: 1024 rows from 128 to 255 SMs at two CTAs per SM): the tail sized to their pools.
    for sms in [128, 144, 200] {
        assert_same_on(&DeviceFacts { sms, ..h200 });
    }
}
