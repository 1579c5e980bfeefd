//! The CPU half of the shared generator: deterministic, piecewise, NaN-free, masked suffix,
//! and each adversarial profile has the property it is named for.

use topk_runtime::data::{generate, generate_into, value, Profile};

const K: u32 = 2048;
const WIDTH: usize = 12_000;

/// Ragged lengths around the interesting edges: 0, 1, K-1, K, K+1, the width, and lengths
/// outside [0, width] (treated as 0 and as the width).
fn ragged_lengths(rows: usize) -> Vec<i32> {
    let edges = [
        0,
        1,
        K as i32 - 1,
        K as i32,
        K as i32 + 1,
        WIDTH as i32,
        -3,
        WIDTH as i32 + 5,
        7777,
        9001,
    ];
    (0..rows).map(|r| edges[r % edges.len()]).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn generation_is_deterministic_and_seeded() {
    let lengths = vec![WIDTH as i32; 4];
    for profile in [Profile::Indexer, Profile::Iid, Profile::TiesAtK] {
        let a = generate(profile, 42, K, 0, &lengths, WIDTH, WIDTH).unwrap();
        let b = generate(profile, 42, K, 0, &lengths, WIDTH, WIDTH).unwrap();
        let c = generate(profile, 43, K, 0, &lengths, WIDTH, WIDTH).unwrap();
        assert_eq!(bits(&a), bits(&b), "{profile}");
        let differing = a
            .iter()
            .zip(&c)
            .filter(|(x, y)| x.to_bits() != y.to_bits())
            .count();
        assert!(
            differing > a.len() / 2,
            "{profile}: seed changes only {differing} values"
        );
    }
}

#[test]
fn rows_generated_in_pieces_equal_the_whole() {
    let lengths = ragged_lengths(20);
    let pitch = WIDTH + 3;
    for profile in Profile::ALL {
        let whole = generate(profile, 7, K, 100, &lengths, WIDTH, pitch).unwrap();
        let mut pieces = generate(profile, 7, K, 100, &lengths[..10], WIDTH, pitch).unwrap();
        pieces.extend(generate(profile, 7, K, 110, &lengths[10..], WIDTH, pitch).unwrap());
        assert_eq!(bits(&whole), bits(&pieces), "{profile}");
        // value() is the same formula, cell by cell.
        for (r, &len) in lengths.iter().enumerate() {
            let valid = len.clamp(0, WIDTH as i32) as u32;
            for col in [0, 1, valid / 2, valid.saturating_sub(1)] {
                if col < valid {
                    let v = value(profile, 7, K, 100 + r as u64, col, len as u32);
                    assert_eq!(v.to_bits(), whole[r * pitch + col as usize].to_bits());
                }
            }
        }
    }
}

#[test]
fn no_profile_ever_produces_nan_and_the_suffix_is_masked() {
    let lengths = ragged_lengths(30);
    let pitch = WIDTH + 1;
    for profile in Profile::ALL {
        let m = generate(profile, 3, K, 0, &lengths, WIDTH, pitch).unwrap();
        for (r, &len) in lengths.iter().enumerate() {
            let valid = len.clamp(0, WIDTH as i32) as usize;
            let row = &m[r * pitch..(r + 1) * pitch];
            assert!(row.iter().all(|x| !x.is_nan()), "{profile}: NaN in row {r}");
            assert!(
                row[valid..].iter().all(|&x| x == f32::NEG_INFINITY),
                "{profile}: row {r} suffix from {valid} is not -inf"
            );
        }
    }
}

#[test]
fn generate_into_writes_only_the_width_and_rejects_bad_shapes() {
    let lengths = [5, 0];
    let mut out = vec![7.0f32; 2 * 9];
    generate_into(&mut out, Profile::Iid, 1, K, 0, &lengths, 6, 9).unwrap();
    assert!(out[..5].iter().all(|x| x.is_finite()));
    assert_eq!(out[5], f32::NEG_INFINITY);
    assert_eq!(&out[6..9], &[7.0; 3]);
    assert!(out[9..15].iter().all(|&x| x == f32::NEG_INFINITY));
    assert!(generate(Profile::Iid, 1, K, 0, &lengths, 6, 5).is_err()); // pitch < width
    assert!(generate_into(&mut out[..17], Profile::Iid, 1, K, 0, &lengths, 6, 9).is_err());
    assert!(generate(Profile::Iid, 1, K, 0, &[], 6, 9)
        .unwrap()
        .is_empty());
}

/// Rows long enough to exercise every profile's structure, on even and odd global rows.
fn long_rows(profile: Profile, rows: usize) -> Vec<Vec<f32>> {
    let lengths = vec![WIDTH as i32; rows];
    let m = generate(profile, 11, K, 0, &lengths, WIDTH, WIDTH).unwrap();
    m.chunks(WIDTH).map(<[f32]>::to_vec).collect()
}

fn sorted_desc(row: &[f32]) -> Vec<f32> {
    let mut v = row.to_vec();
    v.sort_by(|a, b| b.total_cmp(a));
    v
}

#[test]
fn value_families_have_their_defining_property() {
    for row in long_rows(Profile::AllEqual, 2) {
        assert!(row.iter().all(|&x| x == row[0]));
    }
    for row in long_rows(Profile::TwoValues, 2) {
        assert!(row.iter().all(|&x| x == 1.0 || x == -1.0));
        assert!(row.contains(&1.0) && row.contains(&-1.0));
    }
    for row in long_rows(Profile::SortedAsc, 1) {
        assert!(row.windows(2).all(|w| w[0] < w[1]));
    }
    for row in long_rows(Profile::SortedDesc, 1) {
        assert!(row.windows(2).all(|w| w[0] > w[1]));
    }
    for row in long_rows(Profile::Subnormals, 2) {
        assert!(row.iter().all(|x| x.is_subnormal()));
        assert!(
            row.iter().any(|x| x.is_sign_negative()) && row.iter().any(|x| x.is_sign_positive())
        );
    }
    for row in long_rows(Profile::Huge, 2) {
        assert!(row.iter().all(|x| x.is_finite() && x.abs() > 65504.0));
        assert!(row.iter().any(|&x| x < 0.0));
    }
    for row in long_rows(Profile::Tiny, 2) {
        assert!(row.iter().all(|x| x.abs() < 1e-8));
        assert!(half::f16::from_f32(row.iter().copied().fold(0.0, f32::max)).to_f32() == 0.0);
    }
}

#[test]
fn boundary_families_straddle_rank_k() {
    let k = K as usize;
    for row in long_rows(Profile::TiesAtK, 4) {
        let s = sorted_desc(&row);
        let copies = row.iter().filter(|&&x| x == 1.0).count();
        // Ranks K - K/8 ..= K + K/8 all hold the tied value; rank K/2 is above it.
        for rank in [k - k / 8, k, k + 1, k + k / 8] {
            assert_eq!(s[rank - 1], 1.0, "rank {rank} is not the tied value");
        }
        assert!(s[k / 2 - 1] > 1.0);
        assert!(copies > k / 4, "only {copies} ties");
    }
    for row in long_rows(Profile::SignedZeros, 2) {
        let nonzero = row.iter().filter(|&&x| x != 0.0).count();
        assert!(nonzero > 0 && nonzero < k / 2, "{nonzero} nonzeros");
        assert!(row.iter().any(|x| x.to_bits() == 0x8000_0000));
        assert!(row.iter().any(|x| x.to_bits() == 0));
        assert_eq!(sorted_desc(&row)[k - 1], 0.0); // rank K falls among the zeros
    }
    for (r, row) in long_rows(Profile::Infinities, 4).iter().enumerate() {
        let plus = row.iter().filter(|&&x| x == f32::INFINITY).count();
        let minus = row.iter().filter(|&&x| x == f32::NEG_INFINITY).count();
        if r % 2 == 0 {
            assert!(plus > k, "row {r}: {plus} +inf");
        } else {
            assert!(plus > 0 && plus < k, "row {r}: {plus} +inf");
        }
        assert!(minus > 0 && row.iter().any(|x| x.is_finite()));
    }
}

#[test]
fn periodic_values_sit_on_one_residue_of_the_stride() {
    for row in long_rows(Profile::Periodic, 2) {
        let on = row
            .iter()
            .step_by(128)
            .copied()
            .fold(f32::INFINITY, f32::min);
        let off = row
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 128 != 0)
            .map(|(_, &x)| x)
            .fold(f32::NEG_INFINITY, f32::max);
        assert!(on > off, "{on} <= {off}");
    }
}

#[test]
fn profile_codes_and_names_are_stable() {
    let names: Vec<String> = Profile::ALL.iter().map(|p| p.to_string()).collect();
    assert_eq!(
        names,
        [
            "indexer",
            "iid",
            "all-equal",
            "two-values",
            "ties-at-k",
            "sorted-asc",
            "sorted-desc",
            "periodic",
            "infinities",
            "signed-zeros",
            "subnormals",
            "huge",
            "tiny"
        ]
    );
    assert_eq!(Profile::TiesAtK.code(), 4);
    assert!("no-such"
        .parse::<Profile>()
        .unwrap_err()
        .to_string()
        .contains("ties-at-k"));
}
