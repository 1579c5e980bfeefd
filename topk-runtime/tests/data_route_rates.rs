//! What a proposal policy does on a generated profile (`data::route_rates`, behind
//! `topk routes`): route shares, per-row outcomes and view underfill agree with the CPU
//! backend's routes; and the kernels' route words summarize into the same statistics.

#[test]
fn the_stride_view_statistic_agrees_with_the_cpu_backends_recovery_routes() {
    use topk_dsl::{Centi, Proposal, Spec};
    use topk_runtime::data::route_rates::{route_rates, view_underfill, ViewShape};
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
    use topk_runtime::data::route_rates::{route_rates, row_outcomes};
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
                Route::Primary | Route::Rescue | Route::PriorPrimary | Route::PriorRescue => {
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
    let stats = RouteStats::from_row_info(&info, true);
    assert_eq!(stats, RouteStats::from_rows(expected, true));
    assert_eq!(stats.rows, [2, 2, 1, 0, 1, 0, 0]);
    assert_eq!((stats.candidates, stats.max_candidates), (9_753, 4_100));
    assert_eq!(
        stats.per_row_candidates.as_deref(),
        Some(&[3_600, 0, 4_100, 2_048, 5, 0][..])
    );
    // Without per-row lists only the sums.
    let plain = RouteStats::from_row_info(&info, false);
    assert_eq!((plain.per_row, plain.per_row_candidates), (None, None));
    assert_eq!(plain.rows, stats.rows);
    // No rows: empty lists when asked for.
    assert_eq!(
        RouteStats::from_row_info(&[], true).per_row,
        Some(Vec::new())
    );
}
