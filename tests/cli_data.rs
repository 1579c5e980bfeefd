//! `topk gen`, `topk demo` and `topk routes`: generated inputs, a timed and verified run, and
//! per-row routes.

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
fn gen_refuses_contradictory_requests_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (out, lens) = (dir.path().join("s.npy"), dir.path().join("l.npy"));
    let base = ["gen", "--rows", "2", "--width", "10"];
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec![
                "--profile",
                "nope",
                "--out",
                s(&out),
                "--lengths-out",
                s(&lens),
            ],
            vec!["unknown data profile `nope`", "indexer"],
        ),
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
    // --out without --lengths-out, or neither, is an argument error.
    for extra in [&["--out", s(&out)][..], &[]] {
        let mut args = base.to_vec();
        args.extend(["--profile", "iid"]);
        args.extend_from_slice(extra);
        assert_eq!(topk(&args).code, 2);
    }
    assert!(files_in(dir.path()).is_empty());
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
    // The speedup is the baseline's time over the selector's, as printed (each rounded to its
    // last digit, the speedup to one decimal); one timed run of each can come out either way.
    let time = |key: &str| -> (f64, f64) {
        let l = line(key);
        let words: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(words[2], "ms", "{l}");
        let decimals = words[1].split('.').nth(1).map_or(0, str::len);
        (
            words[1].parse().unwrap(),
            0.5 * 10f64.powi(-(decimals as i32)),
        )
    };
    let ((ours, e_ours), (base, e_base)) = (time("selector"), time("baseline"));
    let (lo, hi) = (
        (base - e_base) / (ours + e_ours),
        (base + e_base) / (ours - e_ours),
    );
    assert!(
        speedup.is_finite() && lo - 0.05 <= speedup && speedup <= hi + 0.05,
        "speedup {speedup} outside [{lo}, {hi}]: {}",
        run.stdout
    );
    assert!(line("scores").contains("8 rows x 8192"));
}

#[test]
fn routes_per_row_lists_every_rows_route_and_frontier_as_the_library_computes_them() {
    use topk_runtime::data::route_rates::row_outcomes;
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
