//! The device's facts against the kernels the default map loads on it: CTAs per SM against the
//! occupancy calculator, resident clusters against the driver's count for the cluster kernel,
//! and one compile per plan. Needs a GPU: run with `--ignored`.

use topk_dsl::Mapping;
use topk_runtime::cuda::{Gpu, Plan, PlanRequest};
use topk_runtime::policy::{self, DeviceFacts};

mod gpu_support;
use gpu_support::gpu;

/// One shape per rule and knob of the map on the H200 (K, rows, width).
const SHAPES: &[(u32, u32, u32)] = &[
    (2048, 16, 8_192),       // register row-local
    (2048, 16, 40_000),      // streaming row-local
    (2048, 1, 1 << 20),      // 16-CTA cluster, exact
    (2048, 4, 1 << 22),      // 16-CTA cluster, sampled
    (2048, 8, 1 << 20),      // 8-CTA cluster, sampled
    (2048, 16, 1 << 20),     // 8-CTA cluster, sampled, 512 threads
    (2048, 16, 1 << 22),     // stage chain
    (2048, 4096, 16_384),    // 384-thread pool, prefetch
    (2048, 16_384, 1 << 16), // 256-thread pool
    (2048, 1024, 1 << 18),   // 512-thread pool, stagger and tail
    (2048, 600, 1 << 17),    // tail
    (4096, 1024, 1 << 18),   // 512-thread pool above K = 2048
];

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn the_facts_agree_with_the_device_and_every_default_plan_compiles_once() {
    let gpu = gpu();
    let facts = gpu.facts();
    let props = gpu.props().clone();
    println!("{}: {facts}", props.name);
    assert_eq!(
        (facts.sms, facts.cc_major, facts.cc_minor, facts.smem_per_sm),
        (props.sms, props.cc_major, props.cc_minor, props.smem_per_sm)
    );
    if props.name.contains("H200") {
        assert_eq!(facts, DeviceFacts::h200(), "the H200's documented facts");
    }
    if props.cc_major >= 9 {
        assert!(facts.has_clusters(), "{facts}");
    } else {
        assert_eq!((facts.clusters8, facts.clusters16), (0, 0));
    }
    for &(k, rows, width) in SHAPES {
        let what = format!("K={k} {rows} x {width}");
        // A fresh handle: its memory cache holds the facts' probe, then the plan's kernel.
        let fresh = Gpu::open(0).unwrap();
        assert_eq!(fresh.facts(), facts);
        let before = fresh.loaded_modules();
        let plan = Plan::with_store(&fresh, PlanRequest::new(k, rows, width), None)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(fresh.loaded_modules(), before + 1, "{what}: one compile");
        assert_eq!(
            plan.spec,
            policy::default_spec(&facts, k, rows, width),
            "{what}"
        );
        if plan.spec.mapping == Mapping::Persistent {
            assert_eq!(
                plan.ctas_per_sm,
                facts.ctas_per_sm(&plan.spec),
                "{what}: {}",
                plan.spec
            );
        }
        if let (Mapping::Cluster { ctas }, 1024) = (plan.spec.mapping, plan.spec.threads) {
            let resident =
                fresh.resident_clusters(&plan.loaded, ctas as u32, plan.block, plan.smem);
            let counted = if ctas == 16 {
                facts.clusters16
            } else {
                facts.clusters8
            };
            assert_eq!(resident, Some(counted), "{what}: {}", plan.spec);
        }
        println!("{what}: {} ({} CTAs per SM)", plan.spec, plan.ctas_per_sm);
    }
}
