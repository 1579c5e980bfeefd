//! Wall-clock timing of the CPU selector on the acceptance shape (64 x 262144, K = 2048).
//! Run with `cargo test --release -p topk-runtime --test cpu_timing -- --ignored --nocapture`.

mod cpu_support;

use cpu_support::{Matrix, Rng};
use std::time::{Duration, Instant};
use topk_dsl::Spec;
use topk_runtime::{cpu, Route};

fn median_time(rounds: usize, mut f: impl FnMut()) -> Duration {
    f(); // warm-up
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[rounds / 2]
}

#[test]
#[ignore = "timing; run in release"]
fn time_select_against_the_quickselect_baseline() {
    let (rows, width, k) = (64, 262_144, 2048);
    let mut rng = Rng::new(7);
    let data: Vec<Vec<f32>> = (0..rows)
        .map(|_| (0..width).map(|_| rng.unit()).collect())
        .collect();
    let m = Matrix::from_rows(&data, width, width);
    let view = m.view();
    let spec = Spec::default();
    let mut out = vec![0i32; rows * k];

    let stats = cpu::select(&spec, &view, &mut out, k, true).unwrap();
    let exact = cpu::verify(&view, k, &out, k).unwrap();
    assert!(exact.is_exact(), "{exact}");
    let t_select = median_time(21, || {
        cpu::select(&spec, &view, &mut out, k, false).unwrap();
    });
    let t_baseline = median_time(5, || {
        cpu::select_baseline(&view, k, &mut out, k).unwrap();
    });
    let t_verify = median_time(5, || {
        cpu::verify(&view, k, &out, k).unwrap();
    });
    let exact_spec = Spec {
        proposal: topk_dsl::Proposal::Exact,
        ..spec
    };
    let t_exact = median_time(5, || {
        cpu::select(&exact_spec, &view, &mut out, k, false).unwrap();
    });
    let gb = (rows * width * 4) as f64 / 1e9;
    println!(
        "{rows} x {width}, K = {k}, {} threads",
        rayon::current_num_threads()
    );
    for (name, t) in [
        ("select (sampled)", t_select),
        ("select (exact proposal)", t_exact),
        ("select_baseline", t_baseline),
        ("verify", t_verify),
    ] {
        println!(
            "  {name:24} {:8.3} ms  {:6.1} GB/s",
            t.as_secs_f64() * 1e3,
            gb / t.as_secs_f64()
        );
    }
    println!(
        "  routes: {}",
        Route::ALL
            .iter()
            .map(|&r| format!("{} {}", r.name(), stats.count(r)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  candidates: mean {:.0}, max {}",
        stats.candidates as f64 / rows as f64,
        stats.max_candidates
    );
}
