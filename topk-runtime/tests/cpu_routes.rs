//! Each route of paper Table 2 is taken exactly when the definition says so, and the route
//! statistics count what happened.

mod cpu_support;

use cpu_support::{assert_exact, Matrix, Rng};
use topk_dsl::{Centi, Proposal, Spec};
use topk_runtime::{cpu, Route, RouteStats};

fn sampled(k: u32, stride: u32, rho: u16, rescue: Option<u16>) -> Spec {
    Spec {
        k,
        proposal: Proposal::Sampled {
            stride,
            rho: Centi(rho),
            rescue: rescue.map(Centi),
            exact_below: 0,
        },
        ..Spec::default()
    }
}

fn run(spec: &Spec, rows: &[Vec<f32>]) -> RouteStats {
    let k = spec.k as usize;
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    let m = Matrix::from_rows(rows, width, width);
    let mut out = vec![0; rows.len() * k];
    let stats = cpu::select(spec, &m.view(), &mut out, k, true).unwrap();
    assert_exact(&m, k, &out, k, &format!("`{spec:?}`"));
    stats
}

/// K = 256, stride 16, rho 1.0 (q = 16), rescue 4.0 (q1 = 64): a row whose view holds 16
/// scores of 4.0, 48 of 2.0 and zeros elsewhere, plus `extra_twos` more 2.0 off the view.
/// tau0 is 4.0's bin and admits 16 < K; tau1 is 2.0's bin and admits 64 + `extra_twos`.
fn banded_row(spec: &Spec, row_index: usize, len: usize, extra_twos: usize) -> Vec<f32> {
    let stride = spec.stride().unwrap() as usize;
    let phase = spec.view_phase(row_index as u64).unwrap() as usize;
    let mut row = vec![0.0f32; len];
    let (mut on_view, mut off_view) = (0, 0);
    for (i, x) in row.iter_mut().enumerate() {
        if i % stride == phase {
            *x = match on_view {
                0..16 => 4.0,
                16..64 => 2.0,
                _ => 0.0,
            };
            on_view += 1;
        } else if off_view < extra_twos {
            *x = 2.0;
            off_view += 1;
        }
    }
    row
}

#[test]
fn every_route_is_taken_when_its_condition_holds() {
    let with_rescue = sampled(256, 16, 100, Some(400));
    let rows = vec![
        vec![1.5; 200],                              // L <= K
        vec![3.0; 5000],                             // every score admitted by tau0
        banded_row(&with_rescue, 2, 16_384, 300),    // 16 < K <= 364
        banded_row(&with_rescue, 3, 16_384, 100),    // 164 < K
        (0..600).map(|i| (i % 37) as f32).collect(), // view of 37 samples < q1 = 64
    ];
    let stats = run(&with_rescue, &rows);
    assert_eq!(
        stats.per_row.as_deref().unwrap(),
        [
            Route::Short,
            Route::Primary,
            Route::Rescue,
            Route::Recovery,
            Route::DirectExact
        ]
    );
    for route in Route::WITHOUT_PRIOR {
        assert_eq!(stats.count(route), 1, "{route:?}");
    }
    // |Q0|: all 5000 admitted; A(tau1) = 364; the recovery and direct-exact frontiers are
    // the boundary coarse bins (0.0's bin: 16_384 - 164 zeros; the bins of 0..37).
    assert_eq!(stats.max_candidates, 16_384 - 164);
    assert!(stats.candidates > 5000 + 364 + (16_384 - 164));
}

#[test]
fn without_rescue_an_underfilled_proposal_goes_to_recovery() {
    let with_rescue = sampled(256, 16, 100, Some(400));
    let without = sampled(256, 16, 100, None);
    // Same phases for both specs; min_view_len is q = 16 without rescue.
    let rows: Vec<Vec<f32>> = (0..4)
        .map(|r| banded_row(&with_rescue, r, 16_384, 300))
        .collect();
    assert_eq!(run(&with_rescue, &rows).count(Route::Rescue), 4);
    assert_eq!(run(&without, &rows).count(Route::Recovery), 4);
}

#[test]
fn the_exact_proposal_always_takes_the_direct_route() {
    let spec = Spec {
        k: 64,
        proposal: Proposal::Exact,
        ..Spec::default()
    };
    let mut rng = Rng::new(3);
    let rows: Vec<Vec<f32>> = (0..20)
        .map(|r| (0..100 * r).map(|_| rng.unit()).collect())
        .collect();
    let stats = run(&spec, &rows);
    assert_eq!(stats.count(Route::Short), 1);
    assert_eq!(stats.count(Route::DirectExact), 19);
}

#[test]
fn a_view_shorter_than_the_rescue_rank_is_not_used() {
    // K = 256, stride 16, rescue 4.0: q1 = 64 samples are needed; row 0 has phase 13.
    let spec = sampled(256, 16, 100, Some(400));
    let phase = spec.view_phase(0).unwrap() as usize;
    let len_with = |samples: usize| phase + 16 * (samples - 1) + 1;
    let row = |len: usize| vec![vec![1.0f32; len]];
    assert_eq!(run(&spec, &row(len_with(63))).count(Route::DirectExact), 1);
    assert_eq!(run(&spec, &row(len_with(64))).count(Route::Primary), 1);
}

#[test]
fn rows_shorter_than_exact_below_take_the_direct_route() {
    let mut spec = sampled(256, 16, 150, Some(250));
    if let Proposal::Sampled { exact_below, .. } = &mut spec.proposal {
        *exact_below = 5_000;
    }
    let mut rng = Rng::new(11);
    // Every row's view is long enough to be usable; only the length decides.
    let rows: Vec<Vec<f32>> = [4_999, 5_000, 4_000, 20_000]
        .iter()
        .map(|&len| (0..len).map(|_| rng.unit()).collect())
        .collect();
    let stats = run(&spec, &rows);
    assert_eq!(stats.count(Route::DirectExact), 2, "{stats:?}");
    assert_eq!(
        stats.count(Route::Primary) + stats.count(Route::Rescue) + stats.count(Route::Recovery),
        2,
        "{stats:?}"
    );
    let sampling_everywhere = run(&sampled(256, 16, 150, Some(250)), &rows);
    assert_eq!(
        sampling_everywhere.count(Route::DirectExact),
        0,
        "{sampling_everywhere:?}"
    );
}

#[test]
fn a_margin_free_target_underfills_some_iid_rows() {
    // Exponential scores spread the top of the row over many coarse bins, so a target of
    // exactly K sampled ranks lands on either side of rank K.
    let mut rng = Rng::new(5);
    let rows: Vec<Vec<f32>> = (0..64)
        .map(|_| (0..65_536).map(|_| -(1.0 - rng.unit()).ln()).collect())
        .collect();
    let tight = run(&sampled(512, 64, 100, None), &rows);
    assert!(tight.count(Route::Recovery) > 0, "{tight:?}");
    assert!(tight.count(Route::Primary) > 0, "{tight:?}");
    let rescued = run(&sampled(512, 64, 100, Some(200)), &rows);
    assert!(rescued.count(Route::Rescue) > 0, "{rescued:?}");
    assert!(rescued.count(Route::Recovery) < tight.count(Route::Recovery));
    // The paper's margin on the same rows: fewer underfills than no margin at all.
    let paper = run(&sampled(512, 64, 150, Some(175)), &rows);
    assert!(paper.count(Route::Primary) > tight.count(Route::Primary));
}

#[test]
fn route_statistics_add_up() {
    let mut rng = Rng::new(9);
    let rows: Vec<Vec<f32>> = (0..40)
        .map(|r| (0..r * 700).map(|_| rng.gaussian()).collect())
        .collect();
    let spec = sampled(1000, 64, 150, Some(175));
    let stats = run(&spec, &rows);
    assert_eq!(stats.total_rows(), 40);
    assert_eq!(stats.count(Route::Short), 2); // lengths 0 and 700
    let per_row = stats.per_row.as_deref().unwrap();
    for (route, &n) in Route::ALL.iter().zip(&stats.rows) {
        assert_eq!(per_row.iter().filter(|&r| r == route).count() as u64, n);
    }
    assert!(stats.max_candidates >= 1000 && stats.max_candidates <= 27_300);
    assert!(stats.candidates >= 38 * 1000);

    let m = Matrix::from_rows(&rows, 27_300, 27_300);
    let mut out = vec![0; 40 * 1000];
    let quiet = cpu::select(&spec, &m.view(), &mut out, 1000, false).unwrap();
    assert_eq!(quiet.per_row, None);
    assert_eq!(quiet.rows, stats.rows);
}

/// A tail margin (`Spec::tail_rows`) moves the last rows of a call of one to four pools of rows
/// to the tail's rank, and only them: on banded rows whose primary boundary underfills at rho
/// (a rescue) and fills at the tail's margin, the tail rows take the primary route.
#[test]
fn a_tail_margin_gives_the_calls_last_rows_the_wider_rank() {
    // q = 16, q_tail = 32 (2.0's bin: 64 + 200 >= K admitted), q1 = 64.
    let spec = Spec {
        tail_rows: 4,
        tail_rho: Centi(200),
        ..sampled(256, 16, 100, Some(400))
    };
    spec.validate().unwrap();
    let rows_of = |m: usize| -> Vec<Vec<f32>> {
        (0..m).map(|r| banded_row(&spec, r, 16 * 80, 200)).collect()
    };
    let routes = |m: usize| run(&spec, &rows_of(m)).per_row.unwrap();
    // 12 rows (three pools): rows 8..12 are the tail.
    let twelve = routes(12);
    assert_eq!(twelve[..8], [Route::Rescue; 8]);
    assert_eq!(twelve[8..], [Route::Primary; 4]);
    // One pool of rows or fewer, or more than four pools: no tail.
    assert_eq!(routes(4), [Route::Rescue; 4]);
    assert_eq!(routes(17), [Route::Rescue; 17]);
    let sixteen = routes(16);
    assert_eq!(sixteen[12..], [Route::Primary; 4]);
    assert_eq!(sixteen[..12], [Route::Rescue; 12]);

    // Selected in blocks of a 12-row call, the rows take the routes they take in one piece.
    let rows = rows_of(12);
    let k = spec.k as usize;
    let m = Matrix::from_rows(&rows, 16 * 80, 16 * 80);
    let whole = m.view();
    let mut blocked = Vec::new();
    for first in (0..12).step_by(5) {
        let n = 5.min(12 - first);
        let block = Matrix::from_rows(&rows[first..first + n], 16 * 80, 16 * 80);
        let mut out = vec![0; n * k];
        let stats =
            cpu::select_rows_from(&spec, &block.view(), first as u64, 12, &mut out, k, true)
                .unwrap();
        blocked.extend(stats.per_row.unwrap());
    }
    assert_eq!(blocked, twelve);
    // A block must lie inside its call.
    let mut out = vec![0; 12 * k];
    assert!(cpu::select_rows_from(&spec, &whole, 1, 12, &mut out, k, true).is_err());
}
