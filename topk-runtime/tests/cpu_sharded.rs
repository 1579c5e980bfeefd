//! The sharded CPU selector: for every rank count, data profile, K and policy, each row's output
//! is exact on the unsharded matrix and its route is the single-device route; bad input names
//! its global row and column; a collective that breaks the sums is an error, never a panic.

mod cpu_support;

use cpu_support::{selected_keys, Matrix, Rng};
use std::cell::Cell;
use topk_dsl::{preset, Centi, Proposal, Spec, MAX_K};
use topk_runtime::cpu::sharded::{
    select_sharded, select_sharded_with, Collective, InProcessSum, ShardedScores,
};
use topk_runtime::data::{generate, Profile};
use topk_runtime::sharding::Sharding;
use topk_runtime::{cpu, Error, Result, Route, RouteStats};

const RANKS: [usize; 5] = [1, 2, 3, 4, 8];

/// The policies exercised: the sampled presets with and without rescue, the exact proposal, a
/// dense view whose samples land in every shard even on short rows, and a margin-free target
/// that often underfills (recovery).
fn specs(k: u32) -> Vec<Spec> {
    let with_k = |name| Spec {
        k,
        ..preset(name).unwrap()
    };
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
        with_k("persistent-s128-rescue"),
        with_k("persistent-s64"),
        with_k("persistent-exact"),
        sampled(8, 125, Some(200)),
        sampled(16, 100, None),
    ]
}

/// A global matrix of `width` columns (pitch = width) and its shards.
struct Sharded {
    matrix: Matrix,
    sharding: Sharding,
    shards: Vec<Vec<f32>>,
}

impl Sharded {
    fn new(sharding: Sharding, lengths: Vec<i32>, data: Vec<f32>) -> Sharded {
        let width = sharding.total_width();
        let matrix = Matrix {
            data,
            rows: lengths.len(),
            width,
            pitch: width,
            lengths,
        };
        let shards = sharding.split(&matrix.view()).unwrap();
        Sharded {
            matrix,
            sharding,
            shards,
        }
    }

    fn generated(
        profile: Profile,
        seed: u64,
        k: usize,
        sharding: Sharding,
        lengths: Vec<i32>,
    ) -> Self {
        let width = sharding.total_width();
        let data = generate(profile, seed, k as u32, 0, &lengths, width, width).unwrap();
        Sharded::new(sharding, lengths, data)
    }

    fn select_with(
        &self,
        collective: &dyn Collective,
        spec: &Spec,
        out: &mut [i32],
        out_pitch: usize,
    ) -> Result<RouteStats> {
        let shards: Vec<&[f32]> = self.shards.iter().map(Vec::as_slice).collect();
        let scores = ShardedScores {
            sharding: self.sharding,
            shards: &shards,
            lengths: &self.matrix.lengths,
            rows: self.matrix.rows,
        };
        select_sharded_with(collective, spec, &scores, out, out_pitch, true)
    }

    fn select(&self, spec: &Spec, out: &mut [i32], out_pitch: usize) -> Result<RouteStats> {
        self.select_with(&InProcessSum, spec, out, out_pitch)
    }
}

/// Ragged lengths for `k` over `sharding`: the edges around K, rows held entirely by rank 0,
/// lengths ending exactly on a shard boundary and one past it, the full row, random ones.
fn ragged_lengths(rng: &mut Rng, k: usize, sharding: Sharding) -> Vec<i32> {
    let (s, total) = (sharding.shard_width, sharding.total_width());
    let mut lens = vec![0, 1, k - 1, k, k + 1, s];
    if s > k + 1 {
        lens.push(k + 1 + rng.below(s - k - 1)); // longer than K, all on rank 0
    }
    for r in [1, sharding.ranks / 2, sharding.ranks - 1] {
        if r >= 1 {
            lens.extend([r * s, r * s + 1]);
        }
    }
    lens.push(total);
    for _ in 0..2 {
        lens.push(k + 1 + rng.below(total - k));
    }
    lens.sort_unstable();
    lens.dedup();
    lens.into_iter()
        .filter(|&l| l <= total)
        .map(|l| l as i32)
        .collect()
}

/// Route counts over a sweep, to prove the comparison with one device saw every route.
#[derive(Default)]
struct RoutesSeen([u64; Route::ALL.len()]);

impl RoutesSeen {
    fn add(&mut self, stats: &RouteStats) {
        for (seen, n) in self.0.iter_mut().zip(stats.rows) {
            *seen += n;
        }
    }
    fn assert_saw(&self, routes: &[Route], what: &str) {
        for &route in routes {
            assert!(
                self.0[route as usize] > 0,
                "{what}: no row took {route:?} ({:?})",
                self.0
            );
        }
    }
}

/// Select `m` under every spec, sharded and on one device: same routes row by row, the
/// sharded output exact (verifier and oracle values), short rows exactly `0..L` then `-1`, and
/// slots past K untouched.
fn check_against_one_device(m: &Sharded, k: usize, what: &str, seen: &mut RoutesSeen) {
    let view = m.matrix.view();
    let rows = m.matrix.rows;
    let mut oracle = vec![0; rows * k];
    cpu::oracle(&view, k, &mut oracle, k).unwrap();
    for spec in specs(k as u32) {
        let what = format!("{what}, `{spec:?}`");
        let mut single = vec![0; rows * k];
        let expected = cpu::select(&spec, &view, &mut single, k, true).unwrap();

        let out_pitch = k + 2;
        let mut out = vec![i32::MIN; rows * out_pitch];
        let stats = m.select(&spec, &mut out, out_pitch).unwrap();
        seen.add(&stats);

        let (got_routes, want_routes) = (stats.per_row.unwrap(), expected.per_row.unwrap());
        for (row, (got, want)) in got_routes.iter().zip(&want_routes).enumerate() {
            assert_eq!(
                got, want,
                "{what}: row {row} (L = {}) routed differently from one device",
                m.matrix.lengths[row]
            );
        }
        assert_eq!(stats.rows, expected.rows, "{what}");

        let report = cpu::verify(&view, k, &out, out_pitch).unwrap();
        assert!(report.is_exact(), "{what}: {report}");
        for row in 0..rows {
            let got = &out[row * out_pitch..][..k];
            let want = &oracle[row * k..][..k];
            let scores = view.row(row);
            assert_eq!(
                selected_keys(scores, got),
                selected_keys(scores, want),
                "{what}: row {row} (L = {}) selects other values than the oracle",
                scores.len()
            );
            if scores.len() <= k {
                assert_eq!(got, want, "{what}: short row {row}");
            }
            assert_eq!(
                out[row * out_pitch + k..][..2],
                [i32::MIN; 2],
                "{what}: row {row}: slots past K written"
            );
        }
    }
}

/// Every rank count and profile at rank `k`, rows about `width` wide in total.
fn check_rank(k: usize, width: usize, seed: u64) -> RoutesSeen {
    let mut rng = Rng::new(seed);
    let mut seen = RoutesSeen::default();
    for ranks in RANKS {
        let sharding = Sharding::covering(width, ranks).unwrap();
        for profile in Profile::ALL {
            let lengths = ragged_lengths(&mut rng, k, sharding);
            let m = Sharded::generated(profile, rng.next_u64(), k, sharding, lengths);
            let what = format!("{profile}, K = {k}, {ranks} x {}", sharding.shard_width);
            check_against_one_device(&m, k, &what, &mut seen);
        }
    }
    seen
}

#[test]
fn exact_with_single_device_routes_at_rank_1() {
    let seen = check_rank(1, 1_200, 1);
    // At K = 1 the sampled maximum always certifies.
    let routes = [Route::Short, Route::Primary, Route::DirectExact];
    seen.assert_saw(&routes, "K = 1");
}

#[test]
fn exact_with_single_device_routes_at_rank_100() {
    check_rank(100, 4_000, 2).assert_saw(&Route::WITHOUT_PRIOR, "K = 100");
}

#[test]
fn exact_with_single_device_routes_at_rank_2048() {
    check_rank(2048, 20_000, 3).assert_saw(&Route::WITHOUT_PRIOR, "K = 2048");
}

#[test]
fn exact_on_long_rows_split_over_many_ranks() {
    let k = 2048;
    let mut rng = Rng::new(4);
    let mut seen = RoutesSeen::default();
    for ranks in [3, 8] {
        let sharding = Sharding::covering(70_000, ranks).unwrap();
        let total = sharding.total_width() as i32;
        for profile in [
            Profile::Indexer,
            Profile::Iid,
            Profile::TiesAtK,
            Profile::Periodic,
        ] {
            let lengths = vec![total, 69_001, sharding.shard_width as i32 * 2 + 1];
            let m = Sharded::generated(profile, rng.next_u64(), k, sharding, lengths);
            let what = format!("{profile}, {ranks} x {}", sharding.shard_width);
            check_against_one_device(&m, k, &what, &mut seen);
        }
    }
    seen.assert_saw(&[Route::Primary, Route::DirectExact], "long rows");
}

#[test]
fn ties_straddling_shard_boundaries_fill_exactly_k_slots() {
    // Every score equal: the ties at T are spread over all ranks and only some are taken.
    let k = 100;
    for ranks in RANKS {
        let sharding = Sharding::covering(401, ranks).unwrap();
        let total = sharding.total_width();
        let mut lengths: Vec<i32> = (0..8).map(|r| (total - r * 37) as i32).collect();
        lengths.extend([k as i32 + 1, k as i32]);
        let data = vec![0.5f32; lengths.len() * total];
        let m = Sharded::new(sharding, lengths, data);
        check_against_one_device(&m, k, &format!("{ranks} ranks"), &mut RoutesSeen::default());
    }
}

/// A row for K = 256, stride 16, rho 1.0 (q = 16), rescue 4.0 (q1 = 64): the view holds 16
/// scores of 4.0 and 48 of 2.0, spread over the whole row; off the view, `fours` more 4.0 and
/// `twos` more 2.0, also spread. So C(tau0) = 16 + fours and C(tau1) = 64 + fours + twos.
fn banded_row(spec: &Spec, row: usize, len: usize, fours: usize, twos: usize) -> Vec<f32> {
    let stride = spec.stride().unwrap() as usize;
    let phase = spec.view_phase(row as u64).unwrap() as usize;
    let mut scores = vec![0.0f32; len];
    for (j, p) in (phase..len).step_by(stride).enumerate() {
        scores[p] = match j % 64 {
            0 => 4.0,
            1..=3 => 2.0,
            _ => 0.0,
        };
    }
    let off_view: Vec<usize> = (0..len).filter(|p| p % stride != phase).collect();
    let step = off_view.len() / (fours + twos).max(1);
    for (n, &p) in off_view.iter().step_by(step).take(fours + twos).enumerate() {
        scores[p] = if n < fours { 4.0 } else { 2.0 };
    }
    scores
}

#[test]
fn certificates_that_reach_exactly_k_certify() {
    let k = 256;
    let spec = Spec {
        k: k as u32,
        proposal: Proposal::Sampled {
            stride: 16,
            rho: Centi(100),
            rescue: Some(Centi(400)),
            exact_below: 0,
        },
        ..Spec::default()
    };
    let cases = [
        (240, 0, Route::Primary),  // C0 = K
        (239, 0, Route::Rescue),   // C0 = K - 1, C1 = K + 47
        (0, 192, Route::Rescue),   // C1 = K
        (0, 191, Route::Recovery), // C1 = K - 1
        (239, 1, Route::Rescue),   // C0 = K - 1
    ];
    let len = 16_384;
    for ranks in [2, 3, 4, 8] {
        let sharding = Sharding::covering(len, ranks).unwrap();
        let width = sharding.total_width();
        let mut data = vec![0.0f32; cases.len() * width];
        for (row, &(fours, twos, _)) in cases.iter().enumerate() {
            data[row * width..][..len].copy_from_slice(&banded_row(&spec, row, len, fours, twos));
        }
        let m = Sharded::new(sharding, vec![len as i32; cases.len()], data);
        let mut out = vec![0; cases.len() * k];
        let stats = m.select(&spec, &mut out, k).unwrap();
        let expected: Vec<Route> = cases.iter().map(|c| c.2).collect();
        assert_eq!(stats.per_row.unwrap(), expected, "{ranks} ranks");
        let single = cpu::select(
            &spec,
            &m.matrix.view(),
            &mut vec![0; cases.len() * k],
            k,
            true,
        );
        assert_eq!(single.unwrap().per_row.unwrap(), expected, "one device");
        let report = cpu::verify(&m.matrix.view(), k, &out, k).unwrap();
        assert!(report.is_exact(), "{ranks} ranks: {report}");
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input.

/// Four rows over `ranks` ranks of 1000 positions; at K = 256: short, direct-exact (a view of
/// 3 samples), two sampled rows.
fn gaussian_rows(ranks: usize) -> Sharded {
    let sharding = Sharding::new(ranks, 1000).unwrap();
    let total = sharding.total_width();
    let lengths = vec![0, 300, total as i32, total as i32 - 333];
    let mut rng = Rng::new(7);
    let data: Vec<f32> = (0..lengths.len() * total).map(|_| rng.gaussian()).collect();
    Sharded::new(sharding, lengths, data)
}

fn nan_error_of(m: &Sharded, k: usize) -> (usize, usize) {
    let mut out = vec![0; m.matrix.rows * k];
    match m.select(
        &Spec {
            k: k as u32,
            ..Spec::default()
        },
        &mut out,
        k,
    ) {
        Err(Error::NaN { row, col }) => (row, col),
        other => panic!("expected a NaN error, got {other:?}"),
    }
}

#[test]
fn nan_is_reported_at_its_global_row_and_column_on_every_route() {
    let k = 256;
    let spec = Spec {
        k: k as u32,
        ..Spec::default()
    };
    // Row 3 has view phase (17 * 3 + 13) mod 128 = 64.
    let cases = [
        (1, 7),            // the direct-exact row
        (2, 0),            // first position of rank 0
        (2, 1000),         // first position of rank 1
        (2, 2999),         // last position of rank 2
        (2, 3999),         // last valid position of the row
        (3, 64 + 128 * 9), // on the stride view, rank 1
        (3, 3666),         // the last valid position of a ragged row
    ];
    for (row, col) in cases {
        let mut m = gaussian_rows(4);
        m.matrix.data[row * m.matrix.pitch + col] = f32::NAN;
        let m = Sharded::new(m.sharding, m.matrix.lengths, m.matrix.data);
        assert_eq!(nan_error_of(&m, k), (row, col));
        // The same position as one device reports.
        let mut out = vec![0; m.matrix.rows * k];
        match cpu::select(&spec, &m.matrix.view(), &mut out, k, false) {
            Err(Error::NaN { row: r, col: c }) => assert_eq!((r, c), (row, col)),
            other => panic!("one device: expected a NaN error, got {other:?}"),
        }
    }
    // A short row, at K above its length.
    let mut m = gaussian_rows(4);
    m.matrix.data[m.matrix.pitch + 55] = -f32::NAN;
    let m = Sharded::new(m.sharding, m.matrix.lengths, m.matrix.data);
    assert_eq!(nan_error_of(&m, 1000), (1, 55));
}

#[test]
fn the_first_nan_in_row_major_order_is_reported_whichever_rank_holds_it() {
    let mut m = gaussian_rows(4);
    let pitch = m.matrix.pitch;
    for (row, col) in [(3, 3001), (2, 2500), (2, 1500), (3, 10)] {
        m.matrix.data[row * pitch + col] = f32::NAN;
    }
    let m = Sharded::new(m.sharding, m.matrix.lengths, m.matrix.data);
    assert_eq!(nan_error_of(&m, 256), (2, 1500));
}

#[test]
fn nan_past_the_global_length_is_ignored() {
    let m = gaussian_rows(4);
    let mut shards = m.shards.clone();
    // Row 3 (L = 3667) ends inside rank 3's shard; row 1 (L = 300) inside rank 0's.
    shards[3][3 * 1000 + 667] = f32::NAN;
    shards[3][3 * 1000 + 999] = f32::NAN;
    shards[0][1000 + 300] = f32::NAN;
    shards[2][1000 + 5] = f32::NAN;
    let m = Sharded { shards, ..m };
    let k = 256;
    let mut out = vec![0; m.matrix.rows * k];
    m.select(
        &Spec {
            k: k as u32,
            ..Spec::default()
        },
        &mut out,
        k,
    )
    .unwrap();
    assert!(cpu::verify(&m.matrix.view(), k, &out, k)
        .unwrap()
        .is_exact());
}

#[test]
fn global_lengths_outside_the_sharded_width_are_rejected() {
    for bad in [-1, 4001, i32::MIN, i32::MAX] {
        let mut m = gaussian_rows(4);
        m.matrix.lengths[2] = bad;
        let mut out = vec![0; m.matrix.rows * 16];
        match m.select(
            &Spec {
                k: 16,
                ..Spec::default()
            },
            &mut out,
            16,
        ) {
            Err(Error::Length { row, len, width }) => {
                assert_eq!((row, len, width), (2, bad as i64, 4000))
            }
            other => panic!("length {bad}: got {other:?}"),
        }
    }
}

#[test]
fn k_outside_its_range_is_rejected_like_on_one_device() {
    let m = gaussian_rows(2);
    for k in [0, MAX_K as usize + 1] {
        let mut out = vec![0; m.matrix.rows * (k + 1)];
        let spec = Spec {
            k: k as u32,
            ..Spec::default()
        };
        let err = m.select(&spec, &mut out, k.max(1)).unwrap_err();
        assert!(
            matches!(err, Error::K { .. } | Error::Spec(_)),
            "K = {k}: {err}"
        );
        assert!(err.to_string().contains(&k.to_string()), "K = {k}: {err}");
    }
}

#[test]
fn buffers_that_do_not_fit_the_sharding_are_rejected() {
    let m = gaussian_rows(3);
    let spec = Spec {
        k: 16,
        ..Spec::default()
    };
    let shards: Vec<&[f32]> = m.shards.iter().map(Vec::as_slice).collect();
    let good = ShardedScores {
        sharding: m.sharding,
        shards: &shards,
        lengths: &m.matrix.lengths,
        rows: m.matrix.rows,
    };
    let input_error = |scores: ShardedScores, out_len: usize| {
        let mut out = vec![0; out_len];
        match select_sharded(&spec, &scores, &mut out, 16, false) {
            Err(Error::Input(msg)) => msg,
            other => panic!("expected an input error, got {other:?}"),
        }
    };
    let msg = input_error(
        ShardedScores {
            shards: &shards[..2],
            ..good
        },
        64,
    );
    assert!(msg.contains("2 shard buffers given for 3 ranks"), "{msg}");
    let short: Vec<&[f32]> = vec![shards[0], &shards[1][..3999], shards[2]];
    let msg = input_error(
        ShardedScores {
            shards: &short,
            ..good
        },
        64,
    );
    assert!(msg.contains("shard 1 holds 3999 elements"), "{msg}");
    let msg = input_error(
        ShardedScores {
            lengths: &m.matrix.lengths[..3],
            ..good
        },
        64,
    );
    assert!(msg.contains("3 lengths given for 4 rows"), "{msg}");
    let msg = input_error(good, 3 * 16 + 15);
    assert!(msg.contains("index buffer"), "{msg}");
    let msg = input_error(
        ShardedScores {
            sharding: Sharding {
                ranks: 3,
                shard_width: 0,
            },
            ..good
        },
        64,
    );
    assert!(msg.contains("at least one position"), "{msg}");
    // The matching shapes work, and so does an empty batch.
    let mut out = vec![0; 64];
    select_sharded(&spec, &good, &mut out, 16, false).unwrap();
    let empty = ShardedScores {
        lengths: &[],
        rows: 0,
        ..good
    };
    let stats = select_sharded(&spec, &empty, &mut [], 16, true).unwrap();
    assert_eq!(stats.per_row, Some(vec![]));
}

// ---------------------------------------------------------------------------------------------
// The collective.

/// The in-process sum, counting its calls, and on call number `corrupt` (1-based; 0 never)
/// adding 1 to every third value of the sum seen by the last rank, or by every rank.
struct Faulty {
    calls: Cell<usize>,
    corrupt: usize,
    every_rank: bool,
}

impl Faulty {
    fn new(corrupt: usize, every_rank: bool) -> Faulty {
        Faulty {
            calls: Cell::new(0),
            corrupt,
            every_rank,
        }
    }
}

impl Collective for Faulty {
    fn all_reduce_sum(&self, buffers: &mut [Vec<u32>]) -> Result<()> {
        InProcessSum.all_reduce_sum(buffers)?;
        self.calls.set(self.calls.get() + 1);
        if self.calls.get() == self.corrupt {
            let first = if self.every_rank {
                0
            } else {
                buffers.len() - 1
            };
            for buffer in &mut buffers[first..] {
                for x in buffer.iter_mut().step_by(3) {
                    *x = x.wrapping_add(1);
                }
            }
        }
        Ok(())
    }
}

fn default_spec(k: usize) -> Spec {
    Spec {
        k: k as u32,
        ..Spec::default()
    }
}

/// Propose, certify, one per digit, the all-gather of emit, the assembly.
fn collective_calls(spec: &Spec) -> usize {
    1 + 1 + spec.digits.as_slice().len() + 1 + 1
}

#[test]
fn one_collective_per_phase_for_the_whole_batch() {
    let m = gaussian_rows(4);
    let k = 256;
    let counter = Faulty::new(0, false);
    let mut out = vec![0; m.matrix.rows * k];
    let stats = m
        .select_with(&counter, &default_spec(k), &mut out, k)
        .unwrap();
    assert_eq!(counter.calls.get(), collective_calls(&default_spec(k)));
    // The batch mixes routes, yet they all share the same calls.
    let routes = stats.per_row.unwrap();
    assert_eq!(routes[..2], [Route::Short, Route::DirectExact]);
    assert!(cpu::verify(&m.matrix.view(), k, &out, k)
        .unwrap()
        .is_exact());
}

#[test]
fn a_rank_that_receives_another_sum_is_an_error_not_a_panic() {
    let m = gaussian_rows(4);
    let k = 256;
    for corrupt in 1..=collective_calls(&default_spec(k)) {
        let mut out = vec![0; m.matrix.rows * k];
        match m.select_with(&Faulty::new(corrupt, false), &default_spec(k), &mut out, k) {
            Err(Error::Input(msg)) => assert!(msg.contains("disagree"), "call {corrupt}: {msg}"),
            other => panic!("call {corrupt}: expected a disagreement, got {other:?}"),
        }
    }
}

#[test]
fn a_wrong_sum_shared_by_every_rank_is_caught_or_harmless() {
    // Only the assembly's sum is taken on trust: every earlier one either leaves the answer
    // exact (a different proposal is still certified by real counts) or is caught.
    let m = gaussian_rows(4);
    let k = 256;
    let mut caught = 0;
    for corrupt in 1..collective_calls(&default_spec(k)) {
        let mut out = vec![0; m.matrix.rows * k];
        match m.select_with(&Faulty::new(corrupt, true), &default_spec(k), &mut out, k) {
            Ok(_) => {
                let report = cpu::verify(&m.matrix.view(), k, &out, k).unwrap();
                assert!(report.is_exact(), "call {corrupt}: {report}");
            }
            Err(Error::Input(msg)) => {
                assert!(msg.contains("disagree"), "call {corrupt}: {msg}");
                caught += 1;
            }
            Err(other) => panic!("call {corrupt}: {other}"),
        }
    }
    assert!(caught >= 4, "only {caught} corrupted calls caught");
}

#[test]
fn grouped_views_are_refused_with_a_way_out() {
    let sharding = Sharding::new(2, 64).unwrap();
    let shard = vec![0.5f32; 64];
    let shards: Vec<&[f32]> = vec![&shard, &shard];
    let lengths = [128];
    let scores = ShardedScores {
        sharding,
        shards: &shards,
        lengths: &lengths,
        rows: 1,
    };
    let spec = Spec {
        k: 16,
        view_run: 4,
        ..Spec::default()
    };
    let mut out = vec![0i32; 16];
    let err = select_sharded(&spec, &scores, &mut out, 16, false).unwrap_err();
    assert!(err.to_string().contains("view=stride"), "{err}");

    // Nor does it send short rows to the exact boundary: exact_below is refused, not dropped.
    let spec = Spec {
        k: 16,
        proposal: Spec::default().proposal.with_exact_below(100),
        ..Spec::default()
    };
    let err = select_sharded(&spec, &scores, &mut out, 16, false).unwrap_err();
    assert!(err.to_string().contains("exact_below"), "{err}");
    let source = topk_codegen::sharded::generate_sharded(&spec).unwrap_err();
    assert!(source.to_string().contains("exact_below"), "{source}");

    // Nor has it a pool whose last rows take a wider margin: tail is refused, not dropped.
    let spec = Spec {
        k: 16,
        tail_rows: 4,
        tail_rho: topk_dsl::Centi(160),
        ..Spec::default()
    };
    spec.validate().unwrap();
    let err = select_sharded(&spec, &scores, &mut out, 16, false).unwrap_err();
    assert!(err.to_string().contains("remove tail"), "{err}");
    let source = topk_codegen::sharded::generate_sharded(&spec).unwrap_err();
    assert!(source.to_string().contains("remove tail"), "{source}");
}
