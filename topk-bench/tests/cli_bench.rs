//! `topk-bench bench` and `topk-bench stats`: timed and verified runs, and profile statistics.

mod cli_support;

use cli_support::{s, topk_bench};
use topk_runtime::data::{self, shapes::causal_window, Profile};

fn bench_json(args: &[&str]) -> serde_json::Value {
    let run = topk_bench(args);
    run.assert_success();
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

#[test]
fn bench_json_reports_a_verified_timing_of_the_generated_input() {
    let v = bench_json(&[
        "bench",
        "--backend",
        "cpu",
        "--profile",
        "indexer",
        "--rows",
        "16",
        "--width",
        "20000",
        "--k",
        "256",
        "--iters",
        "3",
        "--json",
    ]);
    assert_eq!(v["backend"], "cpu");
    assert_eq!(v["rows"], 16);
    assert_eq!(v["width"], 20000);
    assert_eq!(v["k"], 256);
    assert_eq!(v["exact"], true);
    assert_eq!(v["iters"], 3);
    let valid: u64 = causal_window(16, 20000).iter().map(|&l| l as u64 * 4).sum();
    assert_eq!(v["valid_bytes"], valid);
    let median = v["median_ms"].as_f64().unwrap();
    assert!(
        median > 0.0
            && v["min_ms"].as_f64().unwrap() <= median
            && median <= v["max_ms"].as_f64().unwrap()
    );
    let gbps = v["gbps"].as_f64().unwrap();
    assert!((gbps - valid as f64 / (median / 1e3) / 1e9).abs() <= 1e-6 * gbps);
    let routes = v["routes"].as_object().unwrap();
    assert_eq!(
        routes.values().map(|n| n.as_u64().unwrap()).sum::<u64>(),
        16
    );
    assert!(topk_dsl::Spec::parse(v["spec"].as_str().unwrap()).is_ok());
}

#[test]
fn bench_times_a_score_file_with_a_chosen_preset() {
    let dir = tempfile::tempdir().unwrap();
    let (scores, lens) = (dir.path().join("s.npy"), dir.path().join("l.npy"));
    // The matrix `topk gen --profile two-values --rows 5 --width 5000 --k 100` writes.
    let lengths = causal_window(5, 5000);
    let data = data::generate(Profile::TwoValues, 0, 100, 0, &lengths, 5000, 5000).unwrap();
    topk::io::npy::write(&scores, &[5, 5000], &data).unwrap();
    topk::io::npy::write(&lens, &[5], &lengths).unwrap();
    let v = bench_json(&[
        "bench",
        "--backend",
        "cpu",
        "--scores",
        s(&scores),
        "--lengths",
        s(&lens),
        "--k",
        "100",
        "--preset",
        "persistent-exact",
        "--iters",
        "2",
        "--json",
    ]);
    assert_eq!(v["exact"], true);
    let spec = topk_dsl::Spec::parse(v["spec"].as_str().unwrap()).unwrap();
    let mut preset = topk_dsl::preset("persistent-exact").unwrap();
    preset.k = 100;
    assert_eq!(spec, preset);
    assert_eq!(v["routes"]["direct-exact"], 5);

    let table = topk_bench(&[
        "bench",
        "--backend",
        "cpu",
        "--scores",
        s(&scores),
        "--k",
        "100",
        "--iters",
        "1",
    ]);
    table.assert_success();
    assert!(
        table
            .stdout
            .lines()
            .any(|l| l.starts_with("exact") && l.ends_with("yes")),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("median"), "{}", table.stdout);
}

#[test]
fn bench_refuses_bad_input_like_select() {
    let bench = |extra: &[&str]| {
        let mut args = vec!["bench", "--backend", "cpu"];
        args.extend_from_slice(extra);
        topk_bench(&args)
    };
    let run = bench(&[
        "--profile",
        "iid",
        "--rows",
        "2",
        "--width",
        "10",
        "--k",
        "0",
    ]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("K must be at least 1"),
        "{}",
        run.stderr
    );
    let run = bench(&["--k", "4"]);
    assert_eq!(run.code, 2, "an input is required: {}", run.stderr);
    let run = bench(&["--profile", "iid", "--rows", "2", "--k", "4"]);
    assert_eq!(run.code, 2, "--profile needs --width: {}", run.stderr);
    bench(&["--scores", "/nonexistent.npy", "--k", "4"])
        .assert_bad_input(&["--scores", "does not exist"]);
}

#[test]
fn bench_first_length_times_a_window_that_ends_before_the_width() {
    let v = bench_json(&[
        "bench",
        "--backend",
        "cpu",
        "--profile",
        "iid",
        "--rows",
        "6",
        "--width",
        "9000",
        "--first-length",
        "4000",
        "--k",
        "128",
        "--iters",
        "1",
        "--json",
    ]);
    assert_eq!(v["exact"], true);
    let valid: u64 = (0..6).map(|r| (4000 + r) * 4).sum();
    assert_eq!(v["valid_bytes"], valid);
    topk_bench(&[
        "bench",
        "--backend",
        "cpu",
        "--profile",
        "iid",
        "--rows",
        "6",
        "--width",
        "9000",
        "--first-length",
        "8996",
        "--k",
        "128",
    ])
    .assert_bad_input(&["--first-length 8996", "at most 8995"]);
}

#[test]
fn stats_reports_every_profile() {
    let run = topk_bench(&[
        "stats",
        "--profile",
        "all",
        "--rows",
        "8",
        "--width",
        "2048",
        "--k",
        "64",
    ]);
    run.assert_success();
    for p in Profile::ALL {
        let line = run
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(p.name()))
            .unwrap_or_else(|| panic!("no stats line for {p}: {}", run.stdout));
        let percents: Vec<f64> = line
            .split_whitespace()
            .filter_map(|w| w.strip_suffix('%'))
            .map(|w| w.parse().unwrap())
            .collect();
        assert_eq!(percents.len(), 2, "{line}");
        assert!(
            percents.iter().all(|&x| (0.0..=100.0).contains(&x)),
            "{line}"
        );
    }
    // Sorted rows put their whole top-K at one end of the row.
    let asc = topk_bench(&[
        "stats",
        "--profile",
        "sorted-asc",
        "--rows",
        "4",
        "--width",
        "4096",
        "--k",
        "64",
    ]);
    asc.assert_success();
    assert!(asc.stdout.contains("100.0%"), "{}", asc.stdout);
}

#[test]
fn bench_refuses_a_spec_the_kernels_do_not_generate_on_the_gpu() {
    topk_bench(&[
        "bench",
        "--backend",
        "cuda",
        "--profile",
        "iid",
        "--rows",
        "2",
        "--width",
        "1024",
        "--k",
        "8",
        "--spec",
        "dtype=bf16",
    ])
    .assert_bad_input(&["--backend cuda: the GPU bench times float32 matrices, not `dtype=bf16`"]);
}

#[test]
fn stats_refuses_an_unknown_profile() {
    topk_bench(&["stats", "--profile", "nope", "--rows", "2", "--width", "10"])
        .assert_bad_input(&["unknown data profile `nope`", "indexer", "or `all`"]);
}

#[test]
fn help_texts_carry_examples() {
    for cmd in ["bench", "stats", "plot"] {
        let run = topk_bench(&[cmd, "--help"]);
        run.assert_success();
        assert!(
            run.stdout.contains("Examples:"),
            "{cmd} --help has no examples"
        );
        assert!(
            run.stdout.contains(&format!("topk-bench {cmd}")),
            "{cmd} --help"
        );
    }
}
