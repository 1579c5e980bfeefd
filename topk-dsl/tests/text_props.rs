//! Round trips of the canonical text form over valid and merely representable Specs, with every
//! dtype and every combination of the interface fields; leniency over order and spacing;
//! defaults of omitted fields.

use proptest::prelude::*;
use topk_dsl::{
    Centi, Digits, Dtype, Io, Mapping, Order, Prior, Proposal, RowLocalVariant, Rows, Spec, Ties,
    Transform,
};

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

/// A dtype and valid digits for its key: 3 or 4 widths summing to 32 for f32, 2 to 4 widths in
/// 1..=12 summing to 16 for the 16-bit dtypes.
fn dtype_and_digits() -> impl Strategy<Value = (Dtype, Digits)> {
    let key16 = prop_oneof![
        (4u8..=12).prop_map(|a| Digits::new2(a, 16 - a)),
        (1u8..=12, 1u8..=12)
            .prop_filter("last width in 1..=12", |(a, b)| (4..=15).contains(&(a + b)))
            .prop_map(|(a, b)| Digits::new3(a, b, 16 - a - b)),
    ];
    prop_oneof![
        valid_digits().prop_map(|d| (Dtype::F32, d)),
        (prop::sample::select(vec![Dtype::F16, Dtype::Bf16]), key16),
    ]
}

fn any_dtype() -> impl Strategy<Value = Dtype> {
    prop::sample::select(vec![Dtype::F32, Dtype::F16, Dtype::Bf16])
}

/// Every combination of the interface fields.
fn any_io() -> impl Strategy<Value = Io> {
    (
        (
            any::<bool>(),
            prop::sample::select(vec![Order::Any, Order::Sorted]),
            prop::sample::select(vec![Ties::Any, Ties::Lowest]),
            prop::sample::select(vec![
                Rows::Lengths,
                Rows::Window { relative: true },
                Rows::Window { relative: false },
                Rows::Decode,
            ]),
            prop::sample::select(vec![
                Transform::None,
                Transform::Offset,
                Transform::Paged,
                Transform::PagedRows,
            ]),
        ),
        (
            prop::sample::select(vec![
                Prior::None,
                Prior::Bins {
                    primary: 0,
                    rescue: 0,
                },
                Prior::Bins {
                    primary: 2,
                    rescue: 8,
                },
            ]),
            any::<bool>(),
        ),
    )
        .prop_map(
            |((values, order, ties, rows, transform), (prior, boundary))| Io {
                values,
                order,
                ties,
                rows,
                transform,
                prior,
                boundary,
            },
        )
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
        dtype_and_digits(),
        prop_oneof![Just(0u16), 1u16..=1000],
        (prop_oneof![Just(0u32), 1u32..=65536], 1u16..=700),
        0u8..=2,
        any_io(),
    )
        .prop_map(
            |(
                k,
                (mapping, proposal, threads),
                coarse_bits,
                (dtype, digits),
                stagger,
                (rows, above),
                prefetch,
                io,
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
                    dtype,
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
                    io,
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
        (any::<u8>(), any_dtype(), any_io()),
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
                (prefetch, dtype, io),
            )| {
                Spec {
                    k,
                    dtype,
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
                    io,
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
        // At most 7 fields and 10 optional ones.
        order in Just((0..17).collect::<Vec<usize>>()).prop_shuffle(),
        pad in prop::sample::select(vec!["", " ", "  ", "\t", " \n "]),
    ) {
        let fields = fields(&spec.to_string());
        // Seven fields, and `stagger`, `tail`, `prefetch` and the interface fields when set.
        let io = spec.io;
        let optional = usize::from(spec.stagger_us > 0)
            + usize::from(spec.tail_rows > 0)
            + usize::from(spec.prefetch > 0)
            + usize::from(io.values)
            + usize::from(io.order != Order::Any)
            + usize::from(io.ties != Ties::Any)
            + usize::from(io.rows != Rows::Lengths)
            + usize::from(io.transform != Transform::None)
            + usize::from(io.prior != Prior::None)
            + usize::from(io.boundary);
        prop_assert_eq!(fields.len(), 7 + optional);
        prop_assert!(fields.len() <= order.len());
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
    fn omitting_any_field_takes_its_default(spec in valid_spec(), drop in 0usize..18) {
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
            // A 16-bit dtype fills omitted digits with its own default.
            5 => Spec { digits: Digits::default_for(spec.dtype, spec.coarse_bits), ..spec },
            6 => Spec { threads: default.threads, ..spec },
            _ if dropped.starts_with("stagger=") => Spec { stagger_us: default.stagger_us, ..spec },
            _ if dropped.starts_with("prefetch=") => Spec { prefetch: default.prefetch, ..spec },
            _ if dropped.starts_with("values=") => Spec { io: Io { values: false, ..spec.io }, ..spec },
            _ if dropped.starts_with("order=") => Spec { io: Io { order: Order::Any, ..spec.io }, ..spec },
            _ if dropped.starts_with("ties=") => Spec { io: Io { ties: Ties::Any, ..spec.io }, ..spec },
            _ if dropped.starts_with("rows=") => Spec { io: Io { rows: Rows::Lengths, ..spec.io }, ..spec },
            _ if dropped.starts_with("transform=") => {
                Spec { io: Io { transform: Transform::None, ..spec.io }, ..spec }
            }
            _ if dropped.starts_with("prior=") => Spec { io: Io { prior: Prior::None, ..spec.io }, ..spec },
            _ if dropped.starts_with("boundary=") => Spec { io: Io { boundary: false, ..spec.io }, ..spec },
            _ => Spec { tail_rows: default.tail_rows, tail_rho: default.tail_rho, ..spec },
        };
        prop_assert_eq!(parsed, expected);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "[a-z0-9=(),+. ]{0,80}") {
        let _ = Spec::parse(&text);
    }
}
