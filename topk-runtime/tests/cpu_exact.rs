//! The CPU selector is exact on every family of rows we can think of, for many ranks, specs,
//! lengths and an odd pitch: checked by the eq. 30 verifier and against the brute-force oracle.

mod cpu_support;

use cpu_support::{assert_exact, Matrix, Rng};
use topk_dsl::{Centi, Proposal, Spec};
use topk_runtime::{cpu, Route};

#[derive(Clone, Copy, Debug)]
enum Family {
    Uniform,
    Gaussian,
    Exponential,
    AllEqual,
    TwoValues,
    TiesAtRankK,
    Ascending,
    Descending,
    /// High scores exactly on the view's residue class: the sample overshoots.
    StrideAlignedHigh,
    /// Low scores exactly on the view's residue class: the sample undershoots.
    StrideAlignedLow,
    Infinities,
    SignedZeros,
    Subnormals,
    BeyondHalfRange,
    FlushedByHalf,
    RandomBits,
    FewLevels,
}

const FAMILIES: [Family; 17] = [
    Family::Uniform,
    Family::Gaussian,
    Family::Exponential,
    Family::AllEqual,
    Family::TwoValues,
    Family::TiesAtRankK,
    Family::Ascending,
    Family::Descending,
    Family::StrideAlignedHigh,
    Family::StrideAlignedLow,
    Family::Infinities,
    Family::SignedZeros,
    Family::Subnormals,
    Family::BeyondHalfRange,
    Family::FlushedByHalf,
    Family::RandomBits,
    Family::FewLevels,
];

fn signed(rng: &mut Rng, x: f32) -> f32 {
    if rng.next_u64() & 1 == 0 {
        x
    } else {
        -x
    }
}

fn shuffle(rng: &mut Rng, row: &mut [f32]) {
    for i in (1..row.len()).rev() {
        row.swap(i, rng.below(i + 1));
    }
}

/// One row of `family`; `stride` and `phase` are those of the row's stride view.
fn generate(
    family: Family,
    rng: &mut Rng,
    len: usize,
    k: usize,
    stride: usize,
    phase: usize,
) -> Vec<f32> {
    let mut row: Vec<f32> = match family {
        Family::Uniform => (0..len).map(|_| rng.unit()).collect(),
        Family::Gaussian => (0..len).map(|_| rng.gaussian() * 10.0).collect(),
        Family::Exponential => (0..len).map(|_| -(1.0 - rng.unit()).ln()).collect(),
        Family::AllEqual => {
            let v = [0.0, 1.0, -3.5, f32::INFINITY][rng.below(4)];
            vec![v; len]
        }
        Family::TwoValues => {
            let p = rng.unit();
            (0..len)
                .map(|_| if rng.unit() < p { 2.0 } else { 1.0 })
                .collect()
        }
        Family::TiesAtRankK => {
            // `above` distinct scores, then a tied group that straddles rank K.
            let above = rng.below(k.min(len));
            let tied = (k - above + 1 + rng.below(k + 8)).min(len - above);
            let mut row: Vec<f32> = (0..len)
                .map(|i| match i {
                    i if i < above => 10.0 + i as f32,
                    i if i < above + tied => 5.0,
                    _ => rng.unit(),
                })
                .collect();
            shuffle(rng, &mut row);
            row
        }
        Family::Ascending => (0..len).map(|i| i as f32 * 0.25 - 100.0).collect(),
        Family::Descending => (0..len).map(|i| 1e4 - i as f32 * 3.0).collect(),
        Family::StrideAlignedHigh => (0..len)
            .map(|i| {
                if i % stride == phase {
                    1.0 + rng.unit()
                } else {
                    rng.unit() * 0.9
                }
            })
            .collect(),
        Family::StrideAlignedLow => (0..len)
            .map(|i| {
                if i % stride == phase {
                    -1.0 - rng.unit()
                } else {
                    rng.unit()
                }
            })
            .collect(),
        Family::Infinities => {
            let p = [0.001, 0.05, 0.5][rng.below(3)];
            (0..len)
                .map(|_| match rng.unit() {
                    u if u < p => f32::INFINITY,
                    u if u < 2.0 * p => f32::NEG_INFINITY,
                    _ => rng.gaussian(),
                })
                .collect()
        }
        Family::SignedZeros => (0..len)
            .map(|_| match rng.below(8) {
                0 => 1e-3,
                1 => -1e-3,
                2..=4 => -0.0,
                _ => 0.0,
            })
            .collect(),
        Family::Subnormals => (0..len)
            .map(|_| {
                let x = f32::from_bits((rng.next_u64() as u32) & 0x007f_ffff);
                signed(rng, x)
            })
            .collect(),
        Family::BeyondHalfRange => (0..len)
            .map(|_| {
                let x = 10f32.powf(4.8 + rng.unit() * 33.0);
                let x = if rng.below(16) == 0 {
                    rng.unit() * 65504.0
                } else {
                    x
                };
                signed(rng, x)
            })
            .collect(),
        Family::FlushedByHalf => (0..len)
            .map(|_| {
                let x = 10f32.powf(-12.0 + rng.unit() * 5.0);
                signed(rng, x)
            })
            .collect(),
        Family::RandomBits => (0..len)
            .map(|_| {
                let x = f32::from_bits(rng.next_u64() as u32);
                if x.is_nan() {
                    f32::from_bits(x.to_bits() & 0xff7f_ffff)
                } else {
                    x
                }
            })
            .collect(),
        Family::FewLevels => (0..len).map(|_| rng.below(6) as f32 - 2.0).collect(),
    };
    row.truncate(len);
    row
}

/// The policies exercised: the paper's, a denser view without rescue, a tiny stride, a
/// margin-free target that often underfills, and the exact proposal.
fn specs(k: u32) -> Vec<Spec> {
    let sampled = |stride, rho, rescue: Option<u16>| Spec {
        k,
        proposal: Proposal::Sampled {
            stride,
            rho: Centi(rho),
            rescue: rescue.map(Centi),
            exact_below: 0,
        },
        ..Spec::default()
    };
    vec![
        sampled(128, 150, Some(175)),
        sampled(64, 150, None),
        sampled(8, 125, Some(200)),
        sampled(16, 100, None),
        // Grouped views: 4 and 8 contiguous scores per group.
        Spec {
            view_run: 4,
            ..sampled(128, 175, Some(250))
        },
        Spec {
            view_run: 8,
            ..sampled(32, 100, None)
        },
        Spec {
            k,
            proposal: Proposal::Exact,
            ..Spec::default()
        },
    ]
}

/// The lengths of one test matrix: the edges around K, then random ones up to `max_len`.
fn lengths(rng: &mut Rng, k: usize, rows: usize, max_len: usize) -> Vec<usize> {
    let edges = [0, 1, k - 1, k, k + 1];
    (0..rows)
        .map(|r| match edges.get(r) {
            Some(&len) => len,
            None => k + 2 + rng.below(max_len - k - 1),
        })
        .collect()
}

/// Select every family under every spec; returns the number of rows checked.
fn check_rank(k: usize, rows_per_case: usize, max_len: usize, seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    let mut checked = 0;
    let mut routes = [0u64; Route::ALL.len()];
    for spec in specs(k as u32) {
        for family in FAMILIES {
            let lens = lengths(&mut rng, k, rows_per_case, max_len);
            let width = *lens.iter().max().unwrap();
            let pitch = width + 1 + width % 2; // odd
            let rows: Vec<Vec<f32>> = lens
                .iter()
                .enumerate()
                .map(|(r, &len)| {
                    let stride = spec.stride().unwrap_or(1) as usize;
                    let phase = spec.view_phase(r as u64).unwrap_or(0) as usize;
                    generate(family, &mut rng, len, k, stride, phase)
                })
                .collect();
            let m = Matrix::from_rows(&rows, width, pitch);
            let out_pitch = k + 3;
            let mut out = vec![i32::MIN; m.rows * out_pitch];
            let stats = cpu::select(&spec, &m.view(), &mut out, out_pitch, true).unwrap();
            let what = format!("{family:?} under `{spec:?}`");
            assert_exact(&m, k, &out, out_pitch, &what);

            // Slots past K are never written.
            for r in 0..m.rows {
                assert!(
                    out[r * out_pitch + k..][..3].iter().all(|&v| v == i32::MIN),
                    "{what}: row {r} padding written"
                );
            }
            // Routes are consistent with the lengths and the proposal.
            let per_row = stats.per_row.as_ref().unwrap();
            assert_eq!(stats.total_rows(), m.rows as u64);
            for (r, &len) in lens.iter().enumerate() {
                let route = per_row[r];
                assert_eq!(
                    route == Route::Short,
                    len <= k,
                    "{what}: row {r} (L = {len}) took {route:?}"
                );
                if spec.proposal == Proposal::Exact && len > k {
                    assert_eq!(route, Route::DirectExact, "{what}: row {r}");
                }
            }
            let refined = m.rows as u64 - stats.count(Route::Short);
            assert!(
                stats.candidates >= refined,
                "{what}: every refined row has a frontier"
            );
            assert!(stats.max_candidates <= width as u64);
            checked += m.rows;
            for (total, n) in routes.iter_mut().zip(stats.rows) {
                *total += n;
            }
        }
    }
    // The routes this rank must exercise: at K = 1 the sampled maximum always certifies.
    for route in Route::WITHOUT_PRIOR {
        let expected = match route {
            Route::Rescue => (100..=2048).contains(&k),
            Route::Recovery => k > 1,
            _ => true,
        };
        if expected {
            assert!(
                routes[route as usize] > 0,
                "K = {k}: no row took {route:?} ({routes:?})"
            );
        }
    }
    checked
}

#[test]
fn exact_at_rank_1() {
    assert!(check_rank(1, 480, 600, 1) >= 40_000);
}

#[test]
fn exact_at_rank_7() {
    assert!(check_rank(7, 480, 1000, 2) >= 40_000);
}

#[test]
fn exact_at_rank_100() {
    assert!(check_rank(100, 200, 3000, 3) >= 16_000);
}

#[test]
fn exact_at_rank_512() {
    assert!(check_rank(512, 100, 6000, 4) >= 8_000);
}

#[test]
fn exact_at_rank_2048() {
    assert!(check_rank(2048, 60, 20_000, 5) >= 5_000);
}

#[test]
fn exact_at_rank_4096() {
    assert!(check_rank(4096, 25, 30_000, 6) >= 2_000);
}

#[test]
fn exact_on_long_rows_that_need_rescue_or_recovery() {
    // Long exponential and stride-aligned rows at the paper's rank: views are usable, and
    // the proposal underfills on some of them.
    let k = 2048;
    let mut rng = Rng::new(11);
    for spec in specs(k as u32) {
        for family in [
            Family::Exponential,
            Family::StrideAlignedHigh,
            Family::TiesAtRankK,
        ] {
            let width = 150_000;
            let rows: Vec<Vec<f32>> = (0..6)
                .map(|r| {
                    let stride = spec.stride().unwrap_or(1) as usize;
                    let phase = spec.view_phase(r as u64).unwrap_or(0) as usize;
                    generate(family, &mut rng, width - r * 997, k, stride, phase)
                })
                .collect();
            let m = Matrix::from_rows(&rows, width, width);
            let mut out = vec![0; m.rows * k];
            cpu::select(&spec, &m.view(), &mut out, k, false).unwrap();
            assert_exact(&m, k, &out, k, &format!("{family:?} under `{spec:?}`"));
        }
    }
}
