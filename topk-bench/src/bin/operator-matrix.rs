//! The operator matrix of the paper's evaluation (§6.2) on the GPU: for each (M, N), a terminal
//! causal window generated on the device, the selector timed as CUDA-graph replays, its timed
//! output verified on the device, and time / floor (one read of the valid scores).
//!
//! ```text
//! cargo run --release -p topk-bench --bin operator-matrix -- [indexer|iid] [quick|matrix|MxN,...] [spec]
//! ```
//! Prints a table and one JSON object per shape (lines starting with `{`). With
//! `TOPK_PHASE_PROBE=1` the kernel is a phase-timing build (`topk_codegen::probe`) and a
//! `{"phases":...}` line per shape gives where the rows' time went (its timings and candidate
//! counts are then not the selector's); with `TOPK_PHASE_TIMELINE=FILE` as well, every probed
//! row is appended to FILE as a JSON line (worker, start and phases, microseconds), which
//! `python3 bench/timeline.py FILE` summarizes.

use std::str::FromStr;
use topk_bench::shapes;
use topk_bench::{bench_matrix_with, RowTimeline, Spread};
use topk_dsl::Spec;
use topk_runtime::cuda::timing::TimingProtocol;
use topk_runtime::cuda::{DeviceMatrix, Gpu};
use topk_runtime::data::shapes::causal_window;
use topk_runtime::data::Profile;

const USAGE: &str = "usage: operator-matrix [indexer|iid|...] [quick|matrix|MxN,...] [spec]";

/// Prints `msg` (and the usage line for argument errors) and exits with `code`: 2 when the
/// run could not start, 1 when a shape failed.
fn fail(code: i32, msg: String) -> ! {
    eprintln!("{msg}");
    if code == 2 {
        eprintln!("{USAGE}");
    }
    std::process::exit(code)
}

fn parse_shapes(arg: &str) -> Result<Vec<(usize, usize)>, String> {
    match arg {
        "matrix" => Ok(shapes::operator_matrix()
            .iter()
            .map(|s| (s.rows, s.width))
            .collect()),
        "quick" => Ok(vec![(512, 131_072), (2048, 262_144), (512, 1_048_576)]),
        list => shapes::parse_list(list),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let profile = Profile::from_str(args.first().map(String::as_str).unwrap_or("indexer"))
        .unwrap_or_else(|e| fail(2, format!("profile: {e}")));
    let shapes = parse_shapes(args.get(1).map(String::as_str).unwrap_or("quick"))
        .unwrap_or_else(|e| fail(2, e));
    let spec = args
        .get(2)
        .map(|t| Spec::parse(t).unwrap_or_else(|e| fail(2, format!("spec: {e}"))));
    let k = spec.map(|s| s.k).unwrap_or(2048);
    let gpu = Gpu::open(0).unwrap_or_else(|e| fail(2, format!("no GPU: {e}")));
    println!("device: {} ({} SMs)", gpu.props().name, gpu.props().sms);
    let probe = std::env::var_os("TOPK_PHASE_PROBE").is_some();
    println!(
        "{:>5} x {:>8}  {:>9} {:>9} {:>6}  {:>5}  {:>22}  {:>9}  spec",
        "M", "N", "ms", "floor ms", "x flr", "exact", "routes p/r/rec/direct", "cand/row"
    );
    for (rows, width) in shapes {
        let lengths = causal_window(rows, width);
        let m = DeviceMatrix::generate(&gpu, profile.code(), 1, k, &lengths, width, width)
            .unwrap_or_else(|e| fail(1, format!("generate {rows}x{width}: {e}")));
        let r = bench_matrix_with(&gpu, &m, k, spec, TimingProtocol::default(), probe)
            .unwrap_or_else(|e| fail(1, format!("bench {rows}x{width}: {e}")));
        let long = (r.routes.total_rows() - r.routes.rows[0]).max(1);
        println!(
            "{:>5} x {:>8}  {:>9.4} {:>9.4} {:>6.2}  {:>5}  {:>22}  {:>9.0}  {}",
            rows,
            width,
            r.timing.median_ms,
            r.floor_ms,
            r.timing.median_ms / r.floor_ms,
            r.exact,
            format!(
                "{}/{}/{}/{}",
                r.routes.rows[1], r.routes.rows[2], r.routes.rows[3], r.routes.rows[4]
            ),
            r.routes.candidates as f64 / long as f64,
            r.spec
        );
        println!(
            "{{\"profile\":\"{}\",\"rows\":{},\"width\":{},\"k\":{},\"median_ms\":{:.5},\"min_ms\":{:.5},\"floor_ms\":{:.5},\"exact\":{},\"bad_rows\":{},\"routes\":[{},{},{},{},{}],\"candidates\":{},\"max_candidates\":{},\"workspace_bytes\":{},\"grid\":{},\"ctas_per_sm\":{},\"spec\":\"{}\"}}",
            profile.name(), rows, width, k, r.timing.median_ms, r.timing.min_ms, r.floor_ms, r.exact,
            r.bad_rows.len(), r.routes.rows[0], r.routes.rows[1], r.routes.rows[2], r.routes.rows[3],
            r.routes.rows[4], r.routes.candidates, r.routes.max_candidates, r.workspace_bytes, r.grid,
            r.ctas_per_sm, r.spec
        );
        if let Some(p) = r.phases {
            // TOPK_PHASE_PROBE: the candidate columns above are phase words, not counts.
            let f = |s: &Spread| format!("[{:.2},{:.2},{:.2},{:.2}]", s.mean, s.p50, s.p90, s.max);
            println!(
                "{{\"phases\":{{\"profile\":\"{}\",\"rows\":{},\"width\":{},\"probed_rows\":{},\"unit\":\"us mean,p50,p90,max\",\"proposal\":{},\"pass\":{},\"refine\":{}}}}}",
                profile.name(),
                rows,
                width,
                p.rows,
                f(&p.proposal),
                f(&p.pass),
                f(&p.refine)
            );
        }
        if let Some(path) = std::env::var_os("TOPK_PHASE_TIMELINE").filter(|_| probe) {
            append_timeline(
                &path,
                profile.name(),
                rows,
                width,
                &r.spec.to_string(),
                &lengths,
                &r.timeline,
            )
            .unwrap_or_else(|e| fail(1, format!("writing the timeline: {e}")));
        }
        if !r.exact {
            eprintln!(
                "INEXACT rows (first 10): {:?}",
                &r.bad_rows[..r.bad_rows.len().min(10)]
            );
        }
    }
}

/// Appends one JSON line per probed row of a launch to `path`.
fn append_timeline(
    path: &std::ffi::OsStr,
    profile: &str,
    rows: usize,
    width: usize,
    spec: &str,
    lengths: &[i32],
    timeline: &[RowTimeline],
) -> std::io::Result<()> {
    use std::io::Write;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let mut out = std::io::BufWriter::new(file);
    for t in timeline {
        writeln!(
            out,
            "{{\"profile\":\"{profile}\",\"rows\":{rows},\"width\":{width},\"spec\":\"{spec}\",\"row\":{},\"length\":{},\"worker\":{},\"route\":\"{}\",\"start_us\":{:.3},\"proposal_us\":{:.3},\"pass_us\":{:.3},\"refine_us\":{:.3}}}",
            t.row, lengths[t.row], t.worker, t.route.name(), t.start_us, t.proposal_us, t.pass_us, t.refine_us
        )?;
    }
    out.flush()
}
