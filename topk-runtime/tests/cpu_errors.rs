//! Bad input is an error that names the problem, never a panic or a silently wrong answer.

mod cpu_support;

use cpu_support::{Matrix, Rng};
use topk_dsl::{Proposal, Spec, MAX_K};
use topk_runtime::{cpu, Error, ScoreMatrix};

fn spec(k: u32) -> Spec {
    Spec {
        k,
        ..Spec::default()
    }
}

fn exact_spec(k: u32) -> Spec {
    Spec {
        k,
        proposal: Proposal::Exact,
        ..Spec::default()
    }
}

/// Rows of 0, 100 and 40_000 gaussian scores (short, direct-exact and sampled at K = 256).
fn rows() -> Vec<Vec<f32>> {
    let mut rng = Rng::new(1);
    [0, 100, 40_000, 40_000]
        .iter()
        .map(|&len| (0..len).map(|_| rng.gaussian()).collect())
        .collect()
}

/// Every entry point's error on `m` at rank `k`.
fn all_errors(m: &ScoreMatrix, k: usize) -> Vec<Error> {
    let mut out = vec![0; m.rows * k];
    vec![
        cpu::select(&spec(k as u32), m, &mut out, k, false).unwrap_err(),
        cpu::select(&exact_spec(k as u32), m, &mut out, k, false).unwrap_err(),
        cpu::oracle(m, k, &mut out, k).unwrap_err(),
        cpu::select_baseline(m, k, &mut out, k).unwrap_err(),
        cpu::verify(m, k, &out, k).unwrap_err(),
    ]
}

fn assert_nan_at(rows: Vec<Vec<f32>>, k: usize, row: usize, col: usize) {
    let m = Matrix::from_rows(&rows, 40_000, 40_003);
    for err in all_errors(&m.view(), k) {
        match err {
            Error::NaN { row: r, col: c } => assert_eq!((r, c), (row, col)),
            other => panic!("expected NaN at ({row}, {col}), got {other}"),
        }
    }
}

#[test]
fn nan_is_reported_with_its_position_on_every_route() {
    let k = 256;
    // A short row.
    let mut r = rows();
    r[1][7] = f32::NAN;
    assert_nan_at(r, 1000, 1, 7);
    // Direct-exact (the view of 100 scores is too short) and sampled rows, both far from and
    // on the stride view (row 3 has phase (17 * 3 + 13) mod 128 = 64).
    for (row, col) in [
        (1, 99),
        (2, 0),
        (2, 39_999),
        (2, 12_345),
        (3, 64 + 128 * 50),
    ] {
        let mut r = rows();
        r[row][col] = -f32::NAN;
        assert_nan_at(r, k, row, col);
    }
    // A NaN above every score, where the proposal would otherwise admit it.
    let mut r = rows();
    for x in r[3].iter_mut().step_by(7) {
        *x = f32::NAN;
    }
    assert_nan_at(r, k, 3, 0);
}

#[test]
fn nan_in_the_padding_beyond_the_length_is_ignored() {
    // Matrix::from_rows fills the padding with NaN.
    let m = Matrix::from_rows(&rows(), 40_100, 40_101);
    let mut out = vec![0; m.rows * 256];
    cpu::select(&spec(256), &m.view(), &mut out, 256, false).unwrap();
    assert!(cpu::verify(&m.view(), 256, &out, 256).unwrap().is_exact());
}

#[test]
fn lengths_outside_the_width_are_rejected() {
    for bad in [-1, 40_001, i32::MIN, i32::MAX] {
        let mut m = Matrix::from_rows(&rows(), 40_000, 40_000);
        m.lengths[2] = bad;
        for err in all_errors(&m.view(), 16) {
            match err {
                Error::Length { row, len, width } => {
                    assert_eq!((row, len, width), (2, bad as i64, 40_000))
                }
                other => panic!("length {bad}: got {other}"),
            }
        }
    }
}

#[test]
fn k_outside_its_range_is_rejected() {
    let m = Matrix::from_rows(&rows(), 40_000, 40_000);
    for k in [0, MAX_K as usize + 1] {
        let mut out = vec![0; m.rows * (k + 1)];
        // The spec is validated first; either way the error names K.
        let err = cpu::select(&spec(k as u32), &m.view(), &mut out, k.max(1), false).unwrap_err();
        assert!(
            matches!(err, Error::K { .. } | Error::Spec(_)),
            "K = {k}: {err}"
        );
        assert!(err.to_string().contains(&k.to_string()), "K = {k}: {err}");
        let errs = [
            cpu::oracle(&m.view(), k, &mut out, k.max(1)).unwrap_err(),
            cpu::select_baseline(&m.view(), k, &mut out, k.max(1)).unwrap_err(),
            cpu::verify(&m.view(), k, &out, k.max(1)).unwrap_err(),
        ];
        for err in errs {
            assert!(
                matches!(err, Error::K { k: got, .. } if got == k),
                "K = {k}: {err}"
            );
        }
    }
}

#[test]
fn shapes_that_do_not_fit_their_buffers_are_rejected() {
    let m = Matrix::from_rows(&rows(), 40_000, 40_000);
    let view = m.view();
    let input = |s: ScoreMatrix, out_len: usize, out_pitch: usize| {
        let mut out = vec![0; out_len];
        match cpu::select(&spec(16), &s, &mut out, out_pitch, false) {
            Err(Error::Input(msg)) => msg,
            other => panic!("expected an input error, got {other:?}"),
        }
    };
    let msg = input(
        ScoreMatrix {
            pitch: 39_999,
            ..view
        },
        64,
        16,
    );
    assert!(msg.contains("pitch"), "{msg}");
    let msg = input(
        ScoreMatrix {
            lengths: &m.lengths[..3],
            ..view
        },
        64,
        16,
    );
    assert!(msg.contains("lengths"), "{msg}");
    let msg = input(
        ScoreMatrix {
            data: &m.data[..3 * 40_000 + 39_999],
            ..view
        },
        64,
        16,
    );
    assert!(msg.contains("score buffer"), "{msg}");
    let msg = input(
        ScoreMatrix {
            pitch: usize::MAX,
            ..view
        },
        64,
        16,
    );
    assert!(msg.contains("score buffer"), "{msg}");
    let msg = input(view, 3 * 16 + 15, 16);
    assert!(msg.contains("index buffer"), "{msg}");
    let msg = input(view, 64, 15);
    assert!(msg.contains("pitch"), "{msg}");
    // The last row needs only K slots, not a whole pitch.
    let mut out = vec![0; 3 * 20 + 16];
    cpu::select(&spec(16), &view, &mut out, 20, false).unwrap();
}

#[test]
fn an_empty_matrix_is_fine() {
    let m = Matrix::from_rows(&[], 0, 0);
    let mut out = Vec::new();
    let stats = cpu::select(&spec(16), &m.view(), &mut out, 16, true).unwrap();
    assert_eq!(stats.total_rows(), 0);
    assert_eq!(stats.per_row, Some(vec![]));
    assert!(cpu::verify(&m.view(), 16, &out, 16).unwrap().is_exact());
}

#[test]
fn a_spec_the_cpu_cannot_run_is_an_error() {
    let m = Matrix::from_rows(&rows(), 40_000, 40_000);
    let mut out = vec![0; 4 * 16];
    let mut bad_digits = spec(16);
    bad_digits.digits = topk_dsl::Digits::new3(11, 11, 11);
    let mut zero_stride = spec(16);
    zero_stride.proposal = Proposal::Sampled {
        stride: 0,
        rho: topk_dsl::Centi(150),
        rescue: None,
        exact_below: 0,
    };
    for s in [bad_digits, zero_stride] {
        let err = cpu::select(&s, &m.view(), &mut out, 16, false).unwrap_err();
        assert!(matches!(err, Error::Spec(_)), "{err}");
    }
}
