//! The statistics the generated profiles must show (DESIGN §6): indexer rows concentrate their
//! exact top-K at the ends of the row and rarely underfill the primary stride boundary.

use topk_runtime::data::stats::profile_stats;
use topk_runtime::data::Profile;

const K: u32 = 2048;

#[test]
fn indexer_window_has_endpoint_structure_and_rare_underfill() {
    let s = profile_stats(Profile::Indexer, 64, 131_072, 1, K).unwrap();
    assert_eq!(s.rows, 64);
    assert!(
        (0.50..=0.75).contains(&s.endpoint_share),
        "endpoint share {}",
        s.endpoint_share
    );
    // One underfilled row in 64 would already be 1.6%; the measured rate is far below that.
    assert!(
        s.underfill_rate <= 1.0 / 64.0,
        "underfill {}",
        s.underfill_rate
    );
}

#[test]
fn iid_rows_have_no_endpoint_structure() {
    let s = profile_stats(Profile::Iid, 32, 65_536, 2, K).unwrap();
    // Uniform positions put 20% of the top-K in the two outer deciles.
    assert!(
        (0.17..=0.23).contains(&s.endpoint_share),
        "endpoint share {}",
        s.endpoint_share
    );
}

#[test]
fn short_windows_measure_only_rows_longer_than_k() {
    let s = profile_stats(Profile::Indexer, 8, 2050, 3, K).unwrap();
    assert_eq!(s.rows, 2); // lengths 2043..=2050: only 2049 and 2050 exceed K
    assert_eq!(s.underfill_rate, 0.0); // views of ~16 samples are too short: exact route
}

/// The measurement reported for the paper's widths; run with
/// `cargo test --release -p topk-runtime --test data_stats -- --ignored --nocapture`.
#[test]
#[ignore = "minutes in release: generates and selects hundreds of rows of up to 1M scores"]
fn report_endpoint_share_and_underfill_at_paper_widths() {
    let rows: usize = std::env::var("TOPK_STATS_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512);
    for profile in [Profile::Indexer, Profile::Iid] {
        for width in [131_072, 262_144, 1_048_576] {
            let t = std::time::Instant::now();
            let s = profile_stats(profile, rows, width, 1, K).unwrap();
            println!(
                "{profile:>8} N={width:>8} rows={:>5} endpoint_share={:.3} underfill={:.4} ({:.1}s)",
                s.rows,
                s.endpoint_share,
                s.underfill_rate,
                t.elapsed().as_secs_f64()
            );
            if profile == Profile::Indexer {
                assert!((0.50..=0.75).contains(&s.endpoint_share));
                assert!(s.underfill_rate < 0.01);
            }
        }
    }
}

#[test]
fn the_stride_view_statistic_agrees_with_the_cpu_backends_recovery_routes() {
    use topk_dsl::{Centi, Proposal, Spec};
    use topk_runtime::data::stats::{route_rates, view_underfill, ViewShape};
    use topk_runtime::data::Profile;
    // rho = 1.0 without rescue underfills about half the rows: a strong cross-check, for the
    // stride view and for the grouped views the kernels can also run (view=run(R)).
    for run in [1u8, 2, 4, 8] {
        let spec = Spec {
            proposal: Proposal::Sampled {
                stride: 128,
                rho: Centi(100),
                rescue: None,
                exact_below: 0,
            },
            view_run: run,
            ..Spec::default()
        };
        for profile in [Profile::Indexer, Profile::Iid] {
            let rates = route_rates(profile, 256, 65_536, 3, &spec).unwrap();
            let (underfill, rows) = view_underfill(
                profile,
                256,
                65_536,
                3,
                2048,
                ViewShape {
                    stride: 128,
                    run: run as u32,
                    rho: Centi(100),
                },
            )
            .unwrap();
            assert_eq!(rows, rates.rows);
            assert!(
                (underfill - rates.recovery).abs() < 1e-12,
                "{profile} run {run}: {underfill} vs {}",
                rates.recovery
            );
            assert!(underfill > 0.1, "rho = 1 must underfill often: {underfill}");
        }
    }
}

#[test]
fn per_row_outcomes_add_up_to_the_route_rates_and_follow_the_call_block_by_block() {
    use topk_dsl::Spec;
    use topk_runtime::data::stats::{route_rates, row_outcomes};
    use topk_runtime::data::Profile;
    use topk_runtime::Route;
    // A call longer than one generation block, short rows included (lengths 1..=width), with a
    // tail margin so the rows' rank depends on their place in the whole call.
    let spec: Spec = "k=512,propose=sampled(stride=32,rho=1.25,rescue=2.5),tail=2@300"
        .parse()
        .unwrap();
    let (rows, width) = (1100, 1100);
    for profile in [Profile::Indexer, Profile::Iid] {
        let per_row = row_outcomes(profile, rows, width, 5, &spec).unwrap();
        let rates = route_rates(profile, rows, width, 5, &spec).unwrap();
        assert_eq!(per_row.len(), rows);
        let long: Vec<_> = per_row.iter().filter(|o| o.route != Route::Short).collect();
        assert_eq!(long.len(), rates.rows);
        let primary = long.iter().filter(|o| o.route == Route::Primary).count();
        assert!((primary as f64 / long.len() as f64 - rates.primary).abs() < 1e-12);
        let mean = long.iter().map(|o| o.candidates).sum::<u64>() as f64 / long.len() as f64;
        assert!(
            (mean - rates.mean_candidates).abs() < 1e-9,
            "{mean} vs {}",
            rates.mean_candidates
        );
        for (r, o) in per_row.iter().enumerate() {
            // Terminal causal window: row r holds width - rows + r + 1 scores (at least 1 here).
            assert_eq!(o.length as usize, (width + r + 1).saturating_sub(rows));
            assert_eq!(o.route == Route::Short, o.length <= 512, "row {r}");
            match o.route {
                Route::Short => assert_eq!(o.candidates, 0, "row {r}"),
                // A certified band holds at least K scores.
                Route::Primary | Route::Rescue => {
                    assert!(
                        o.candidates >= 512,
                        "row {r}: |Q0| {} below K",
                        o.candidates
                    )
                }
                // The exact routes refine the boundary bin alone.
                Route::Recovery | Route::DirectExact => assert!(
                    (1..=o.length as u64).contains(&o.candidates),
                    "row {r}: |Q0| {}",
                    o.candidates
                ),
            }
        }
    }
}

#[test]
fn the_kernels_route_words_summarize_into_route_stats() {
    use topk_runtime::cuda::selector::route_stats;
    use topk_runtime::{Route, RouteStats};
    // (route code, |Q0|) pairs as the kernels write them: an unknown code reads as short and a
    // negative count as 0.
    let info = [1, 3_600, 0, 0, 2, 4_100, 4, 2_048, 9, 5, 1, -1];
    let expected = [
        (Route::Primary, 3_600),
        (Route::Short, 0),
        (Route::Rescue, 4_100),
        (Route::DirectExact, 2_048),
        (Route::Short, 5),
        (Route::Primary, 0),
    ];
    let stats = route_stats(&info, true);
    assert_eq!(stats, RouteStats::from_rows(expected, true));
    assert_eq!(stats.rows, [2, 2, 1, 0, 1]);
    assert_eq!((stats.candidates, stats.max_candidates), (9_753, 4_100));
    assert_eq!(
        stats.per_row_candidates.as_deref(),
        Some(&[3_600, 0, 4_100, 2_048, 5, 0][..])
    );
    // Without per-row lists only the sums.
    let plain = route_stats(&info, false);
    assert_eq!((plain.per_row, plain.per_row_candidates), (None, None));
    assert_eq!(plain.rows, stats.rows);
    // No rows: empty lists when asked for.
    assert_eq!(route_stats(&[], true).per_row, Some(Vec::new()));
}
