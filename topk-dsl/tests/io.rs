//! The interface fields of a Spec (`dtype`, `values`, `order`, `ties`, `rows`, `transform`):
//! their canonical spelling, errors that name the token, the 16-bit digit rules, and the one
//! place that says what the GPU kernels do not generate yet.

use topk_dsl::{Digits, Dtype, Io, Order, Rows, Spec, SpecError, Ties, Transform, PRESETS};

const DEFAULT_TEXT: &str = "k=2048,dtype=f32,map=persistent,\
    propose=sampled(stride=128,rho=1.5,rescue=1.75),coarse=11,digits=11+11+10,threads=512";

fn with_io(io: Io) -> Spec {
    Spec {
        io,
        ..Spec::default()
    }
}

#[test]
fn the_default_interface_adds_nothing_to_the_name() {
    assert!(Spec::default().io.is_default());
    assert_eq!(with_io(Io::DEFAULT).to_string(), DEFAULT_TEXT);
    for p in PRESETS {
        assert!(p.spec.io.is_default(), "{}", p.name);
        assert!(!p.spec.to_string().contains("values="), "{}", p.name);
    }
}

#[test]
fn every_interface_field_has_its_documented_spelling_in_order() {
    let all = Io {
        values: true,
        order: Order::Sorted,
        ties: Ties::Lowest,
        rows: Rows::Window { relative: true },
        transform: Transform::Paged,
        ..Io::DEFAULT
    };
    let text = format!(
        "{DEFAULT_TEXT},values=true,order=sorted,ties=lowest,rows=window(relative),transform=paged"
    );
    assert_eq!(with_io(all).to_string(), text);
    assert_eq!(Spec::parse(&text), Ok(with_io(all)));
    let cases = [
        (
            Io {
                rows: Rows::Window { relative: false },
                ..Io::DEFAULT
            },
            ",rows=window(absolute)",
        ),
        (
            Io {
                rows: Rows::Decode,
                transform: Transform::Offset,
                ..Io::DEFAULT
            },
            ",rows=decode,transform=offset",
        ),
        (
            Io {
                ties: Ties::Lowest,
                ..Io::DEFAULT
            },
            ",ties=lowest",
        ),
    ];
    for (io, suffix) in cases {
        let text = format!("{DEFAULT_TEXT}{suffix}");
        assert_eq!(with_io(io).to_string(), text);
        assert_eq!(Spec::parse(&text), Ok(with_io(io)));
    }
    // Defaults may be written out; they parse to the default and print as nothing.
    let spelled = "values=false,order=any,ties=any,rows=lengths,transform=none";
    assert_eq!(Spec::parse(spelled), Ok(Spec::default()));
}

#[test]
fn malformed_interface_values_are_rejected_by_token() {
    for (text, token, hint) in [
        ("rows=window", "window", "window(relative)"),
        ("rows=window(start)", "window(start)", "window(absolute)"),
        ("rows=ragged", "ragged", "decode"),
        ("ties=random", "random", "lowest"),
        ("order=ascending", "ascending", "sorted"),
        ("values=yes", "yes", "true or false"),
        ("transform=page", "page", "paged"),
        ("dtype=f64", "f64", "bf16"),
    ] {
        match Spec::parse(text) {
            Err(SpecError::Parse { text: t, reason }) => {
                assert_eq!(t, token, "{text}");
                assert!(reason.contains(hint), "{text}: {reason}");
            }
            other => panic!("{text} gave {other:?}"),
        }
    }
    assert!(matches!(
        Spec::parse("ties=lowest,ties=any"),
        Err(SpecError::Parse { .. })
    ));
}

#[test]
fn a_16_bit_dtype_takes_digits_that_resolve_its_16_bit_key() {
    let bf16 = Spec::parse("dtype=bf16").unwrap();
    assert_eq!(bf16.digits, Digits::new2(11, 5));
    assert_eq!(bf16.validate(), Ok(()));
    assert_eq!(bf16.digit_shifts(), vec![5, 0]);
    assert_eq!(
        bf16.to_string(),
        DEFAULT_TEXT
            .replace("f32", "bf16")
            .replace("11+11+10", "11+5")
    );
    let f16 = Spec::parse("dtype=f16,coarse=12").unwrap();
    assert_eq!(f16.digits, Digits::new2(12, 4));
    assert_eq!(f16.validate(), Ok(()));
    assert_eq!(
        Spec::parse("dtype=f16,digits=8+8").unwrap().validate(),
        Ok(())
    );
    assert_eq!(
        Spec::parse("dtype=f16,digits=4+6+6").unwrap().validate(),
        Ok(())
    );
    assert_eq!(Dtype::F32.key_bits(), 32);
    assert_eq!((Dtype::F16.size(), Dtype::Bf16.size()), (2, 2));

    // FP32 digits on a 16-bit key: a conflict that says what to do.
    let err = Spec::parse("dtype=bf16,digits=11+11+10")
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(err.fields(), vec!["digits", "dtype"]);
    assert!(err.to_string().contains("sum to 16"), "{err}");
    assert!(err.to_string().contains("11+5"), "{err}");
    // One 16-bit digit would need 65536 counters.
    let err = Spec::parse("dtype=f16,digits=16")
        .unwrap()
        .validate()
        .unwrap_err();
    assert!(err.to_string().contains("2 to 4 widths"), "{err}");
    // 16-bit digits on the FP32 key are still the old error.
    let err = Spec::parse("dtype=f32,digits=8+8")
        .unwrap()
        .validate()
        .unwrap_err();
    assert!(err.to_string().contains("3 to 4 widths"), "{err}");
}

#[test]
fn canonical_bytes_need_lowest_ties_and_sorted_order() {
    let mut io = Io::DEFAULT;
    assert!(!io.canonical_bytes());
    io.ties = Ties::Lowest;
    assert!(
        !io.canonical_bytes(),
        "the set is canonical, its order is not"
    );
    io.order = Order::Sorted;
    assert!(io.canonical_bytes());
}

#[test]
fn the_gpu_generates_every_dtype_and_every_part_of_the_call_interface() {
    assert_eq!(Spec::default().gpu_unsupported(), None);
    for p in PRESETS {
        assert_eq!(p.spec.gpu_unsupported(), None, "{}", p.name);
    }
    for io in [
        Io::DEFAULT,
        Io {
            values: true,
            order: Order::Sorted,
            ties: Ties::Lowest,
            rows: Rows::Decode,
            transform: Transform::Offset,
            ..Io::DEFAULT
        },
        Io {
            rows: Rows::Window { relative: false },
            transform: Transform::Paged,
            ..Io::DEFAULT
        },
    ] {
        assert_eq!(with_io(io).gpu_unsupported(), None, "{io:?}");
        for dtype in [Dtype::F16, Dtype::Bf16] {
            let spec = Spec {
                dtype,
                digits: Digits::new2(11, 5),
                ..with_io(io)
            };
            assert_eq!(spec.validate(), Ok(()), "{spec}");
            assert_eq!(spec.gpu_unsupported(), None, "{spec}");
        }
    }
}

/// The kernels refine a 16-bit score's exact FP32 value by the FP32 key: their digits cover 32
/// bits whatever the spec's 16-bit digits, and the shared histogram holds their widest digit.
#[test]
fn kernel_digits_cover_the_fp32_key() {
    let f32_spec = Spec::default();
    assert_eq!(f32_spec.kernel_digits(), f32_spec.digits);
    assert_eq!(f32_spec.kernel_digit_shifts(), f32_spec.digit_shifts());
    for dtype in [Dtype::F16, Dtype::Bf16] {
        for coarse_bits in [8u8, 11, 12] {
            let spec = Spec {
                dtype,
                coarse_bits,
                digits: Digits::default_for(dtype, coarse_bits),
                ..Spec::default()
            };
            assert_eq!(spec.validate(), Ok(()), "{spec}");
            let widths = spec.kernel_digits();
            let sum: u32 = widths.as_slice().iter().map(|&w| u32::from(w)).sum();
            assert_eq!(sum, 32, "{spec}");
            assert_eq!(spec.kernel_digit_shifts().last(), Some(&0), "{spec}");
            let widest = widths.as_slice().iter().copied().max().unwrap();
            assert!(spec.hist_bins() >= 1 << widest, "{spec}");
            assert!(spec.hist_bins() >= spec.coarse_bins(), "{spec}");
        }
    }
}
