//! `topk-bench plot`: SVG charts of merged benchmark results, and nothing written for a bad input.

mod cli_support;

use cli_support::{s, topk_bench};
use serde_json::{json, Value};
use std::path::Path;

const SELECTORS: [&str; 4] = ["ours", "torch", "flashinfer", "sglang"];

fn timing(ms: f64) -> Value {
    json!({"status": "ok", "median_ms": ms})
}

/// A call as `merge_results.py` writes it; flashinfer is inexact on the widest shape.
fn call(rows: u64, width: u64, trace: Option<&str>) -> Value {
    let floor = (rows * width * 4) as f64 / 4.49e12 * 1e3;
    let ours = floor * 1.3;
    let flashinfer = if width > 2048 {
        json!({"status": "inexact"})
    } else {
        timing(ours * 2.0)
    };
    let sglang = ours * 1.5;
    json!({
        "name": format!("{rows}x{width}"), "rows": rows, "width": width,
        "first_length": width, "row_offset": 0, "trace": trace,
        "valid_bytes": rows * width * 4, "floor_ms": floor,
        "ours": timing(ours),
        "peers": {"torch": timing(ours * 9.0), "flashinfer": flashinfer,
                  "sglang": timing(sglang)},
        "best_peer": "sglang", "best_peer_ms": sglang,
        "speedup": {"sglang": 1.5}, "speedup_vs_best": sglang / ours,
        "ours_x_floor": ours / floor,
    })
}

fn merged(calls: Vec<Value>, traces: Vec<Value>) -> Value {
    json!({
        "schema": "topk-bench-merged/1",
        "meta": {"profile": "iid", "gpu": "Test GPU", "k": 64,
                 "read_bandwidth_bps": 4.49e12},
        "peer_names": ["torch", "flashinfer", "sglang"],
        "calls": calls, "traces": traces, "summary": {}, "problems": [],
    })
}

/// A matrix file (2 widths x 2 row counts) and a trace file (one trace of 2 calls) in `dir`.
fn write_results(dir: &Path) {
    let shapes = [(512, 1024), (1024, 1024), (512, 4096), (1024, 4096)]
        .iter()
        .map(|&(m, n)| call(m, n, None))
        .collect();
    let matrix = merged(shapes, vec![]);
    let calls = vec![call(256, 2048, Some("t1")), call(128, 2048, Some("t1"))];
    let total = |f: &dyn Fn(&Value) -> f64| calls.iter().map(f).sum::<f64>();
    let ours = total(&|c| c["ours"]["median_ms"].as_f64().unwrap());
    let trace = json!({
        "name": "t1", "trace": "t1", "calls": 2, "rows": 384, "width": 2048,
        "valid_bytes": 384 * 2048 * 4, "floor_ms": total(&|c| c["floor_ms"].as_f64().unwrap()),
        "ours": timing(ours),
        "peers": {"torch": timing(ours * 9.0), "flashinfer": timing(ours * 2.0),
                  "sglang": {"status": "incomplete", "error": "1 of 2 calls without an exact time"}},
        "best_peer": "flashinfer", "speedup_vs_best": 2.0, "ours_x_floor": 1.3,
    });
    let traces = merged(calls, vec![trace]);
    std::fs::write(dir.join("matrix-t.json"), matrix.to_string()).unwrap();
    std::fs::write(dir.join("traces-t.json"), traces.to_string()).unwrap();
    std::fs::write(dir.join("matrix-t.md"), "not an input").unwrap();
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn plot_draws_every_chart_with_every_selector() {
    let dir = tempfile::tempdir().unwrap();
    write_results(dir.path());
    let out = dir.path().join("plots");
    let run = topk_bench(&["plot", "--results", s(dir.path()), "--out", s(&out)]);
    run.assert_success();
    let expected = [
        "matrix-t-floor.svg",
        "matrix-t-latency.svg",
        "matrix-t-speedup.svg",
        "traces-t.svg",
    ];
    assert_eq!(files_in(&out), expected, "no temporary files stay behind");
    assert_eq!(run.stdout.lines().count(), expected.len(), "{}", run.stdout);
    for name in expected {
        let path = out.join(name);
        assert!(
            run.stdout.contains(s(&path)),
            "{name} not reported: {}",
            run.stdout
        );
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(
            svg.starts_with("<svg") || svg.starts_with("<?xml"),
            "{name}"
        );
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        assert!(
            svg.contains("Test GPU") && svg.contains("profile iid"),
            "{name}"
        );
        // Selector names stand alone as legend entries or bar labels.
        let wanted: &[&str] = match name {
            "matrix-t-floor.svg" => &["ours"],
            "matrix-t-speedup.svg" => &[],
            _ => &SELECTORS,
        };
        for sel in wanted {
            assert!(svg.contains(&format!(">\n{sel}\n<")), "{name} lacks {sel}");
        }
    }
    let text = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
    // Both widths get a panel; flashinfer's inexact shapes are named, not drawn.
    let latency = text("matrix-t-latency.svg");
    assert!(latency.contains("N = 1K") && latency.contains("N = 4K"));
    assert!(latency.contains("flashinfer at 512x4096 (inexact), 1024x4096 (inexact)"));
    // sglang/ours = 1.5 and ours/floor = 1.3 at every shape.
    let speedup = text("matrix-t-speedup.svg");
    assert!(speedup.contains("geomean 1.50x") && speedup.contains("best peer: sglang"));
    assert!(text("matrix-t-floor.svg").contains("geomean 1.30x"));
    assert!(text("traces-t.svg").contains("no exact total (incomplete)"));
}

#[test]
fn plot_draws_the_few_row_comparisons_without_a_floor_chart() {
    let dir = tempfile::tempdir().unwrap();
    write_results(dir.path());
    let few = dir.path().join("few-rows");
    std::fs::create_dir(&few).unwrap();
    let calls = [(1, 1 << 20), (8, 1 << 20), (1, 1 << 22)]
        .iter()
        .map(|&(m, n)| call(m, n, None))
        .collect();
    std::fs::write(
        few.join("few-rows-peers-t.json"),
        merged(calls, vec![]).to_string(),
    )
    .unwrap();
    std::fs::write(few.join("few-rows-peers-t.md"), "not an input").unwrap();
    let out = dir.path().join("plots");
    let run = topk_bench(&["plot", "--results", s(dir.path()), "--out", s(&out)]);
    run.assert_success();
    let names = files_in(&out);
    for name in ["few-rows-t-latency.svg", "few-rows-t-speedup.svg"] {
        assert!(names.contains(&name.to_string()), "{name}: {names:?}");
        let svg = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(svg.contains("profile iid"), "{name}");
    }
    // A few rows are bound by latency, not by the one read: no floor chart for them.
    assert!(!names
        .iter()
        .any(|n| n.starts_with("few-rows") && n.ends_with("floor.svg")));
    let latency = std::fs::read_to_string(out.join("few-rows-t-latency.svg")).unwrap();
    assert!(latency.contains("N = 1M") && latency.contains("N = 4M"));
}

#[test]
fn plot_writes_nothing_when_an_input_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    write_results(dir.path());
    std::fs::write(dir.path().join("traces-t.json"), "{\"schema\": ").unwrap();
    let out = dir.path().join("plots");
    let run = topk_bench(&["plot", "--results", s(dir.path()), "--out", s(&out)]);
    run.assert_bad_input(&["traces-t.json", "merge_results.py"]);
    assert_eq!(files_in(&out), Vec::<String>::new());
}

#[test]
fn plot_rejects_other_schemas_and_missing_folders() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = merged(vec![call(512, 1024, None)], vec![]);
    doc["schema"] = json!("topk-peers-bench/1");
    std::fs::write(dir.path().join("matrix-x.json"), doc.to_string()).unwrap();
    let out = dir.path().join("plots");
    let run = topk_bench(&["plot", "--results", s(dir.path()), "--out", s(&out)]);
    run.assert_bad_input(&["matrix-x.json", "topk-bench-merged/1"]);
    assert!(!out.exists());

    let gone = dir.path().join("nowhere");
    let run = topk_bench(&["plot", "--results", s(&gone), "--out", s(&out)]);
    run.assert_bad_input(&["--results", "does not exist"]);

    let empty = tempfile::tempdir().unwrap();
    let run = topk_bench(&["plot", "--results", s(empty.path()), "--out", s(&out)]);
    run.assert_bad_input(&["matrix-*.json"]);
}

/// One line of a GPU bench log: `label_field` names the policy, variant or run kind; the time
/// is `x_floor` times the shape's one-read floor.
fn measurement(label: (&str, &str), profile: &str, shape: (u64, u64), x_floor: f64) -> Value {
    let (rows, width) = shape;
    let floor = (rows * width * 4) as f64 / 4.49e12 * 1e3;
    let mut line = json!({
        "profile": profile, "rows": rows, "width": width, "k": 64,
        "median_ms": floor * x_floor, "floor_ms": floor, "exact": true,
        "spec": format!("k=64,policy={}", label.1),
    });
    line[label.0] = json!(label.1);
    line
}

fn inexact(mut line: Value) -> Value {
    line["exact"] = json!(false);
    line
}

fn write_lines(path: &Path, lines: &[Value]) {
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(path, text.join("\n") + "\n").unwrap();
}

/// ablations.jsonl, margins.jsonl, kvsplit.jsonl and context-parallel logs in `dir`; the one
/// inexact measurement of each is worth 7.77x the floor, so its value shows if it is drawn.
fn write_bench_logs(dir: &Path) {
    let (a, b) = ((2048, 262144), (512, 1 << 20));
    let mut ablations = Vec::new();
    for profile in ["iid", "indexer"] {
        for (policy, x) in [("rho=1.5", 1.25), ("stride=64", 1.75)] {
            ablations.push(measurement(("ablation", policy), profile, a, x));
            ablations.push(measurement(("ablation", policy), profile, b, x + 0.25));
        }
    }
    ablations.push(measurement(("ablation", "exact-proposal"), "iid", a, 2.25));
    ablations.push(inexact(measurement(
        ("ablation", "exact-proposal"),
        "iid",
        b,
        7.77,
    )));
    for policy in ["cross-fast", "cross-slow"] {
        for rows in [64, 1024] {
            for width in [16384, 32768] {
                let line = measurement(("ablation", policy), "iid", (rows, width), 3.0);
                ablations.push(
                    if policy == "cross-slow" && rows == 1024 && width == 32768 {
                        inexact(line)
                    } else {
                        line
                    },
                );
            }
        }
    }
    write_lines(&dir.join("ablations.jsonl"), &ablations);

    for (file, variants) in [
        (
            "margins.jsonl",
            ["rho=1.5,rescue=2.5", "rho=1.75,rescue=2.5"],
        ),
        ("kvsplit.jsonl", ["default", "kvsplit2"]),
        ("views.jsonl", ["run=1", "run=4"]),
    ] {
        let mut lines = Vec::new();
        for profile in ["iid", "indexer"] {
            for (i, variant) in variants.iter().enumerate() {
                for rows in [512, 1024] {
                    let x = 1.3 + 0.1 * i as f64;
                    lines.push(measurement(
                        ("variant", variant),
                        profile,
                        (rows, 131072),
                        x,
                    ));
                }
            }
        }
        lines.push(inexact(measurement(
            ("variant", variants[1]),
            "indexer",
            (2048, 131072),
            7.77,
        )));
        write_lines(&dir.join(file), &lines);
    }

    // A text log as the context-parallel program prints it: a table with a JSON line per row.
    let run = |how: &str, ranks: u64, shape: (u64, u64), ms: f64| {
        let mut line = measurement(("how", how), "iid", shape, 1.0);
        line["ranks"] = json!(ranks);
        line["median_ms"] = json!(ms);
        line
    };
    let mut log = String::from("devices: 4 x Test GPU\n    M x        N   ranks         ms\n");
    for line in [
        run("1-gpu", 1, (8, 1 << 22), 0.4),
        run("sharded-1", 1, (8, 1 << 22), 0.1),
        run("nccl", 2, (8, 1 << 22), 0.2),
        inexact(run("nccl", 4, (8, 1 << 22), 0.05)),
        inexact(run("1-gpu", 1, (64, 1 << 20), 0.2)),
        run("sharded-1", 1, (64, 1 << 20), 0.3),
    ] {
        log.push_str(&format!("    table row\n{line}\n"));
    }
    let folder = dir.join("context-parallel");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("x4-t-early.txt"), log).unwrap();
    // Other context-parallel logs are not drawn.
    let other = run("1-gpu", 1, (16, 1 << 22), 0.4).to_string();
    std::fs::write(folder.join("x2-t-first.txt"), other + "\n").unwrap();
}

#[test]
fn plot_draws_the_bench_logs_next_to_the_merged_results() {
    let dir = tempfile::tempdir().unwrap();
    write_results(dir.path());
    write_bench_logs(dir.path());
    let out = dir.path().join("plots");
    let run = topk_bench(&["plot", "--results", s(dir.path()), "--out", s(&out)]);
    run.assert_success();
    let logs = [
        ("ablations-crossover.svg", "ablations.jsonl"),
        ("ablations-latency.svg", "ablations.jsonl"),
        ("context-parallel.svg", "x4-t-early.txt"),
        ("kvsplit.svg", "kvsplit.jsonl"),
        ("margins.svg", "margins.jsonl"),
        ("views.svg", "views.jsonl"),
    ];
    let names = files_in(&out);
    for (name, _) in logs {
        assert!(
            names.contains(&name.to_string()),
            "{name} missing: {names:?}"
        );
    }
    assert_eq!(names.len(), 4 + logs.len(), "{names:?}");
    assert_eq!(run.stdout.lines().count(), names.len(), "{}", run.stdout);
    let text = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
    // Text as plotters writes it: alone between tags.
    let shown = |svg: &str, t: &str| svg.contains(&format!(">\n{t}\n<"));
    for (name, source) in logs {
        let svg = text(name);
        assert!(svg.trim_end().ends_with("</svg>"), "{name}");
        assert!(svg.contains(source), "{name} does not name {source}");
        assert!(svg.contains("K=64"), "{name}");
    }

    let latency = text("ablations-latency.svg");
    for t in [
        "profile iid",
        "profile indexer",
        "rho=1.5",
        "stride=64",
        "exact-proposal",
    ] {
        assert!(shown(&latency, t), "ablations-latency lacks {t}");
    }
    for t in [
        "2048x256K",
        "512x1M",
        "1.25",
        "1.50",
        "1.75",
        "2.00",
        "2.25",
    ] {
        assert!(shown(&latency, t), "ablations-latency lacks {t}");
    }
    assert!(!shown(&latency, "7.77") && !latency.contains("cross-"));
    assert!(latency.contains("iid exact-proposal 512x1M (inexact)"));

    let crossover = text("ablations-crossover.svg");
    for t in [
        "profile iid, M = 64",
        "profile iid, M = 1024",
        "cross-fast",
        "cross-slow",
    ] {
        assert!(shown(&crossover, t), "ablations-crossover lacks {t}");
    }
    assert!(shown(&crossover, "16K") && shown(&crossover, "32K"));
    assert!(crossover.contains("cross-fast: k=64,policy=cross-fast"));
    assert!(crossover.contains("iid 1024x32K cross-slow (inexact)"));
    assert!(!crossover.contains("rho=1.5"));

    for (name, variants) in [
        ("margins.svg", ["rho=1.5,rescue=2.5", "rho=1.75,rescue=2.5"]),
        ("kvsplit.svg", ["default", "kvsplit2"]),
        ("views.svg", ["run=1", "run=4"]),
    ] {
        let svg = text(name);
        for t in variants
            .iter()
            .chain(&["512x128K", "1024x128K", "1.30", "1.40"])
        {
            assert!(shown(&svg, t), "{name} lacks {t}");
        }
        assert!(shown(&svg, "profile iid") && shown(&svg, "profile indexer"));
        assert!(!shown(&svg, "7.77"), "{name} draws an inexact time");
        let note = format!("indexer 2048x128K {} (inexact)", variants[1]);
        assert!(svg.contains(&note), "{name} lacks {note}");
    }

    let scaling = text("context-parallel.svg");
    assert!(shown(&scaling, "8x4M") && shown(&scaling, "64x1M"));
    assert!(
        !scaling.contains("16x4M"),
        "only the x4-*-early logs are drawn"
    );
    assert!(scaling.contains("iid 8x4M 4 ranks (inexact)"));
    assert!(scaling.contains("iid 64x1M (1-gpu inexact)"));
    // Two exact points (1 and 2 ranks of 8x4M) and a legend key per shape.
    assert_eq!(scaling.matches("<circle").count(), 2 + 2);
}

#[test]
fn plot_names_the_file_and_line_of_a_corrupt_bench_log() {
    let cases = [
        (
            "margins.jsonl",
            "{\"variant\": \"v\", \"profile\": ",
            "margin-sweep.sh",
        ),
        ("kvsplit.jsonl", "{\"profile\": \"iid\"}", "kvsplit.sh"),
        ("views.jsonl", "{\"profile\": \"iid\"}", "views.sh"),
        (
            "ablations.jsonl",
            "{\"ablation\": \"rho=1\", \"rows\": 8}",
            "ablations.sh",
        ),
        (
            "context-parallel/x4-t-early.txt",
            "{not json",
            "the context-parallel program",
        ),
    ];
    for (file, bad, writer) in cases {
        let dir = tempfile::tempdir().unwrap();
        write_results(dir.path());
        write_bench_logs(dir.path());
        let path = dir.path().join(file);
        let mut text = std::fs::read_to_string(&path).unwrap();
        let line = text.lines().count() + 1;
        text.push_str(bad);
        std::fs::write(&path, text).unwrap();
        let out = dir.path().join("plots");
        let run = topk_bench(&["plot", "--results", s(dir.path()), "--out", s(&out)]);
        let at = format!("line {line}");
        run.assert_bad_input(&[file.rsplit('/').next().unwrap(), &at, writer]);
        assert_eq!(files_in(&out), Vec::<String>::new(), "{file}");
    }
}
