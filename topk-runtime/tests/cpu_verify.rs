//! The verifier accepts every exact answer, whatever the tie-breaking, and catches each way an
//! answer can be wrong.

mod cpu_support;

use cpu_support::{Matrix, Rng};
use topk_runtime::{cpu, ScoreMatrix};

const K: usize = 64;

/// Rows of distinct scores (so that any change of the selection is a violation), then a short
/// row of 10 and an empty row.
fn distinct_rows() -> Matrix {
    let mut rng = Rng::new(17);
    let mut rows: Vec<Vec<f32>> = (0..6)
        .map(|r| {
            (0..500 + 37 * r)
                .map(|i| i as f32 + rng.unit() * 0.5)
                .collect()
        })
        .collect();
    for row in &mut rows {
        for i in (1..row.len()).rev() {
            row.swap(i, rng.below(i + 1));
        }
    }
    rows.push((0..10).map(|i| i as f32).collect());
    rows.push(Vec::new());
    Matrix::from_rows(&rows, 800, 801)
}

fn oracle_output(m: &Matrix) -> Vec<i32> {
    let mut out = vec![0; m.rows * K];
    cpu::oracle(&m.view(), K, &mut out, K).unwrap();
    out
}

/// The verdict on a tampered copy of a correct answer.
fn verdict(m: &Matrix, tamper: impl FnOnce(&ScoreMatrix, &mut [i32])) -> cpu::VerifyReport {
    let mut out = oracle_output(m);
    tamper(&m.view(), &mut out);
    cpu::verify(&m.view(), K, &out, K).unwrap()
}

fn assert_caught(report: &cpu::VerifyReport, row: usize, needle: &str) {
    assert_eq!(report.rows_violating, 1, "{report}");
    assert_eq!(report.violations[0].row, row, "{report}");
    assert!(
        report.violations[0].what.contains(needle),
        "expected `{needle}` in: {report}"
    );
}

/// The best unselected index of row 2 and the slot holding its weakest selected index.
fn best_unselected_and_weakest_slot(view: &ScoreMatrix, out: &[i32]) -> (i32, usize) {
    let row = view.row(2);
    let slots = &out[2 * K..][..K];
    let best = (0..row.len() as i32)
        .filter(|i| !slots.contains(i))
        .max_by(|&a, &b| row[a as usize].total_cmp(&row[b as usize]))
        .unwrap();
    let weakest = (0..K)
        .min_by(|&a, &b| row[slots[a] as usize].total_cmp(&row[slots[b] as usize]))
        .unwrap();
    (best, weakest)
}

#[test]
fn accepts_the_oracle_and_the_selector() {
    let m = distinct_rows();
    let report = verdict(&m, |_, _| {});
    assert!(report.is_exact(), "{report}");
    assert_eq!(report.rows_checked, m.rows);
    let mut out = vec![0; m.rows * K];
    cpu::select(
        &topk_dsl::Spec {
            k: K as u32,
            ..Default::default()
        },
        &m.view(),
        &mut out,
        K,
        false,
    )
    .unwrap();
    assert!(cpu::verify(&m.view(), K, &out, K).unwrap().is_exact());
}

#[test]
fn accepts_any_order_and_any_tie_breaking() {
    // Reversed order inside every long row, and inside the valid prefix of the short one.
    let m = distinct_rows();
    let report = verdict(&m, |_, out| {
        out[..6 * K].chunks_mut(K).for_each(|r| r.reverse());
        out[6 * K..][..10].reverse();
    });
    assert!(report.is_exact(), "{report}");
    // Ties at rank K: K - 1 large scores and three equal ones; any of the three completes it.
    // Signed zeros tie as well.
    for tie in [5.0f32, 0.0] {
        let mut row: Vec<f32> = (0..K - 1).map(|i| 100.0 + i as f32).collect();
        row.extend([tie, -tie, tie, -1.0, -2.0]);
        let m = Matrix::from_rows(&[row], K + 4, K + 4);
        let tied: Vec<i32> = if tie == 0.0 {
            vec![63, 64, 65]
        } else {
            vec![63, 65]
        };
        for pick in tied {
            let mut out: Vec<i32> = (0..K as i32 - 1).collect();
            out.push(pick);
            let report = cpu::verify(&m.view(), K, &out, K).unwrap();
            assert!(report.is_exact(), "tie {tie}, pick {pick}: {report}");
        }
    }
}

#[test]
fn catches_a_smaller_score_swapped_in() {
    let m = distinct_rows();
    let report = verdict(&m, |view, out| {
        let (_, weakest) = best_unselected_and_weakest_slot(view, out);
        // Replace the best selected index by the worst score of the row.
        let row = view.row(2);
        let worst = (0..row.len())
            .min_by(|&a, &b| row[a].total_cmp(&row[b]))
            .unwrap();
        let best_slot = (0..K)
            .max_by(|&a, &b| row[out[2 * K + a] as usize].total_cmp(&row[out[2 * K + b] as usize]))
            .unwrap();
        assert_ne!(best_slot, weakest);
        out[2 * K + best_slot] = worst as i32;
    });
    assert_caught(&report, 2, "beats selected index");
}

#[test]
fn catches_a_wrong_index_next_to_the_boundary() {
    // The subtlest error: the best unselected index in place of the weakest selected one.
    let m = distinct_rows();
    let report = verdict(&m, |view, out| {
        let (best, weakest) = best_unselected_and_weakest_slot(view, out);
        out[2 * K + weakest] = best;
    });
    assert_caught(&report, 2, "beats selected index");
}

#[test]
fn catches_a_duplicate() {
    let m = distinct_rows();
    let report = verdict(&m, |_, out| out[4 * K + 9] = out[4 * K + 3]);
    assert_caught(&report, 4, "selected twice");
}

#[test]
fn catches_out_of_range_indices() {
    let m = distinct_rows();
    let len = m.lengths[1];
    assert_caught(
        &verdict(&m, |_, out| out[K + 5] = len),
        1,
        "outside the valid range",
    );
    assert_caught(
        &verdict(&m, |_, out| out[K + 5] = -1),
        1,
        "outside the valid range",
    );
    // A short row's index beyond its length.
    assert_caught(
        &verdict(&m, |_, out| out[6 * K + 2] = 10),
        6,
        "must list every index",
    );
}

#[test]
fn catches_a_broken_sentinel_tail() {
    let m = distinct_rows();
    // Short row 6 (L = 10): slot 10 must hold -1.
    assert_caught(
        &verdict(&m, |_, out| out[6 * K + 10] = 0),
        6,
        "must hold -1",
    );
    // Empty row 7: every slot must hold -1.
    assert_caught(
        &verdict(&m, |_, out| out[7 * K + K - 1] = 3),
        7,
        "must hold -1",
    );
    // A valid index missing from a short row (listed twice instead).
    assert_caught(&verdict(&m, |_, out| out[6 * K + 4] = 5), 6, "listed twice");
}

#[test]
fn reports_every_violating_row_but_details_only_a_few() {
    let rows: Vec<Vec<f32>> = (0..20)
        .map(|r| (0..100).map(|i| (i * r) as f32).collect())
        .collect();
    let m = Matrix::from_rows(&rows, 100, 100);
    let report = verdict(&m, |_, out| {
        for r in (0..20).step_by(2) {
            out[r * K + 1] = out[r * K];
        }
    });
    assert!(!report.is_exact());
    assert_eq!(report.rows_checked, 20);
    assert_eq!(report.rows_violating, 10);
    let listed: Vec<usize> = report.violations.iter().map(|v| v.row).collect();
    assert!(!listed.is_empty() && listed.len() < 10, "{listed:?}");
    assert!(
        listed.iter().zip(0..).all(|(&row, n)| row == 2 * n),
        "first rows, in order: {listed:?}"
    );
    assert!(
        report.to_string().starts_with("10 of 20 rows violate"),
        "{report}"
    );
}

#[test]
fn verifies_a_million_wide_row_in_linear_time() {
    let mut rng = Rng::new(23);
    let row: Vec<f32> = (0..1 << 20).map(|_| rng.gaussian()).collect();
    let m = Matrix::from_rows(&[row], 1 << 20, 1 << 20);
    let k = 2048;
    let mut out = vec![0; k];
    cpu::oracle(&m.view(), k, &mut out, k).unwrap();
    assert!(cpu::verify(&m.view(), k, &out, k).unwrap().is_exact());
    out.swap(0, k - 1); // order does not matter
    assert!(cpu::verify(&m.view(), k, &out, k).unwrap().is_exact());
}
