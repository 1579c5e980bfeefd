//! A row's prior boundary (`prior=P/R`) and boundary output (`boundary=true`) on the CPU
//! backend: exact whatever the prior (good, stale, too high, too low, NaN, +-inf), the
//! boundary equal to each row's K-th largest score, and the prior's routes taken only where its
//! cutoff certifies.

use topk_dsl::{Io, Order, Prior, Spec, Ties};
use topk_runtime::call::{CallIo, CallOut, IndexTransform, RowSource};
use topk_runtime::data::{generate, DecodeTrace, Profile};
use topk_runtime::{cpu, Route, RouteStats, ScoreRows};

fn spec(k: u32, prior: Prior, extra: &str) -> Spec {
    let mut spec = Spec::parse(&format!("k={k}{extra}")).unwrap();
    spec.io = Io {
        prior,
        boundary: true,
        ..spec.io
    };
    spec.validate().unwrap();
    spec
}

struct Out {
    indices: Vec<i32>,
    boundary: Vec<f32>,
    stats: RouteStats,
}

/// Selects `scores` with `prior`, checks the output and the boundary, and returns them.
fn select_checked(
    spec: &Spec,
    scores: &[f32],
    width: usize,
    lengths: &[i32],
    prior: &[f32],
) -> Out {
    let rows = lengths.len();
    let k = spec.k as usize;
    let matrix = ScoreRows {
        data: scores,
        rows,
        width,
        pitch: width,
    };
    let io = CallIo {
        rows: RowSource::Lengths(lengths),
        transform: IndexTransform::None,
        prior: Some(prior),
    };
    let mut indices = vec![0i32; rows * k];
    let mut boundary = vec![0f32; rows];
    let out = CallOut {
        indices: &mut indices,
        pitch: k,
        values: None,
        boundary: Some(&mut boundary),
    };
    let stats = cpu::select_with(spec, &matrix, &io, out, true).unwrap();
    let report = cpu::verify_with(spec, &matrix, &io, &indices, k, None).unwrap();
    assert!(report.is_exact(), "{spec}: {:?}", report.violations);
    let report = cpu::verify_boundary(spec, &matrix, &io, &boundary).unwrap();
    assert!(report.is_exact(), "{spec}: {:?}", report.violations);
    Out {
        indices,
        boundary,
        stats,
    }
}

fn prior_rows(stats: &RouteStats) -> u64 {
    stats.count(Route::PriorPrimary) + stats.count(Route::PriorRescue)
}

#[test]
fn every_prior_gives_the_exact_output_and_the_kth_largest_as_boundary() {
    let (rows, width) = (24, 9_000);
    let lengths: Vec<i32> = (0..rows).map(|r| (width - 300 * r) as i32).collect();
    for profile in [
        Profile::Indexer,
        Profile::Iid,
        Profile::TiesAtK,
        Profile::Infinities,
        Profile::SignedZeros,
        Profile::Huge,
        Profile::Tiny,
    ] {
        for k in [1u32, 100, 512] {
            let scores = generate(profile, 5, k, 0, &lengths, width, width).unwrap();
            for (prior_bins, extra) in [
                (
                    Prior::Bins {
                        primary: 2,
                        rescue: 8,
                    },
                    "",
                ),
                (
                    Prior::Bins {
                        primary: 0,
                        rescue: 0,
                    },
                    ",propose=exact",
                ),
                (
                    Prior::Bins {
                        primary: 1,
                        rescue: 3,
                    },
                    ",ties=lowest",
                ),
            ] {
                let spec = spec(k, prior_bins, extra);
                let none = vec![f32::NAN; rows];
                // The exact K-th largest of each row: the best prior there is.
                let truth = select_checked(&spec, &scores, width, &lengths, &none).boundary;
                let priors: [(&str, Vec<f32>); 6] = [
                    ("none", none.clone()),
                    ("exact", truth.clone()),
                    ("stale", truth.iter().map(|b| b * 0.9 - 0.05).collect()),
                    ("too high", vec![f32::INFINITY; rows]),
                    ("too low", vec![f32::NEG_INFINITY; rows]),
                    ("huge", vec![f32::MAX; rows]),
                ];
                for (label, prior) in priors {
                    let out = select_checked(&spec, &scores, width, &lengths, &prior);
                    assert_eq!(out.boundary.len(), rows);
                    if label == "none" {
                        assert_eq!(prior_rows(&out.stats), 0, "{label}: {spec}");
                    }
                    if label == "too low" && k <= 512 {
                        // Every score admitted: far more than 4K on these rows.
                        assert_eq!(prior_rows(&out.stats), 0, "{label}: {spec}");
                    }
                }
            }
        }
    }
}

#[test]
fn an_exact_prior_certifies_and_the_output_bytes_do_not_depend_on_it() {
    let (rows, width, k) = (16, 20_000, 256u32);
    let lengths = vec![width as i32; rows];
    let scores = generate(Profile::Iid, 11, k, 0, &lengths, width, width).unwrap();
    let canonical = spec(
        k,
        Prior::Bins {
            primary: 2,
            rescue: 8,
        },
        ",ties=lowest",
    );
    let canonical = Spec {
        io: Io {
            order: Order::Sorted,
            ..canonical.io
        },
        ..canonical
    };
    assert_eq!(canonical.io.ties, Ties::Lowest);
    let none = vec![f32::NAN; rows];
    let base = select_checked(&canonical, &scores, width, &lengths, &none);
    let exact = select_checked(&canonical, &scores, width, &lengths, &base.boundary);
    // Every row certifies at the prior's cutoff, whose bins hold a few hundred scores.
    assert_eq!(
        exact.stats.count(Route::PriorPrimary),
        rows as u64,
        "{}",
        exact.stats
    );
    assert_eq!(exact.indices, base.indices);
    assert_eq!(exact.boundary, base.boundary);
}

#[test]
fn short_rows_write_nan_and_a_nan_prior_takes_the_view() {
    let k = 64u32;
    let (width, lengths) = (5_000, [10i32, 64, 5_000, 0]);
    let scores = generate(Profile::Iid, 3, k, 0, &lengths, width, width).unwrap();
    let spec = spec(
        k,
        Prior::Bins {
            primary: 2,
            rescue: 8,
        },
        "",
    );
    let out = select_checked(&spec, &scores, width, &lengths, &[0.5; 4]);
    assert!(out.boundary[0].is_nan() && out.boundary[1].is_nan() && out.boundary[3].is_nan());
    assert!(out.boundary[2].is_finite());
    assert_eq!(out.stats.count(Route::Short), 3);
}

#[test]
fn prior_inputs_are_checked_before_anything_is_read() {
    let (width, lengths) = (100, [100i32; 2]);
    let scores = vec![1.0f32; 200];
    let matrix = ScoreRows {
        data: &scores,
        rows: 2,
        width,
        pitch: width,
    };
    let with_prior = spec(
        4,
        Prior::Bins {
            primary: 2,
            rescue: 8,
        },
        "",
    );
    let mut indices = vec![0i32; 8];
    let mut boundary = vec![0f32; 2];
    let call =
        |spec: &Spec, prior: Option<&[f32]>, boundary: Option<&mut [f32]>, indices: &mut [i32]| {
            let io = CallIo {
                rows: RowSource::Lengths(&lengths),
                transform: IndexTransform::None,
                prior,
            };
            let out = CallOut {
                indices,
                pitch: 4,
                values: None,
                boundary,
            };
            cpu::select_with(spec, &matrix, &io, out, false).map(|_| ())
        };
    let missing = call(&with_prior, None, Some(&mut boundary), &mut indices).unwrap_err();
    assert!(missing.to_string().contains("prior=P/R"), "{missing}");
    let short = call(&with_prior, Some(&[0.0]), Some(&mut boundary), &mut indices).unwrap_err();
    assert!(short.to_string().contains("1 values for 2 rows"), "{short}");
    let no_buffer = call(&with_prior, Some(&[0.0; 2]), None, &mut indices).unwrap_err();
    assert!(
        no_buffer.to_string().contains("boundary=true"),
        "{no_buffer}"
    );
    let plain = Spec::parse("k=4").unwrap();
    let unexpected = call(&plain, Some(&[0.0; 2]), None, &mut indices).unwrap_err();
    assert!(
        unexpected.to_string().contains("add prior=P/R"),
        "{unexpected}"
    );
    assert!(Spec::parse("k=4,prior=9/2").unwrap().validate().is_err());
    assert!(Spec::parse("k=4,prior=2").is_err());
}

/// Decode steps of a synthetic trace, each step's boundary the next step's prior: with a small
/// drift the prior certifies on most rows, and every output stays exact.
#[test]
fn a_decode_trace_certifies_at_the_previous_steps_boundary() {
    let (steps, k) = (6, 512u32);
    let trace = DecodeTrace {
        start_lens: vec![30_000, 24_000, 40_000, 12_000],
        dims: 16,
        drift: 0.02,
        seed: 1,
    };
    let width = 40_000 + steps;
    let spec = spec(
        k,
        Prior::Bins {
            primary: 2,
            rescue: 8,
        },
        "",
    );
    let mut prior = vec![f32::NAN; trace.start_lens.len()];
    let mut certified = 0;
    for t in 0..steps {
        let step = trace.step(t, width);
        let out = select_checked(&spec, &step.scores, width, &step.lengths, &prior);
        if t > 0 {
            certified += prior_rows(&out.stats);
        }
        prior = out.boundary;
    }
    let rows = (steps as u64 - 1) * trace.start_lens.len() as u64;
    assert!(
        certified * 4 >= rows * 3,
        "{certified} of {rows} rows certified at the prior"
    );
}
