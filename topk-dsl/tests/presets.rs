//! Presets: valid, named once, round-tripping through text, and carrying the paper's constants.

use std::collections::HashSet;
use topk_dsl::{preset, Centi, Mapping, Proposal, RowLocalVariant, Spec, PRESETS};

#[test]
fn every_preset_validates_and_round_trips_through_text() {
    for p in PRESETS {
        assert_eq!(p.spec.validate(), Ok(()), "{}", p.name);
        assert_eq!(Spec::parse(&p.spec.to_string()), Ok(p.spec), "{}", p.name);
        assert!(!p.about.is_empty(), "{}", p.name);
    }
}

#[test]
fn preset_names_and_specs_are_unique() {
    let names: HashSet<_> = PRESETS.iter().map(|p| p.name).collect();
    let specs: HashSet<_> = PRESETS.iter().map(|p| p.spec).collect();
    assert_eq!(names.len(), PRESETS.len());
    assert_eq!(specs.len(), PRESETS.len());
}

#[test]
fn presets_are_found_by_name() {
    for p in PRESETS {
        assert_eq!(preset(p.name), Some(p.spec));
    }
    assert_eq!(preset("no-such-preset"), None);
}

#[test]
fn the_wide_row_rescue_preset_is_the_default_spec() {
    assert_eq!(preset("persistent-s128-rescue"), Some(Spec::default()));
}

#[test]
fn presets_carry_the_papers_constants() {
    let expected = [
        (
            "persistent-s64",
            Mapping::Persistent,
            Some((64, 150, None)),
            512,
            2048,
        ),
        (
            "persistent-s128-rescue",
            Mapping::Persistent,
            Some((128, 150, Some(175))),
            512,
            2048,
        ),
        ("persistent-exact", Mapping::Persistent, None, 512, 2048),
        (
            "kvsplit2",
            Mapping::KvSplit { splits: 2 },
            Some((128, 150, Some(175))),
            512,
            2048,
        ),
        (
            "kvsplit4",
            Mapping::KvSplit { splits: 4 },
            Some((128, 150, Some(175))),
            512,
            2048,
        ),
        (
            "kvsplit8",
            Mapping::KvSplit { splits: 8 },
            Some((128, 150, Some(175))),
            512,
            2048,
        ),
        (
            "rowlocal-register",
            Mapping::RowLocal(RowLocalVariant::Register),
            None,
            1024,
            2048,
        ),
        (
            "rowlocal-streaming",
            Mapping::RowLocal(RowLocalVariant::Streaming),
            None,
            1024,
            2048,
        ),
        ("cluster8", Mapping::Cluster { ctas: 8 }, None, 1024, 2048),
        (
            "cluster8-sampled",
            Mapping::Cluster { ctas: 8 },
            Some((128, 150, Some(175))),
            1024,
            2048,
        ),
        (
            "persistent-t384",
            Mapping::Persistent,
            Some((128, 175, Some(250))),
            384,
            2048,
        ),
        ("persistent-exact-k512", Mapping::Persistent, None, 512, 512),
    ];
    // Presets that group their view in pairs (the default map's three-CTA kernel).
    let pair_view = ["persistent-t384"];
    assert_eq!(PRESETS.len(), expected.len());
    for (name, mapping, sampled, threads, k) in expected {
        let spec = preset(name).unwrap_or_else(|| panic!("missing preset {name}"));
        let proposal = match sampled {
            Some((stride, rho, rescue)) => Proposal::Sampled {
                stride,
                rho: Centi(rho),
                rescue: rescue.map(Centi),
                exact_below: 0,
            },
            None => Proposal::Exact,
        };
        let want = Spec {
            k,
            mapping,
            proposal,
            threads,
            view_run: if pair_view.contains(&name) { 2 } else { 1 },
            ..Spec::default()
        };
        assert_eq!(spec, want, "{name}");
    }
}
