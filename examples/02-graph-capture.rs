//! Plan once, capture the selector in a CUDA graph, and replay it with new lengths and a new
//! live row count written on the device between replays: no allocation, no host read-back and
//! no relaunch decision inside the call.
//!
//! ```text
//! cargo run --release --example 02-graph-capture      # needs a CUDA GPU (cc >= 8.0)
//! ```

use topk::runtime::cpu::verify;
use topk::runtime::cuda::cudarc::driver::sys;
use topk::runtime::cuda::{Gpu, LaunchBuffers, Plan, PlanRequest, Workspace};
use topk::runtime::data::{generate, Profile};
use topk::runtime::ScoreMatrix;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = match Gpu::open(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("this example needs a GPU: {e}");
            return Ok(());
        }
    };
    let (m_cap, width, k) = (64usize, 200_000usize, 2048usize);
    // Capacities only: the plan (kernel, grid, workspace) does not depend on live values.
    let plan = Plan::new(&gpu, PlanRequest::new(k as u32, m_cap as u32, width as u32))?;
    let stream = gpu.stream().clone();
    let mut ws = Workspace::new(&plan, &stream)?;
    println!(
        "planned {} ({} CTAs, {} workspace bytes)",
        plan.spec, plan.grid, plan.workspace_bytes
    );

    let full: Vec<i32> = vec![width as i32; m_cap];
    let data = generate(Profile::Indexer, 3, k as u32, 0, &full, width, width)?;
    let scores = stream.clone_htod(&data)?;
    let mut lengths = stream.clone_htod(&full)?;
    let mut live = stream.clone_htod(&[m_cap as i32])?;
    let mut out = stream.alloc_zeros::<i32>(m_cap * k)?;

    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    {
        let (s, l, r) = (scores.slice(..), lengths.slice(..), live.slice(..));
        let mut o = out.slice_mut(..);
        let io = LaunchBuffers {
            scores: &s,
            lengths: &l,
            live_rows: &r,
            out: &mut o,
            row_info: None,
        };
        plan.launch(&stream, io, &mut ws)?;
    }
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))?
        .ok_or("empty capture")?;

    for (step, live_rows) in [(0usize, 64usize), (1, 40), (2, 9)] {
        // A new batch: shorter rows, fewer of them. Only device buffers change.
        let new_lengths: Vec<i32> = (0..m_cap)
            .map(|r| (width / (step + 1) - r) as i32)
            .collect();
        stream.memcpy_htod(&new_lengths, &mut lengths)?;
        stream.memcpy_htod(&[live_rows as i32], &mut live)?;
        graph.launch()?;
        let host = stream.clone_dtoh(&out)?;
        let view = ScoreMatrix {
            data: &data,
            rows: live_rows,
            width,
            pitch: width,
            lengths: &new_lengths[..live_rows],
        };
        let report = verify(&view, k, &host, k)?;
        println!(
            "replay {step}: {live_rows} live rows, exact = {}",
            report.is_exact()
        );
    }
    println!("status word after the replays: {:#x}", ws.status(&stream)?);
    Ok(())
}
