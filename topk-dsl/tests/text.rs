//! The canonical text form: exact shape, leniency of the parser, errors that name the token,
//! and round trips over valid and merely representable Specs.

use proptest::prelude::*;
use topk_dsl::{Centi, Digits, Dtype, Mapping, Proposal, RowLocalVariant, Spec, SpecError};

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

fn ratio(range: std::ops::RangeInclusive<u16>) -> impl Strategy<Value = Centi> {
    range.prop_map(Centi)
}

/// Three or four digit widths in 1..=12 summing to 32.
fn valid_digits() -> impl Strategy<Value = Digits> {
    prop_oneof![
        (8u8..=12, 8u8..=12)
            .prop_filter("last width in 1..=12", |(a, b)| a + b >= 20)
            .prop_map(|(a, b)| Digits::new3(a, b, 32 - a - b)),
        (2u8..=12, 2u8..=12, 2u8..=12)
            .prop_filter("last width in 1..=12", |(a, b, c)| {
                (20..=31).contains(&(a + b + c))
            })
            .prop_map(|(a, b, c)| Digits {
                widths: [a, b, c, 32 - a - b - c],
                len: 4,
            }),
    ]
}

fn valid_sampled() -> impl Strategy<Value = Proposal> {
    (1u32..=10, ratio(100..=799), prop::option::of(1u16..=700)).prop_map(
        |(log_stride, rho, rescue_above)| Proposal::Sampled {
            stride: 1 << log_stride,
            rho,
            rescue: rescue_above.map(|d| Centi((rho.0 + d).min(800))),
            exact_below: 0,
        },
    )
}

/// Specs that satisfy every rule of `Spec::validate`.
fn valid_spec() -> impl Strategy<Value = Spec> {
    let mapping_proposal_threads = prop_oneof![
        (
            prop_oneof![valid_sampled(), Just(Proposal::Exact)],
            prop::sample::select(vec![128u32, 256, 512, 1024])
        )
            .prop_map(|(p, t)| (Mapping::Persistent, p, t)),
        (
            prop::sample::select(vec![2u8, 4, 8]),
            valid_sampled(),
            prop::sample::select(vec![128u32, 256, 512, 1024])
        )
            .prop_map(|(splits, p, t)| (Mapping::KvSplit { splits }, p, t)),
        prop::sample::select(vec![
            Mapping::RowLocal(RowLocalVariant::Register),
            Mapping::RowLocal(RowLocalVariant::Streaming),
            Mapping::Cluster { ctas: 8 },
        ])
        .prop_map(|m| (m, Proposal::Exact, 1024)),
    ];
    (
        1u32..=topk_dsl::MAX_K,
        mapping_proposal_threads,
        8u8..=12,
        valid_digits(),
        prop_oneof![Just(0u16), 1u16..=1000],
        (prop_oneof![Just(0u32), 1u32..=65536], 1u16..=700),
        0u8..=2,
    )
        .prop_map(
            |(
                k,
                (mapping, proposal, threads),
                coarse_bits,
                digits,
                stagger,
                (rows, above),
                prefetch,
            )| {
                // A tail margin on persistent sampled specs: above rho, below rescue.
                let tail_rho = match proposal {
                    Proposal::Sampled { rho, rescue, .. } => {
                        let top = rescue.map_or(801, |r| r.0);
                        Some(Centi(rho.0 + above)).filter(|t| t.0 < top)
                    }
                    Proposal::Exact => None,
                };
                let (tail_rows, tail_rho) = match tail_rho {
                    Some(t) if mapping == Mapping::Persistent && rows > 0 => (rows, t),
                    _ => (0, Centi(0)),
                };
                Spec {
                    k,
                    dtype: Dtype::F32,
                    mapping,
                    proposal,
                    coarse_bits,
                    digits,
                    threads,
                    view_run: 1,
                    // Only the persistent pool has a second half to start late.
                    stagger_us: if mapping == Mapping::Persistent {
                        stagger
                    } else {
                        0
                    },
                    tail_rows,
                    tail_rho,
                    // Only the persistent pool's streams prefetch.
                    prefetch: if mapping == Mapping::Persistent {
                        prefetch
                    } else {
                        0
                    },
                }
            },
        )
}

/// Specs the text form can represent, valid or not (digits beyond `len` are zero).
fn representable_spec() -> impl Strategy<Value = Spec> {
    let mapping = prop_oneof![
        Just(Mapping::Persistent),
        any::<u8>().prop_map(|splits| Mapping::KvSplit { splits }),
        Just(Mapping::RowLocal(RowLocalVariant::Register)),
        Just(Mapping::RowLocal(RowLocalVariant::Streaming)),
        any::<u8>().prop_map(|ctas| Mapping::Cluster { ctas }),
    ];
    let proposal = prop_oneof![
        Just(Proposal::Exact),
        (any::<u32>(), any::<u16>(), prop::option::of(any::<u16>())).prop_map(
            |(stride, rho, rescue)| Proposal::Sampled {
                stride,
                rho: Centi(rho),
                rescue: rescue.map(Centi),
                exact_below: 0,
            }
        ),
    ];
    let digits = prop::collection::vec(any::<u8>(), 1..=4).prop_map(|ws| {
        let mut widths = [0u8; 4];
        widths[..ws.len()].copy_from_slice(&ws);
        Digits {
            widths,
            len: ws.len() as u8,
        }
    });
    (
        any::<u32>(),
        mapping,
        proposal,
        any::<u8>(),
        digits,
        any::<u32>(),
        any::<u8>(),
        any::<u16>(),
        (any::<u32>(), any::<u16>()),
        any::<u8>(),
    )
        .prop_map(
            |(
                k,
                mapping,
                proposal,
                coarse_bits,
                digits,
                threads,
                view_run,
                stagger_us,
                tail,
                prefetch,
            )| {
                Spec {
                    k,
                    dtype: Dtype::F32,
                    mapping,
                    proposal,
                    coarse_bits,
                    digits,
                    threads,
                    view_run,
                    stagger_us,
                    // The text names a tail margin only with its rows.
                    tail_rows: tail.0,
                    tail_rho: Centi(if tail.0 > 0 { tail.1 } else { 0 }),
                    prefetch,
                }
            },
        )
}

/// Split canonical text into its top-level `key=value` fields.
fn fields(text: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(String::new());
                continue;
            }
            _ => {}
        }
        out.last_mut().unwrap().push(c);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn valid_specs_validate_and_round_trip_through_text(spec in valid_spec()) {
        prop_assert_eq!(spec.validate(), Ok(()));
        prop_assert_eq!(Spec::parse(&spec.to_string()), Ok(spec));
    }

    #[test]
    fn representable_specs_round_trip_whether_valid_or_not(spec in representable_spec()) {
        prop_assert_eq!(Spec::parse(&spec.to_string()), Ok(spec));
    }

    #[test]
    fn field_order_and_spacing_do_not_change_the_spec(
        spec in valid_spec(),
        order in Just((0..10).collect::<Vec<usize>>()).prop_shuffle(),
        pad in prop::sample::select(vec!["", " ", "  ", "\t", " \n "]),
    ) {
        let fields = fields(&spec.to_string());
        // Seven fields, and `stagger`, `tail` and `prefetch` when set.
        let optional = usize::from(spec.stagger_us > 0)
            + usize::from(spec.tail_rows > 0)
            + usize::from(spec.prefetch > 0);
        prop_assert_eq!(fields.len(), 7 + optional);
        // Pad every separator token: `=`, `(`, `)`, `+` and the commas between fields.
        let padded: Vec<String> = order
            .iter()
            .filter(|&&i| i < fields.len())
            .map(|&i| {
                let mut f = String::new();
                for c in fields[i].chars() {
                    if "=()+,@".contains(c) {
                        f.push_str(pad);
                        f.push(c);
                        f.push_str(pad);
                    } else {
                        f.push(c);
                    }
                }
                f
            })
            .collect();
        let sep = format!("{pad},{pad}");
        let text = format!("{pad}{}{pad}", padded.join(&sep));
        prop_assert_eq!(Spec::parse(&text), Ok(spec));
    }

    #[test]
    fn omitting_any_field_takes_its_default(spec in valid_spec(), drop in 0usize..10) {
        let mut fields = fields(&spec.to_string());
        let drop = drop % fields.len();
        let dropped = fields.remove(drop);
        let parsed = Spec::parse(&fields.join(",")).unwrap();
        let default = Spec::default();
        let expected = match drop {
            0 => Spec { k: default.k, ..spec },
            1 => Spec { dtype: default.dtype, ..spec },
            2 => Spec { mapping: default.mapping, ..spec },
            3 => Spec { proposal: default.proposal, ..spec },
            4 => Spec { coarse_bits: default.coarse_bits, ..spec },
            5 => Spec { digits: default.digits, ..spec },
            6 => Spec { threads: default.threads, ..spec },
            _ if dropped.starts_with("stagger=") => Spec { stagger_us: default.stagger_us, ..spec },
            _ if dropped.starts_with("prefetch=") => Spec { prefetch: default.prefetch, ..spec },
            _ => Spec { tail_rows: default.tail_rows, tail_rho: default.tail_rho, ..spec },
        };
        prop_assert_eq!(parsed, expected);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "[a-z0-9=(),+. ]{0,80}") {
        let _ = Spec::parse(&text);
    }
}
