//! One test per validation rule: the boundary values pass, the first values beyond them fail,
//! and the error names the field (or both fields of a combination) that broke the rule.

use topk_dsl::{Centi, Digits, Mapping, Proposal, RowLocalVariant, Spec, SpecError, MAX_K};

fn spec(text: &str) -> Spec {
    Spec::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
}

fn assert_valid(text: &str) {
    assert_eq!(spec(text).validate(), Ok(()), "{text}");
}

/// `text` parses but fails validation on exactly `fields` (the error's own order).
fn assert_breaks(text: &str, fields: &[&str]) {
    match spec(text).validate() {
        Err(e) => {
            assert_eq!(e.fields(), fields, "{text}: {e}");
            assert!(!e.to_string().is_empty());
        }
        Ok(()) => panic!("{text:?} validated"),
    }
}

fn sampled(stride: u32, rho: u16, rescue: Option<u16>) -> Proposal {
    Proposal::Sampled {
        stride,
        rho: Centi(rho),
        rescue: rescue.map(Centi),
        exact_below: 0,
    }
}

fn with_proposal(proposal: Proposal) -> Spec {
    Spec {
        proposal,
        ..Spec::default()
    }
}

#[test]
fn the_default_spec_is_valid() {
    assert_eq!(Spec::default().validate(), Ok(()));
}

#[test]
fn k_is_between_one_and_max_k() {
    assert_valid("k=1");
    assert_valid(&format!("k={MAX_K}"));
    assert_breaks("k=0", &["k"]);
    assert_breaks(&format!("k={}", MAX_K + 1), &["k"]);
    assert_breaks("k=20000", &["k"]);
}

#[test]
fn large_k_stays_valid_with_a_sampled_proposal() {
    assert_valid("k=8192,propose=sampled(stride=128,rho=1.5,rescue=1.75)");
    assert_valid("k=16384,propose=sampled(stride=1024,rho=8)");
}

#[test]
fn threads_is_a_supported_block_size() {
    for t in [128, 256, 384, 512, 1024] {
        assert_valid(&format!("threads={t}"));
    }
    for t in [0, 64, 96, 320, 768, 2048] {
        assert_breaks(&format!("threads={t}"), &["threads"]);
    }
}

#[test]
fn coarse_bits_are_between_8_and_12() {
    assert_valid("coarse=8");
    assert_valid("coarse=12");
    assert_breaks("coarse=7", &["coarse"]);
    assert_breaks("coarse=13", &["coarse"]);
    assert_breaks("coarse=16", &["coarse"]);
}

#[test]
fn digits_sum_to_32() {
    assert_valid("digits=12+12+8");
    assert_valid("digits=8+8+8+8");
    assert_breaks("digits=11+11+11", &["digits"]);
    assert_breaks("digits=8+8+8+7", &["digits"]);
}

#[test]
fn digits_have_three_or_four_widths() {
    assert_breaks("digits=12+20", &["digits"]);
    assert_breaks("digits=32", &["digits"]);
}

#[test]
fn each_digit_is_between_1_and_12_bits() {
    assert_valid("digits=1+12+12+7");
    assert_breaks("digits=13+13+6", &["digits"]);
    assert_breaks("digits=0+12+12+8", &["digits"]);
}

#[test]
fn hand_built_digits_with_unused_slots_or_bad_len_are_rejected_without_panicking() {
    for digits in [
        Digits {
            widths: [11, 11, 10, 5],
            len: 3,
        },
        Digits {
            widths: [8, 8, 8, 8],
            len: 5,
        },
        Digits {
            widths: [0; 4],
            len: 0,
        },
    ] {
        let spec = Spec {
            digits,
            ..Spec::default()
        };
        let err = spec.validate().unwrap_err();
        assert_eq!(err.fields(), ["digits"], "{err}");
        let _ = spec.to_string();
    }
}

#[test]
fn kvsplit_takes_2_4_or_8_ctas() {
    for n in [2, 4, 8] {
        assert_valid(&format!("map=kvsplit({n})"));
    }
    for n in [0, 1, 3, 6, 16] {
        assert_breaks(&format!("map=kvsplit({n})"), &["map"]);
    }
}

#[test]
fn cluster_takes_8_or_16_ctas() {
    assert_valid("map=cluster(8),propose=exact,threads=1024");
    assert_valid("map=cluster(16),propose=exact,threads=1024");
    for n in [2, 4, 12, 32] {
        assert_breaks(
            &format!("map=cluster({n}),propose=exact,threads=1024"),
            &["map"],
        );
    }
}

#[test]
fn stride_is_a_power_of_two_between_2_and_1024() {
    for s in [2, 4, 64, 128, 1024] {
        assert_eq!(with_proposal(sampled(s, 150, None)).validate(), Ok(()));
    }
    for s in [0, 1, 3, 100, 96, 2048] {
        let err = with_proposal(sampled(s, 150, None)).validate().unwrap_err();
        assert_eq!(err.fields(), ["stride"], "stride {s}: {err}");
    }
}

#[test]
fn rho_is_between_one_and_eight() {
    for rho in [100, 150, 800] {
        assert_eq!(with_proposal(sampled(128, rho, None)).validate(), Ok(()));
    }
    for rho in [0, 99, 801] {
        let err = with_proposal(sampled(128, rho, None))
            .validate()
            .unwrap_err();
        assert_eq!(err.fields(), ["rho"], "rho {rho}: {err}");
    }
}

#[test]
fn rescue_lies_deeper_than_rho() {
    assert_eq!(
        with_proposal(sampled(128, 150, Some(151))).validate(),
        Ok(())
    );
    for rescue in [150, 100] {
        let err = with_proposal(sampled(128, 150, Some(rescue)))
            .validate()
            .unwrap_err();
        assert_eq!(err.fields(), ["rescue", "rho"], "{err}");
    }
}

#[test]
fn rescue_is_at_most_eight() {
    assert_eq!(
        with_proposal(sampled(128, 150, Some(800))).validate(),
        Ok(())
    );
    let err = with_proposal(sampled(128, 150, Some(801)))
        .validate()
        .unwrap_err();
    assert_eq!(err.fields(), ["rescue"], "{err}");
}

#[test]
fn rowlocal_needs_an_exact_proposal_and_cluster_takes_either() {
    for map in ["rowlocal(register)", "rowlocal(streaming)"] {
        assert_valid(&format!("map={map},propose=exact,threads=1024"));
        assert_breaks(
            &format!("map={map},propose=sampled(stride=128,rho=1.5),threads=1024"),
            &["propose", "map"],
        );
    }
    for ctas in [8, 16] {
        assert_valid(&format!("map=cluster({ctas}),propose=exact,threads=1024"));
        assert_valid(&format!(
            "map=cluster({ctas}),propose=sampled(stride=128,rho=1.75,rescue=2.5),threads=1024"
        ));
        assert_valid(&format!(
            "map=cluster({ctas}),propose=sampled(stride=64,rho=1.5),threads=1024,view=run(2)"
        ));
    }
}

#[test]
fn kvsplit_needs_a_sampled_proposal() {
    assert_breaks("map=kvsplit(4),propose=exact", &["propose", "map"]);
    assert_valid("map=persistent,propose=exact");
}

#[test]
fn rowlocal_needs_1024_threads_and_cluster_512_or_1024() {
    for map in ["rowlocal(register)", "rowlocal(streaming)"] {
        for t in [128, 256, 512] {
            assert_breaks(
                &format!("map={map},propose=exact,threads={t}"),
                &["threads", "map"],
            );
        }
    }
    for t in [128, 256, 384] {
        assert_breaks(
            &format!("map=cluster(8),propose=exact,threads={t}"),
            &["threads", "map"],
        );
    }
    assert_valid("map=cluster(8),propose=exact,threads=512");
    assert_valid("map=cluster(16),threads=512");
    // The other mappings take any supported block size.
    assert_valid("map=kvsplit(2),threads=1024");
    assert_valid("map=persistent,threads=128");
}

#[test]
fn three_cta_block_size_is_for_the_persistent_pool_only() {
    assert_valid("map=persistent,threads=384");
    assert_valid("map=persistent,propose=exact,threads=384");
    for map in ["kvsplit(2)", "kvsplit(8)", "staged"] {
        assert_breaks(&format!("map={map},threads=384"), &["threads", "map"]);
    }
    assert_breaks(
        "map=rowlocal(streaming),propose=exact,threads=384",
        &["threads", "map"],
    );
    // Three CTAs per SM fit only with the K <= 2048 frontier and the 11-bit histogram.
    assert_valid("k=2048,threads=384,coarse=11");
    assert_valid("k=100,threads=384,propose=exact");
    assert_breaks("k=4096,threads=384", &["threads", "k"]);
    assert_breaks("k=2048,threads=384,coarse=12", &["threads", "coarse"]);
}

#[test]
fn errors_say_which_rule_was_broken() {
    let err = spec("propose=sampled(stride=100,rho=1.5)")
        .validate()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("stride") && text.contains("power of two") && text.contains("100"));
    let conflict = Spec {
        mapping: Mapping::RowLocal(RowLocalVariant::Register),
        threads: 1024,
        ..Spec::default()
    }
    .validate()
    .unwrap_err();
    assert!(matches!(conflict, SpecError::Conflict { .. }));
    assert!(conflict.to_string().contains("propose=exact"), "{conflict}");
}

#[test]
fn grouped_views_need_a_sampling_mapping_and_a_sector_sized_run() {
    for run in [2, 4, 8] {
        let text = format!("view=run({run})");
        assert_valid(&text);
        let s = spec(&text);
        assert_eq!(s.view_run, run);
        // Written last, and only when it is not the stride view.
        assert!(s.to_string().ends_with(&format!(",view=run({run})")), "{s}");
        assert_eq!(spec(&s.to_string()), s);
        assert_valid(&format!("map=kvsplit(4),view=run({run})"));
        assert_valid(&format!("map=cluster(8),threads=1024,view=run({run})"));
    }
    assert_eq!(spec("view=stride").view_run, 1);
    assert_eq!(spec("view=run(1)").to_string(), spec("").to_string());
    assert!(!spec("").to_string().contains("view"));
    for run in [0, 3, 16] {
        assert_breaks(&format!("view=run({run})"), &["view"]);
    }
    assert_breaks("propose=exact,view=run(2)", &["view"]);
    assert_breaks(
        "map=rowlocal(streaming),propose=exact,threads=1024,view=run(4)",
        &["view"],
    );
    assert!(topk_dsl::Spec::parse("view=sectors").is_err());
}

#[test]
fn exact_below_is_a_row_length_for_the_persistent_pool() {
    let text = "propose=sampled(stride=128,rho=1.75,rescue=2.5,exact_below=24576)";
    assert_valid(text);
    let s = spec(text);
    assert_eq!(s.exact_below(), 24576);
    // Printed inside sampled(...) when set, and read back to the same Spec.
    assert!(s.to_string().contains(",exact_below=24576)"), "{s}");
    assert_eq!(spec(&s.to_string()), s);
    // Left out (or 0) it is not printed: the canonical texts of other specs do not change.
    assert_eq!(
        spec("propose=sampled(stride=128,rho=1.5,exact_below=0)").to_string(),
        spec("propose=sampled(stride=128,rho=1.5)").to_string()
    );
    assert_eq!(spec("propose=exact").exact_below(), 0);
    assert_valid("propose=sampled(stride=128,rho=1.5,exact_below=2147483647)");
    assert_breaks(
        "propose=sampled(stride=128,rho=1.5,exact_below=2147483648)",
        &["exact_below"],
    );
    for other in [
        "map=kvsplit(4)",
        "map=cluster(8),threads=1024",
        "map=staged",
    ] {
        assert_breaks(
            &format!("{other},propose=sampled(stride=128,rho=1.5,exact_below=4096)"),
            &["exact_below", "map"],
        );
        assert_valid(&format!(
            "{other},propose=sampled(stride=128,rho=1.5,exact_below=0)"
        ));
    }
    assert!(Spec::parse("propose=sampled(stride=128,rho=1.5,exact_below=-1)").is_err());
}

#[test]
fn prefetch_sends_at_most_two_batches_ahead_on_a_persistent_pool() {
    let s = spec("prefetch=1,tail=1.6@264,stagger=16,view=run(2)");
    assert_valid(&s.to_string());
    assert_eq!(s.prefetch, 1);
    // Printed last when set, and read back to the same Spec.
    assert!(s.to_string().ends_with(",tail=1.6@264,prefetch=1"), "{s}");
    assert_eq!(spec(&s.to_string()), s);
    // Left out (or 0) it is not printed: the canonical texts of other specs do not change.
    assert_eq!(spec("prefetch=0").to_string(), Spec::default().to_string());
    assert_valid("prefetch=2");
    assert_breaks("prefetch=3", &["prefetch"]);
    for other in [
        "map=kvsplit(4)",
        "map=cluster(8),threads=1024",
        "map=staged",
        "map=rowlocal(streaming),propose=exact,threads=1024",
    ] {
        assert_breaks(&format!("{other},prefetch=1"), &["prefetch", "map"]);
        assert_valid(&format!("{other},prefetch=0"));
    }
    assert!(Spec::parse("prefetch=-1").is_err());
    assert!(Spec::parse("prefetch=256").is_err());
}

#[test]
fn stagger_delays_half_a_persistent_pool_by_at_most_a_millisecond() {
    let s = spec("stagger=16");
    assert_valid("stagger=16");
    assert_eq!(s.stagger_us, 16);
    // Printed last when set, and read back to the same Spec.
    assert!(s.to_string().ends_with(",stagger=16"), "{s}");
    assert_eq!(spec(&s.to_string()), s);
    // Left out (or 0) it is not printed: the canonical texts of other specs do not change.
    assert_eq!(spec("stagger=0").to_string(), Spec::default().to_string());
    assert_valid("stagger=1000");
    assert_breaks("stagger=1001", &["stagger"]);
    for other in [
        "map=kvsplit(4)",
        "map=cluster(8),threads=1024",
        "map=staged",
        "map=rowlocal(register),propose=exact,threads=1024",
    ] {
        assert_breaks(&format!("{other},stagger=16"), &["stagger", "map"]);
        assert_valid(&format!("{other},stagger=0"));
    }
    assert!(Spec::parse("stagger=-1").is_err());
    assert!(Spec::parse("stagger=70000").is_err());
}

#[test]
fn a_tail_margin_widens_a_persistent_pools_last_rows_between_rho_and_rescue() {
    // The default spec samples at rho 1.5 and rescues at 1.75.
    let s = spec("tail=1.6@264");
    assert_valid("tail=1.6@264");
    assert_eq!((s.tail_rows, s.tail_rho), (264, Centi(160)));
    // Printed last when set (after a stagger), and read back to the same Spec.
    let both = spec("tail=1.6@264,stagger=16");
    assert!(
        both.to_string().ends_with(",stagger=16,tail=1.6@264"),
        "{both}"
    );
    assert_eq!(spec(&both.to_string()), both);
    // Left out it is not printed: the canonical texts of other specs do not change.
    assert_eq!(spec("").to_string(), Spec::default().to_string());
    assert!(!Spec::default().to_string().contains("tail"));
    // At or below rho it would not widen the margin; at or above rescue the band rescue's
    // endpoint would not be the lower one.
    assert_breaks("tail=1.5@264", &["tail", "rho"]);
    assert_breaks("tail=1.2@264", &["tail", "rho"]);
    assert_breaks("tail=1.75@264", &["tail", "rescue"]);
    assert_valid("propose=sampled(stride=128,rho=1.5),tail=8@264");
    assert_breaks(
        "propose=sampled(stride=128,rho=1.5),tail=8.01@264",
        &["tail"],
    );
    assert_valid("tail=1.6@65536");
    assert_breaks("tail=1.6@65537", &["tail"]);
    // A pool to widen and a sampled margin to widen.
    for other in [
        "map=kvsplit(4)",
        "map=cluster(8),threads=1024",
        "map=staged",
    ] {
        assert_breaks(&format!("{other},tail=1.6@264"), &["tail", "map"]);
    }
    assert_breaks("propose=exact,tail=1.6@264", &["tail", "propose"]);
    // A hand-built margin without its rows is reported, not silently dropped.
    let rowless = Spec {
        tail_rho: Centi(160),
        ..Spec::default()
    };
    assert_eq!(rowless.validate().unwrap_err().fields(), ["tail"]);
    for bad in [
        "tail=1.6",
        "tail=@264",
        "tail=1.6@",
        "tail=1.6@-1",
        "tail=x@264",
        "tail=1.6@0",
    ] {
        assert!(Spec::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn the_tail_is_the_last_rows_of_a_call_of_one_to_four_pools() {
    let s = spec("tail=1.6@264");
    assert_eq!(s.tail_rank(), Some(26)); // ceil(1.6 * 2048 / 128) = 25.6 -> 26
    assert_eq!(s.sample_rank(), Some(24));
    // A call of at most one pool of rows has no tail: every row starts at once.
    assert!((0..264).all(|r| !s.in_tail(r, 264)));
    // Above it, the last 264 rows are the tail, up to four pools of rows.
    for m in [265u64, 512, 1024, 1056] {
        assert!(!s.in_tail(m - 265, m), "{m}");
        assert!(s.in_tail(m - 264, m) && s.in_tail(m - 1, m), "{m}");
    }
    assert!((0..1057).all(|r| !s.in_tail(r, 1057)));
    // No tail margin, no tail.
    assert!(!Spec::default().in_tail(1000, 1024));
    assert_eq!(Spec::default().tail_rank(), None);
    // The deepest rank a view must hold: the rescue rank, or the tail's without a rescue.
    assert_eq!(s.min_view_len(), s.rescue_rank());
    let no_rescue = spec("propose=sampled(stride=128,rho=1.5),tail=2@264");
    assert_eq!(no_rescue.min_view_len(), Some(32));
}
