//! `topk gen`, `topk bench` and `topk demo`: generated inputs, timed and verified runs.

mod cli_support;

use cli_support::{files_in, s, topk};
use topk_runtime::data::{self, shapes::causal_window, Profile};

#[test]
fn gen_writes_exactly_the_generator_matrix_and_causal_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let (out, lens) = (dir.path().join("s.npy"), dir.path().join("l.npy"));
    let run = topk(&[
        "gen",
        "--profile",
        "ties-at-k",
        "--rows",
        "6",
        "--width",
        "3000",
        "--k",
        "64",
        "--seed",
        "9",
        "--out",
        s(&out),
        "--lengths-out",
        s(&lens),
    ]);
    run.assert_success();
    let scores = topk::io::read_scores(&out, None, &mut |_, _| {}).unwrap();
    let lengths = topk::io::read_lengths(&lens, None).unwrap();
    let expected_lengths = causal_window(6, 3000);
    assert_eq!(
        lengths,
        expected_lengths
            .iter()
            .map(|&l| l as i64)
            .collect::<Vec<_>>()
    );
    let expected =
        data::generate(Profile::TiesAtK, 9, 64, 0, &expected_lengths, 3000, 3000).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!((scores.rows, scores.width), (6, 3000));
    assert_eq!(bits(&scores.data), bits(&expected));
}

#[test]
fn gen_is_deterministic_in_the_seed_and_honours_full_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let run = |seed: &str, name: &str| {
        let out = dir.path().join(format!("{name}.npy"));
        let lens = dir.path().join(format!("{name}.len.npy"));
        topk(&[
            "gen",
            "--profile",
            "iid",
            "--rows",
            "3",
            "--width",
            "500",
            "--seed",
            seed,
            "--lengths",
            "full",
            "--out",
            s(&out),
            "--lengths-out",
            s(&lens),
        ])
        .assert_success();
        assert_eq!(topk::io::read_lengths(&lens, None).unwrap(), vec![500; 3]);
        std::fs::read(out).unwrap()
    };
    assert_eq!(run("1", "a"), run("1", "b"));
    assert_ne!(run("1", "a"), run("2", "c"));
}

#[test]
fn gen_stats_reports_every_profile() {
    let run = topk(&[
        "gen",
        "--profile",
        "all",
        "--rows",
        "8",
        "--width",
        "2048",
        "--k",
        "64",
        "--stats",
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
    let asc = topk(&[
        "gen",
        "--profile",
        "sorted-asc",
        "--rows",
        "4",
        "--width",
        "4096",
        "--k",
        "64",
        "--stats",
    ]);
    asc.assert_success();
    assert!(asc.stdout.contains("100.0%"), "{}", asc.stdout);
}

#[test]
fn gen_refuses_contradictory_requests_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (out, lens) = (dir.path().join("s.npy"), dir.path().join("l.npy"));
    let base = ["gen", "--rows", "2", "--width", "10"];
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec![
                "--profile",
                "all",
                "--out",
                s(&out),
                "--lengths-out",
                s(&lens),
            ],
            vec!["--profile all", "--stats"],
        ),
        (
            vec!["--profile", "nope", "--stats"],
            vec!["unknown data profile `nope`", "indexer"],
        ),
        (vec!["--profile", "iid"], vec!["nothing to do"]),
        (
            vec![
                "--profile",
                "iid",
                "--out",
                s(&out),
                "--lengths-out",
                s(&out),
            ],
            vec!["same file"],
        ),
    ];
    for (extra, needles) in cases {
        let mut args = base.to_vec();
        args.extend(extra);
        topk(&args).assert_bad_input(&needles);
    }
    // --out without --lengths-out is an argument error.
    let mut args = base.to_vec();
    args.extend(["--profile", "iid", "--out", s(&out)]);
    assert_eq!(topk(&args).code, 2);
    assert!(files_in(dir.path()).is_empty());
}

fn bench_json(args: &[&str]) -> serde_json::Value {
    let run = topk(args);
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
    topk(&[
        "gen",
        "--profile",
        "two-values",
        "--rows",
        "5",
        "--width",
        "5000",
        "--k",
        "100",
        "--out",
        s(&scores),
        "--lengths-out",
        s(&lens),
    ])
    .assert_success();
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

    let table = topk(&[
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
        topk(&args)
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
fn demo_selects_verifies_and_compares_with_the_baseline() {
    let run = topk(&[
        "demo",
        "--rows",
        "8",
        "--width",
        "8192",
        "--k",
        "64",
        "--iters",
        "1",
        "--backend",
        "cpu",
    ]);
    run.assert_success();
    let line = |key: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} line: {}", run.stdout))
            .to_string()
    };
    assert!(line("selector").contains(" exact "), "{}", run.stdout);
    assert!(line("baseline").contains(" exact "), "{}", run.stdout);
    assert!(line("selector").contains("GB/s"));
    let speedup: f64 = line("speedup")
        .split_whitespace()
        .nth(1)
        .and_then(|w| w.strip_suffix('x'))
        .and_then(|w| w.parse().ok())
        .unwrap();
    assert!(speedup > 0.0);
    assert!(line("scores").contains("8 rows x 8192"));
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
    topk(&[
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
fn routes_per_row_lists_every_rows_route_and_frontier_as_the_library_computes_them() {
    use topk_runtime::data::stats::row_outcomes;
    let spec = "k=64,propose=sampled(stride=16,rho=1.5,rescue=2.5)";
    let run = topk(&[
        "routes",
        "--profile",
        "iid",
        "--rows",
        "40",
        "--width",
        "5000",
        "--k",
        "64",
        "--seed",
        "4",
        "--per-row",
        "--spec",
        spec,
    ]);
    run.assert_success();
    let lines: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let expected = row_outcomes(Profile::Iid, 40, 5000, 4, &spec.parse().unwrap()).unwrap();
    assert_eq!(lines.len(), expected.len());
    for (r, (line, o)) in lines.iter().zip(&expected).enumerate() {
        assert_eq!(line["row"], r as u64);
        assert_eq!(line["profile"], "iid");
        assert_eq!(line["length"], o.length);
        assert_eq!(line["route"], o.route.name());
        assert_eq!(line["candidates"], o.candidates);
    }
    // A certified band holds at least K scores.
    assert!(expected
        .iter()
        .filter(|o| matches!(
            o.route,
            topk_runtime::Route::Primary | topk_runtime::Route::Rescue
        ))
        .all(|o| o.candidates >= 64));
    assert!(expected
        .iter()
        .any(|o| o.route == topk_runtime::Route::Primary));
}
