//! Phase-timing builds: the probe constant turns on the hooks of `cuda/probe.cu`, the ordinary
//! source leaves them empty, and the packed word decodes to the durations it was packed from.

use topk_codegen::probe::{
    generate_probed, start_offsets_us, PhaseTimes, RowStamp, PASS_UNIT_NS, PHASE_UNIT_NS,
    START_UNIT_NS,
};
use topk_codegen::{generate, CodegenError};
use topk_dsl::Spec;

#[test]
fn the_probed_build_defines_the_probe_constant_and_changes_nothing_else() {
    for text in [
        "k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5)",
        "k=2048,map=persistent,propose=sampled(stride=128,rho=1.75,rescue=2.5),view=run(2)",
        "k=512,map=persistent,propose=exact",
        "k=2048,map=cluster(16),propose=exact,threads=1024",
        "k=2048,map=cluster(8),propose=sampled(stride=128,rho=1.75,rescue=2.5),threads=1024",
    ] {
        let spec = Spec::parse(text).unwrap();
        let plain = generate(&spec).unwrap();
        let probed = generate_probed(&spec).unwrap();
        assert!(!plain.source.contains("#define PHASE_PROBE"), "{text}");
        assert_eq!(probed.source.matches("#define PHASE_PROBE 1\n").count(), 1);
        for (name, unit) in [
            ("PROBE_PHASE_UNIT_NS", PHASE_UNIT_NS),
            ("PROBE_PASS_UNIT_NS", PASS_UNIT_NS),
            ("PROBE_START_UNIT_NS", START_UNIT_NS),
        ] {
            assert!(probed
                .source
                .contains(&format!("#define {name} {unit}ull\n")));
        }
        // The probed source is the ordinary one with the probe's defines in its prelude.
        let at = probed.source.find("\n// Phase probe build").unwrap();
        let end = probed.source[at..].find("ull\n\n").unwrap() + at + 4;
        let without = format!("{}{}", &probed.source[..at], &probed.source[end..]);
        assert_eq!(without, plain.source, "{text}");
        assert_eq!(probed.entry, plain.entry);
    }
}

#[test]
fn select_row_calls_every_hook_once_and_the_hooks_are_empty_without_the_constant() {
    let source = generate(&Spec::default()).unwrap().source;
    let select = &source[source.find("__device__ int select_row(").unwrap()..];
    let select = &select[..select.find("\n}\n").unwrap()];
    for hook in [
        "PROBE_ROW_START();",
        "PROBE_MARK(PROBE_PROPOSED);",
        "PROBE_MARK(PROBE_FRONTIER);",
        "return PROBE_ROW_END(route, q0);",
    ] {
        assert_eq!(select.matches(hook).count(), 1, "{hook}");
    }
    // The #else branch: no code, and the route word is the route.
    let plain = &source[source.find("#else\n#define PROBE_ROW_START()").unwrap()..];
    let plain = &plain[..plain.find("#endif").unwrap()];
    assert!(plain.contains("#define PROBE_MARK(at)\n"));
    assert!(plain.contains("#define PROBE_ROW_END(route, q0) (route)\n"));
}

#[test]
fn the_cluster_kernel_calls_every_hook_once_and_rank_0_ends_the_row() {
    let spec = Spec::parse("k=2048,map=cluster(16),propose=exact,threads=1024").unwrap();
    let source = generate(&spec).unwrap().source;
    let entry = &source[source.find("ENTRY(ENTRY_PARAMS)").unwrap()..];
    for (hook, count) in [
        ("PROBE_ROW_START();", 1),
        // After the sampled routes and after the exact boundary: a recovered row is marked at
        // the later one.
        ("PROBE_MARK(PROBE_PROPOSED);", 2),
        ("PROBE_MARK(PROBE_FRONTIER);", 1),
        ("route = PROBE_ROW_END(route, q0);", 1),
    ] {
        assert_eq!(entry.matches(hook).count(), count, "{hook}");
    }
    let end = entry.find("PROBE_ROW_END").unwrap();
    let rank0 = entry[..end].rfind("if (rank == 0)").unwrap();
    assert!(!entry[rank0..end].contains("cluster_sync"));
}

#[test]
fn only_the_persistent_and_cluster_kernels_have_a_probed_build() {
    let spec = Spec::parse("map=rowlocal(streaming),propose=exact,threads=1024").unwrap();
    assert!(matches!(
        generate_probed(&spec),
        Err(CodegenError::Unsupported(why)) if why.contains("persistent")
    ));
}

#[test]
fn phase_words_decode_to_their_durations() {
    let (a, d, b) = (37u32, 1023u32, 4095u32);
    let t = PhaseTimes::decode((a | (d << 10) | (b << 20)) as i32);
    assert_eq!(t.proposal_us, 37.0 * PHASE_UNIT_NS as f64 / 1e3);
    assert_eq!(t.refine_us, 1023.0 * PHASE_UNIT_NS as f64 / 1e3);
    assert_eq!(t.pass_us, 4095.0 * PASS_UNIT_NS as f64 / 1e3);
    assert_eq!(PhaseTimes::decode(0).pass_us, 0.0);
}

#[test]
fn route_words_decode_to_route_worker_and_start() {
    let word = |route: u32, worker: u32, start: u32| (route | (worker << 3) | (start << 13)) as i32;
    let s = RowStamp::decode(word(3, 1023, (1 << 19) - 1));
    assert_eq!((s.route, s.worker, s.start), (3, 1023, (1 << 19) - 1));
    let s = RowStamp::decode(word(1, 264, 5));
    assert_eq!((s.route, s.worker, s.start), (1, 264, 5));
}

#[test]
fn row_starts_unwrap_across_the_clock_wrap() {
    let stamp = |start: u32| RowStamp {
        route: 1,
        worker: 0,
        start,
    };
    let unit_us = START_UNIT_NS as f64 / 1e3;
    // Within one wrap: offsets from the earliest start.
    let t = start_offsets_us(&[stamp(100), stamp(40), stamp(1000)]);
    assert_eq!(t, vec![60.0 * unit_us, 0.0, 960.0 * unit_us]);
    // A launch that crossed the wrap: the stamps just past it come last.
    let last = (1u32 << 19) - 10;
    let t = start_offsets_us(&[stamp(last), stamp(5), stamp(last + 4)]);
    assert_eq!(t, vec![0.0, 15.0 * unit_us, 4.0 * unit_us]);
    assert!(start_offsets_us(&[]).is_empty());
}
