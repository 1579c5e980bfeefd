//! Autotune records: sweeps keep every timing, the store round-trips, and the planner's lookup
//! uses a record only for the same device and candidate set.

use topk_dsl::Spec;
use topk_runtime::autotune::{candidates, checksum, sweep, DeviceKey, Lookup, ShapeBucket, Store};
use topk_runtime::Error;

fn h200() -> DeviceKey {
    DeviceKey {
        name: "NVIDIA H200".into(),
        cc_major: 9,
        cc_minor: 0,
        driver_version: 13000,
    }
}

fn fake_record(device: DeviceKey, k: u32, rows: u32, width: u32) -> topk_runtime::autotune::Record {
    let set = candidates(k, width);
    // Candidate i takes 1 + i ms, except: #0 fails, #1 is inexact. So #2 must win.
    let mut i = 0;
    sweep(
        device,
        ShapeBucket::of(k, rows, width),
        (rows, width),
        &set,
        |_| {
            i += 1;
            match i {
                1 => Err(Error::Cuda("launch failed".into())),
                2 => Ok((0.5, false)),
                n => Ok((n as f64, true)),
            }
        },
        |_, _, _| {},
    )
}

#[test]
fn buckets_round_rows_and_width_up_to_powers_of_two() {
    let b = ShapeBucket::of(2048, 3000, 200_000);
    assert_eq!((b.k, b.rows, b.width), (2048, 4096, 262_144));
    assert_eq!(ShapeBucket::of(2048, 4096, 262_144), b);
    assert_ne!(ShapeBucket::of(512, 4096, 262_144), b);
}

#[test]
fn a_sweep_keeps_every_timing_and_the_best_is_the_fastest_exact_one() {
    let r = fake_record(h200(), 2048, 512, 131_072);
    let set = candidates(2048, 131_072);
    assert_eq!(r.timings.len(), set.len());
    assert!(r.timings[0]
        .error
        .as_deref()
        .unwrap()
        .contains("launch failed"));
    assert!(!r.timings[1].exact && r.timings[1].median_ms.is_none());
    assert_eq!(r.best().unwrap().spec, set[2].to_string());
    assert_eq!(r.candidates_checksum, checksum(&set));
}

#[test]
fn the_store_round_trips_and_upsert_replaces_the_same_device_and_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("autotune.json");
    assert_eq!(
        Store::load(&path).unwrap(),
        Store::default(),
        "a missing file is an empty store"
    );
    let mut store = Store::default();
    store.upsert(fake_record(h200(), 2048, 512, 131_072));
    store.upsert(fake_record(h200(), 2048, 512, 131_072));
    store.upsert(fake_record(h200(), 2048, 8192, 1 << 20));
    assert_eq!(store.records.len(), 2);
    store.save(&path).unwrap();
    assert_eq!(Store::load(&path).unwrap(), store);
    std::fs::write(&path, b"{ not json").unwrap();
    let err = Store::load(&path).unwrap_err().to_string();
    assert!(err.contains("not valid JSON"), "{err}");
}

#[test]
fn lookup_uses_only_current_records_of_the_same_device() {
    let (k, rows, width) = (2048, 512, 131_072);
    let bucket = ShapeBucket::of(k, rows, width);
    let set = candidates(k, width);
    let mut store = Store::default();
    assert_eq!(store.lookup(&h200(), &bucket, &set), Lookup::Missing);
    store.upsert(fake_record(h200(), k, rows, width));
    assert_eq!(store.lookup(&h200(), &bucket, &set), Lookup::Tuned(set[2]));
    // Another device, or another driver: ignored, saying why.
    let mut h100 = h200();
    h100.name = "NVIDIA H100".into();
    match store.lookup(&h100, &bucket, &set) {
        Lookup::Ignored(why) => assert!(
            why.contains("NVIDIA H200") && why.contains("NVIDIA H100"),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
    let mut newer = h200();
    newer.driver_version += 10;
    assert!(matches!(
        store.lookup(&newer, &bucket, &set),
        Lookup::Ignored(_)
    ));
    // A changed candidate set makes the record stale.
    let fewer: Vec<Spec> = set[..2].to_vec();
    match store.lookup(&h200(), &bucket, &fewer) {
        Lookup::Ignored(why) => assert!(why.contains("candidate set"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn candidate_sets_fit_the_row_width() {
    for width in [8_192u32, 40_000, 262_144] {
        for spec in candidates(2048, width) {
            spec.validate().unwrap();
            let kernel = topk_codegen::generate(&spec).unwrap();
            if let Some(max) = kernel.layout.max_row {
                assert!(width <= max, "{spec} cannot hold rows of {width}");
            }
        }
    }
}

#[test]
fn every_width_of_a_bucket_gets_the_same_candidate_set() {
    for k in [2048u32, 512] {
        for (a, b) in [
            (200_000u32, 262_144u32),
            (600_000, 1 << 20),
            (40_000, 65_536),
            (20_000, 32_768),
            (16_384, 16_384),
        ] {
            assert_eq!(ShapeBucket::of(k, 8, a), ShapeBucket::of(k, 8, b));
            assert_eq!(candidates(k, a), candidates(k, b), "K={k}: {a} vs {b}");
        }
        // The few-row kernels join from their first bucket on.
        let has = |width, map: &str| {
            candidates(k, width)
                .iter()
                .any(|s| s.to_string().contains(map))
        };
        assert!(has(40_000, "map=cluster(8)") && !has(32_768, "map=cluster(8)"));
        assert!(has(600_000, "map=staged") && !has(262_144, "map=staged"));
    }
}

#[test]
fn short_row_buckets_sweep_both_sides_of_the_exact_below_rule() {
    use topk_dsl::Mapping;
    for width in [20_000u32, 40_000, 65_536] {
        let set = candidates(2048, width);
        let persistent: Vec<&Spec> = set
            .iter()
            .filter(|s| s.mapping == Mapping::Persistent && s.stride().is_some())
            .collect();
        assert!(
            persistent.iter().any(|s| s.exact_below() == 24_576),
            "{width}"
        );
        assert!(persistent.iter().any(|s| s.exact_below() == 0), "{width}");
    }
    // Long rows: every persistent sampled candidate keeps the default's rule (it never fires).
    for spec in candidates(2048, 262_144) {
        if spec.mapping == Mapping::Persistent && spec.stride().is_some() {
            assert_eq!(spec.exact_below(), 24_576, "{spec}");
        }
    }
}
