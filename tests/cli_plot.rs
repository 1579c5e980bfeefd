//! `topk plot`: SVG charts of merged benchmark results, and nothing written for a bad input.

mod cli_support;

use cli_support::{s, topk};
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
    let run = topk(&["plot", "--results", s(dir.path()), "--out", s(&out)]);
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
fn plot_writes_nothing_when_an_input_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    write_results(dir.path());
    std::fs::write(dir.path().join("traces-t.json"), "{\"schema\": ").unwrap();
    let out = dir.path().join("plots");
    let run = topk(&["plot", "--results", s(dir.path()), "--out", s(&out)]);
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
    let run = topk(&["plot", "--results", s(dir.path()), "--out", s(&out)]);
    run.assert_bad_input(&["matrix-x.json", "topk-bench-merged/1"]);
    assert!(!out.exists());

    let gone = dir.path().join("nowhere");
    let run = topk(&["plot", "--results", s(&gone), "--out", s(&out)]);
    run.assert_bad_input(&["--results", "does not exist"]);

    let empty = tempfile::tempdir().unwrap();
    let run = topk(&["plot", "--results", s(empty.path()), "--out", s(&out)]);
    run.assert_bad_input(&["matrix-*.json"]);
}
