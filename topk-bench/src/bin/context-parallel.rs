//! Context-parallel exact Top-K: rows sharded over every GPU of the machine (one rank per
//! device, NCCL all-reduces between the stages, all captured in CUDA graphs) against the
//! single-GPU selector on the whole rows. Each rank generates the global matrix on its device
//! and reads only its shard (a column window of it); every timed output is verified on the
//! device against the whole rows.
//!
//! ```text
//! cargo run --release -p topk-bench --bin context-parallel -- [indexer|iid] [MxN,...] [ranks,...]
//! ```
//! Prints a table and one JSON object per run (lines starting with `{`).

use std::str::FromStr;
use std::time::Instant;
use topk_bench::shapes;
use topk_bench::{bench_matrix, FLOOR_READ_BYTES_PER_S};
use topk_runtime::cuda::cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use topk_runtime::cuda::sharded::{RankIo, ShardedRequest, ShardedSelector};
use topk_runtime::cuda::timing::TimingProtocol;
use topk_runtime::cuda::{DeviceMatrix, Gpu};
use topk_runtime::data::shapes::causal_window;
use topk_runtime::data::Profile;
use topk_runtime::sharding::Sharding;

const K: u32 = 2048;

const USAGE: &str = "usage: context-parallel [indexer|iid|...] [MxN,...] [ranks,...]";

/// Prints `msg` (and the usage line for argument errors) and exits with `code`: 2 when the
/// run could not start, 1 when a run failed.
fn fail(code: i32, msg: String) -> ! {
    eprintln!("{msg}");
    if code == 2 {
        eprintln!("{USAGE}");
    }
    std::process::exit(code)
}

fn parse_list<T: FromStr>(arg: &str) -> Result<Vec<T>, String> {
    arg.split(',')
        .map(|s| {
            s.parse()
                .map_err(|_| format!("`{s}` in `{arg}` is not a number"))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let profile = Profile::from_str(args.first().map(String::as_str).unwrap_or("indexer"))
        .unwrap_or_else(|e| fail(2, format!("profile: {e}")));
    let shapes_arg = args
        .get(1)
        .map(String::as_str)
        .unwrap_or("16x4194304,64x4194304,256x1048576");
    let shapes = shapes::parse_list(shapes_arg).unwrap_or_else(|e| fail(2, e));
    let mut gpus = Vec::new();
    while let Ok(g) = Gpu::open(gpus.len()) {
        gpus.push(g);
    }
    if gpus.is_empty() {
        fail(
            2,
            "no GPU: the context-parallel benchmark needs at least one CUDA device".into(),
        );
    }
    let rank_counts: Vec<usize> = match args.get(2) {
        Some(a) => parse_list(a).unwrap_or_else(|e| fail(2, format!("ranks: {e}"))),
        None => (1..=gpus.len()).filter(|g| g.is_power_of_two()).collect(),
    };
    println!("devices: {} x {}", gpus.len(), gpus[0].props().name);
    println!(
        "{:>5} x {:>8}  {:>6}  {:>9} {:>9} {:>7} {:>8}  {:>5}",
        "M", "N", "ranks", "ms", "floor ms", "x 1GPU", "x flr/G", "exact"
    );
    for (rows, width) in shapes {
        if let Err(e) = run_shape(&gpus, profile, rows, width, &rank_counts) {
            fail(1, format!("{rows}x{width}: {e}"));
        }
    }
}

/// The single-GPU default plan on whole rows, then the sharded selector on each rank count.
fn run_shape(
    gpus: &[Gpu],
    profile: Profile,
    rows: usize,
    width: usize,
    rank_counts: &[usize],
) -> Result<(), String> {
    let lengths = causal_window(rows, width);
    let m0 = DeviceMatrix::generate(&gpus[0], profile.code(), 1, K, &lengths, width, width)
        .map_err(|e| format!("generate: {e}"))?;
    let floor_ms = m0.valid_bytes() as f64 / FLOOR_READ_BYTES_PER_S * 1e3;
    let one = bench_matrix(&gpus[0], &m0, K, None, TimingProtocol::default())
        .map_err(|e| format!("single GPU: {e}"))?;
    let one_ms = one.timing.median_ms;
    report(
        profile,
        rows,
        width,
        "1-gpu",
        1,
        one_ms,
        floor_ms,
        one_ms,
        one.exact,
        one.workspace_bytes,
    );
    let mut mats = vec![m0];
    for &g in rank_counts {
        if g == 0 || g > gpus.len() {
            eprintln!("skipping {g} ranks: {} devices", gpus.len());
            continue;
        }
        while mats.len() < g {
            let d = &gpus[mats.len()];
            mats.push(
                DeviceMatrix::generate(d, profile.code(), 1, K, &lengths, width, width)
                    .map_err(|e| format!("generate on device {}: {e}", d.ordinal()))?,
            );
        }
        let (ms, exact, workspace) = run_sharded(&gpus[..g], &mats[..g], rows, width)
            .map_err(|e| format!("{g} ranks: {e}"))?;
        let name = if g == 1 { "sharded-1" } else { "nccl" };
        report(
            profile, rows, width, name, g, ms, floor_ms, one_ms, exact, workspace,
        );
    }
    Ok(())
}

/// Times one sharded selector over `gpus` (one rank each; one rank is simulated on its
/// device) as graph replays and verifies its output: (median ms, exact, workspace bytes).
fn run_sharded(
    gpus: &[Gpu],
    mats: &[DeviceMatrix],
    rows: usize,
    width: usize,
) -> Result<(f64, bool, u64), String> {
    let g = gpus.len();
    let cuda = |e: topk_runtime::cuda::cudarc::driver::DriverError| e.to_string();
    let err = |e: topk_runtime::Error| e.to_string();
    let sharding = Sharding::covering(width, g).map_err(err)?;
    let request = ShardedRequest::new(K, rows as u32, sharding);
    let mut sel = if g == 1 {
        ShardedSelector::simulated(&gpus[0], request)
    } else {
        ShardedSelector::nccl(gpus, request)
    }
    .map_err(err)?;
    let mut outs: Vec<CudaSlice<i32>> = gpus
        .iter()
        .map(|gpu| gpu.stream().alloc_zeros::<i32>(rows * K as usize))
        .collect::<Result<_, _>>()
        .map_err(cuda)?;
    let io: Vec<RankIo> = (0..g)
        .map(|r| {
            let s = gpus[r].stream();
            let offset = sharding.offset(r).min(width) as u64 * 4;
            RankIo {
                scores: mats[r].scores.device_ptr(s).0 + offset,
                pitch: width as u64,
                lengths: mats[r].lengths.device_ptr(s).0,
                live_rows: mats[r].live_rows.device_ptr(s).0,
                out: outs[r].device_ptr_mut(s).0,
                out_pitch: K as u64,
                row_info: 0,
            }
        })
        .collect();
    // SAFETY: the matrices and outputs outlive the graph; the last shard's window may reach
    // past the row, but only the valid positions of each row are read.
    let graph = unsafe { sel.capture(&io) }.map_err(err)?;
    for _ in 0..10 {
        graph.replay().map_err(err)?;
    }
    graph.synchronize().map_err(err)?;
    let mut times = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..20 {
            graph.replay().map_err(err)?;
        }
        graph.synchronize().map_err(err)?;
        times.push(t.elapsed().as_secs_f64() * 1e3 / 20.0);
    }
    times.sort_by(f64::total_cmp);
    let ms = times[times.len() / 2];
    let status = sel.status().map_err(err)?;
    let bad = mats[0]
        .verify(&gpus[0], &outs[0], K, K as usize)
        .map_err(err)?;
    let first = gpus[0].stream().clone_dtoh(&outs[0]).map_err(cuda)?;
    let mut same = true;
    for r in 1..g {
        same &= gpus[r].stream().clone_dtoh(&outs[r]).map_err(cuda)? == first;
    }
    Ok((
        ms,
        status == 0 && bad.is_empty() && same,
        sel.workspace_bytes(),
    ))
}

#[allow(clippy::too_many_arguments)]
fn report(
    profile: Profile,
    rows: usize,
    width: usize,
    how: &str,
    ranks: usize,
    ms: f64,
    floor_ms: f64,
    one_ms: f64,
    exact: bool,
    workspace: u64,
) {
    println!(
        "{:>5} x {:>8}  {:>6}  {:>9.4} {:>9.4} {:>7.2} {:>8.2}  {:>5}  {how}",
        rows,
        width,
        ranks,
        ms,
        floor_ms,
        one_ms / ms,
        ms / (floor_ms / ranks as f64),
        exact
    );
    println!(
        "{{\"profile\":\"{}\",\"rows\":{rows},\"width\":{width},\"k\":{K},\"how\":\"{how}\",\"ranks\":{ranks},\"median_ms\":{ms:.5},\"floor_ms\":{floor_ms:.5},\"speedup_vs_one_gpu\":{:.4},\"exact\":{exact},\"workspace_bytes_per_rank\":{workspace}}}",
        profile.name(),
        one_ms / ms
    );
}
