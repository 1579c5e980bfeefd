//! The canonical text form: exact shape, leniency of the parser, errors that name the token,
//! and round trips over valid and merely representable Specs.

use topk_dsl::{Centi, Mapping, Proposal, RowLocalVariant, Spec, SpecError};

const DEFAULT_TEXT: &str = "k=2048,dtype=f32,map=persistent,\
    propose=sampled(stride=128,rho=1.5,rescue=1.75),coarse=11,digits=11+11+10,threads=512";

#[test]
fn default_spec_prints_the_documented_canonical_text() {
    assert_eq!(Spec::default().to_string(), DEFAULT_TEXT);
    assert_eq!(Spec::parse(DEFAULT_TEXT), Ok(Spec::default()));
}

#[test]
fn every_mapping_and_proposal_has_its_documented_spelling() {
    let cases = [
        (Mapping::Persistent, "persistent"),
        (Mapping::KvSplit { splits: 2 }, "kvsplit(2)"),
        (Mapping::KvSplit { splits: 8 }, "kvsplit(8)"),
        (
            Mapping::RowLocal(RowLocalVariant::Register),
            "rowlocal(register)",
        ),
        (
            Mapping::RowLocal(RowLocalVariant::Streaming),
            "rowlocal(streaming)",
        ),
        (Mapping::Cluster { ctas: 8 }, "cluster(8)"),
        (Mapping::Staged, "staged"),
    ];
    for (mapping, text) in cases {
        assert_eq!(mapping.to_string(), text);
        assert_eq!(text.parse::<Mapping>(), Ok(mapping));
    }
    let primary_only = Proposal::Sampled {
        stride: 64,
        rho: Centi(150),
        rescue: None,
        exact_below: 0,
    };
    assert_eq!(primary_only.to_string(), "sampled(stride=64,rho=1.5)");
    assert_eq!(Proposal::Exact.to_string(), "exact");
}

#[test]
fn ratios_print_in_their_shortest_decimal_form() {
    for (hundredths, text) in [
        (150, "1.5"),
        (175, "1.75"),
        (200, "2"),
        (125, "1.25"),
        (5, "0.05"),
    ] {
        assert_eq!(Centi(hundredths).to_string(), text);
    }
}

#[test]
fn every_ratio_round_trips_and_never_prints_a_trailing_zero() {
    for h in 0..=u16::MAX {
        let text = Centi(h).to_string();
        assert_eq!(text.parse::<Centi>(), Ok(Centi(h)), "{text}");
        if text.contains('.') {
            assert!(!text.ends_with('0'), "{text}");
        }
    }
}

#[test]
fn ratios_accept_trailing_zeros_but_not_sub_hundredths() {
    assert_eq!("1.50".parse::<Centi>(), Ok(Centi(150)));
    assert_eq!("2.0".parse::<Centi>(), Ok(Centi(200)));
    for bad in ["1.755", ".5", "1.", "-1", "1,5", "1e2", "", "655.36"] {
        assert!(bad.parse::<Centi>().is_err(), "{bad:?} parsed");
    }
}

#[test]
fn omitted_fields_take_the_default_values() {
    assert_eq!(Spec::parse(""), Ok(Spec::default()));
    assert_eq!(
        Spec::parse("k=512"),
        Ok(Spec {
            k: 512,
            ..Spec::default()
        })
    );
    assert_eq!(
        Spec::parse("threads=1024, map=rowlocal(streaming), propose=exact"),
        Ok(Spec {
            mapping: Mapping::RowLocal(RowLocalVariant::Streaming),
            proposal: Proposal::Exact,
            threads: 1024,
            ..Spec::default()
        })
    );
}

#[test]
fn whitespace_around_every_token_is_ignored() {
    let spaced = " threads = 512 , digits = 11 + 11 + 10 , coarse = 11 , propose = sampled ( \
                  rescue = 1.75 , rho = 1.5 , stride = 128 ) , map = persistent , dtype = f32 , k = 2048 ";
    assert_eq!(Spec::parse(spaced), Ok(Spec::default()));
    assert_eq!(
        Spec::parse("map = kvsplit ( 4 )").map(|s| s.mapping),
        Ok(Mapping::KvSplit { splits: 4 })
    );
}

#[test]
fn rescue_none_means_no_rescue() {
    let spec = Spec::parse("propose=sampled(stride=64,rho=1.5,rescue=none)").unwrap();
    assert_eq!(spec.proposal.to_string(), "sampled(stride=64,rho=1.5)");
}

/// The parse error for `text` names `token`.
fn assert_parse_error_names(text: &str, token: &str) {
    match Spec::parse(text) {
        Err(SpecError::Parse { text: named, .. }) => {
            assert!(
                named.contains(token),
                "{text:?}: error names {named:?}, not {token:?}"
            )
        }
        other => panic!("{text:?}: expected a parse error, got {other:?}"),
    }
}

#[test]
fn unknown_keys_are_rejected_by_name() {
    assert_parse_error_names("k=2048,blocks=4", "blocks");
    assert_parse_error_names("propose=sampled(stride=128,rho=1.5,margin=2)", "margin");
    assert_parse_error_names("map=warp", "warp");
    assert_parse_error_names("map=rowlocal(shared)", "rowlocal(shared)");
    assert_parse_error_names("dtype=f64", "f64");
    assert_parse_error_names("propose=sampled", "sampled");
}

#[test]
fn duplicate_keys_are_rejected_by_name() {
    assert_parse_error_names("k=2048,threads=512,k=1024", "k=1024");
    assert_parse_error_names("propose=sampled(stride=128,rho=1.5,stride=64)", "stride=64");
}

#[test]
fn malformed_numbers_are_rejected_by_token() {
    assert_parse_error_names("k=2o48", "2o48");
    assert_parse_error_names("k=-1", "-1");
    assert_parse_error_names("k=+5", "+5");
    assert_parse_error_names("k=99999999999", "99999999999");
    assert_parse_error_names("coarse=300", "300");
    assert_parse_error_names("threads=5.12", "5.12");
    assert_parse_error_names("digits=11+x+10", "x");
    assert_parse_error_names("digits=8+8+8+4+4", "8+8+8+4+4");
    assert_parse_error_names("propose=sampled(stride=128,rho=1.5.0)", "1.5.0");
    assert_parse_error_names("map=kvsplit(four)", "four");
}

#[test]
fn malformed_structure_is_rejected() {
    for bad in [
        "k",
        "k=",
        "=5",
        "k=1,,threads=512",
        "k=1,",
        "map=kvsplit(4",
        "map=kvsplit4)",
    ] {
        assert!(
            matches!(Spec::parse(bad), Err(SpecError::Parse { .. })),
            "{bad:?} parsed"
        );
    }
}
