//! A row's prior boundary (`prior=P/R`) and boundary output (`boundary=true`) on the GPU against
//! the CPU reference, on every family that generates them (persistent, sampled and exact;
//! row-local, register and streaming; cluster, 8 CTAs exact and 16 sampled): good, stale, too
//! high, too low, +-inf and NaN priors on benign and adversarial rows, and the steps of a
//! synthetic decode trace each fed the previous step's boundary. Every output is checked by `cpu::verify_with` and compared with the CPU
//! backend: routes and |Q0| row for row, boundaries bit for bit, the oracle's bytes where
//! canonical. Every test needs a GPU and is ignored unless run with `--ignored` (on a GPU host).
//! They plan with `PlanRequest::allow_unverified`, so that they can check a path while it is held
//! back (`topk_runtime::cuda::HELD_BACK`).

mod call_support;
mod gpu_support;

use call_support::{check_against_cpu, row, sampled, Output, Rng, FAMILIES};
use gpu_support::{gpu, warm_kernels};
use topk_dsl::{Io, Mapping, Order, Prior, Proposal, RowLocalVariant, Spec, Ties};
use topk_runtime::call::{CallIo, CallOut, IndexTransform, RowSource};
use topk_runtime::cuda::{CudaSelector, Gpu, PlanRequest};
use topk_runtime::data::DecodeTrace;
use topk_runtime::{cpu, Route, RouteStats, ScoreRows};

/// The families that generate a prior, at rank `k`, with `io`.
fn families(k: u32, io: Io) -> Vec<Spec> {
    let rowlocal = |variant| Spec {
        k,
        mapping: Mapping::RowLocal(variant),
        proposal: Proposal::Exact,
        threads: 1024,
        io,
        ..Spec::default()
    };
    vec![
        Spec {
            k,
            proposal: sampled(64, 150, 175),
            io,
            ..Spec::default()
        },
        Spec {
            k,
            proposal: Proposal::Exact,
            io,
            ..Spec::default()
        },
        rowlocal(RowLocalVariant::Register),
        rowlocal(RowLocalVariant::Streaming),
        Spec {
            k,
            mapping: Mapping::Cluster { ctas: 8 },
            proposal: Proposal::Exact,
            threads: 1024,
            io,
            ..Spec::default()
        },
        Spec {
            k,
            mapping: Mapping::Cluster { ctas: 16 },
            proposal: sampled(128, 175, 250),
            threads: 1024,
            io,
            ..Spec::default()
        },
    ]
}

fn io(prior: Prior, canonical: bool) -> Io {
    Io {
        prior,
        boundary: true,
        order: if canonical { Order::Sorted } else { Order::Any },
        ties: if canonical { Ties::Lowest } else { Ties::Any },
        ..Io::DEFAULT
    }
}

/// One call on the GPU and on the CPU, compared; returns the GPU's boundaries and routes.
fn run_and_compare(
    sel: &mut CudaSelector,
    spec: &Spec,
    scores: &ScoreRows<f32>,
    lengths: &[i32],
    prior: &[f32],
    label: &str,
) -> (Vec<f32>, RouteStats) {
    let k = spec.k as usize;
    let io = CallIo {
        rows: RowSource::Lengths(lengths),
        transform: IndexTransform::None,
        prior: Some(prior),
    };
    let mut indices = vec![i32::MIN; scores.rows * k];
    let mut boundary = vec![1234.5f32; scores.rows];
    let out = CallOut {
        indices: &mut indices,
        pitch: k,
        values: None,
        boundary: Some(&mut boundary),
    };
    let stats = sel
        .select_call(scores, &io, out, true)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let got = Output {
        indices,
        values: None,
    };
    check_against_cpu(spec, scores, &io, &got, &stats, label);
    let mut cpu_indices = vec![0; scores.rows * k];
    let mut cpu_boundary = vec![0f32; scores.rows];
    let out = CallOut {
        indices: &mut cpu_indices,
        pitch: k,
        values: None,
        boundary: Some(&mut cpu_boundary),
    };
    cpu::select_with(spec, scores, &io, out, false).unwrap();
    let bits = |b: &[f32]| {
        b.iter()
            .map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        bits(&boundary),
        bits(&cpu_boundary),
        "{label}: boundaries differ from the CPU's"
    );
    let report = cpu::verify_boundary(spec, scores, &io, &boundary).unwrap();
    assert!(report.is_exact(), "{label}: {report}");
    (boundary, stats)
}

fn selector(gpu: &Gpu, spec: Spec, rows: usize, width: usize) -> CudaSelector {
    let mut request = PlanRequest::new(spec.k, rows as u32, width as u32).with_spec(spec);
    request.allow_unverified = true;
    CudaSelector::new(gpu, request).unwrap_or_else(|e| panic!("{spec}: plan: {e}"))
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn every_prior_is_exact_and_takes_the_cpus_routes() {
    let gpu = gpu();
    let (width, k) = (12_000usize, 512usize);
    let lengths: Vec<i32> = [0, 1, k - 1, k, k + 1, 3000, 8000, width - 1, width]
        .iter()
        .map(|&l| l as i32)
        .collect();
    let rows = lengths.len();
    let mut rng = Rng::new(17);
    let mut seen = [0u64; Route::ALL.len()];
    let bins = [
        Prior::SUGGESTED,
        Prior::Bins {
            primary: 1,
            rescue: 1,
        },
    ];
    let specs: Vec<Spec> = [false, true]
        .into_iter()
        .flat_map(|canonical| bins.map(|b| io(b, canonical)))
        .flat_map(|io| families(k as u32, io))
        .collect();
    warm_kernels(gpu.arch(), &specs);
    for spec in specs {
        let mut sel = selector(&gpu, spec, rows, width);
        for &family in &FAMILIES {
            let mut data = vec![0f32; rows * width];
            for (r, &len) in lengths.iter().enumerate() {
                data[r * width..][..len as usize].copy_from_slice(&row::<f32>(
                    family,
                    &mut rng,
                    len as usize,
                    k,
                ));
            }
            let scores = ScoreRows {
                data: &data,
                rows,
                width,
                pitch: width,
            };
            let none = vec![f32::NAN; rows];
            let label = format!("{spec} / {family:?}");
            let (exact, _) = run_and_compare(&mut sel, &spec, &scores, &lengths, &none, &label);
            let priors: [(&str, Vec<f32>); 7] = [
                ("exact", exact.clone()),
                ("stale", exact.iter().map(|b| b * 0.9 - 0.05).collect()),
                ("+inf", vec![f32::INFINITY; rows]),
                ("-inf", vec![f32::NEG_INFINITY; rows]),
                ("max", vec![f32::MAX; rows]),
                ("lowest", vec![f32::MIN; rows]),
                (
                    "mixed",
                    (0..rows)
                        .map(|r| [f32::NAN, 0.0, -0.0, 1.0][r % 4])
                        .collect(),
                ),
            ];
            for (what, prior) in priors {
                let label = format!("{label} / prior {what}");
                let (_, stats) =
                    run_and_compare(&mut sel, &spec, &scores, &lengths, &prior, &label);
                for r in Route::ALL {
                    seen[r as usize] += stats.count(r);
                }
            }
        }
    }
    println!("rows per route {seen:?}");
    assert!(seen[Route::PriorPrimary as usize] > 0 && seen[Route::PriorRescue as usize] > 0);
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn a_decode_trace_fed_its_boundaries_stays_exact() {
    let gpu = gpu();
    let trace = DecodeTrace {
        start_lens: vec![
            60_000, 45_000, 70_000, 20_000, 65_000, 1_000, 52_000, 30_000,
        ],
        dims: 16,
        drift: 0.02,
        seed: 3,
    };
    let steps = 8;
    let width = 70_000 + steps;
    let rows = trace.start_lens.len();
    // The register-resident row-local kernel holds rows of at most 16K scores; these are 70K.
    let specs: Vec<Spec> = families(2048, io(Prior::SUGGESTED, false))
        .into_iter()
        .filter(|s| s.mapping != Mapping::RowLocal(RowLocalVariant::Register))
        .collect();
    warm_kernels(gpu.arch(), &specs);
    for spec in specs {
        let mut sel = selector(&gpu, spec, rows, width);
        let mut prior = vec![f32::NAN; rows];
        let mut certified = 0;
        for t in 0..steps {
            let step = trace.step(t, width);
            let scores = ScoreRows {
                data: &step.scores,
                rows,
                width,
                pitch: width,
            };
            let label = format!("{spec} / step {t}");
            let (boundary, stats) =
                run_and_compare(&mut sel, &spec, &scores, &step.lengths, &prior, &label);
            certified += stats.count(Route::PriorPrimary) + stats.count(Route::PriorRescue);
            prior = boundary;
        }
        println!("{spec}: {certified} rows certified at the prior");
    }
}

/// compute-sanitizer's workload (`bench/sanitize.sh`): short rows of every family that takes a
/// prior (those `TOPK_SANITIZE_MAPS` names), with a prior that certifies, one that falls back
/// and none, with and without the canonical output.
#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn sanitizer_workload_prior() {
    let gpu = gpu();
    let maps = call_support::sanitize_maps();
    let (width, k) = (3000usize, 64usize);
    let lengths: Vec<i32> = [0, k - 1, k + 1, 700, width]
        .iter()
        .map(|&l| l as i32)
        .collect();
    let rows = lengths.len();
    let mut rng = Rng::new(29);
    let mut ran = 0;
    let specs: Vec<Spec> = [false, true]
        .into_iter()
        .flat_map(|canonical| families(k as u32, io(Prior::SUGGESTED, canonical)))
        .filter(|s| call_support::sanitize_wants(&maps, s))
        .collect();
    warm_kernels(gpu.arch(), &specs);
    for spec in specs {
        let mut sel = selector(&gpu, spec, rows, width);
        let mut data = vec![0f32; rows * width];
        for (r, &len) in lengths.iter().enumerate() {
            data[r * width..][..len as usize].copy_from_slice(&row::<f32>(
                FAMILIES[1],
                &mut rng,
                len as usize,
                k,
            ));
        }
        let scores = ScoreRows {
            data: &data,
            rows,
            width,
            pitch: width,
        };
        let none = vec![f32::NAN; rows];
        let (exact, _) = run_and_compare(&mut sel, &spec, &scores, &lengths, &none, "none");
        run_and_compare(&mut sel, &spec, &scores, &lengths, &exact, "exact");
        run_and_compare(
            &mut sel,
            &spec,
            &scores,
            &lengths,
            &vec![f32::MIN; rows],
            "lowest",
        );
        ran += 1;
    }
    assert!(
        ran > 0,
        "TOPK_SANITIZE_MAPS={maps} names no family that takes a prior"
    );
}
