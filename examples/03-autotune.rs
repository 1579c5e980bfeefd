//! Autotune one shape on the GPU, store the timings, and plan with them.
//!
//! ```text
//! cargo run --release --example 03-autotune            # needs a CUDA GPU (cc >= 8.0)
//! ```
//! `topk autotune --k 2048 --rows 512 --width 131072` does the same from the command line.

use topk::runtime::autotune::Store;
use topk::runtime::cuda::timing::TimingProtocol;
use topk::runtime::cuda::tune::tune_shape;
use topk::runtime::cuda::{Gpu, Plan, PlanRequest};
use topk::runtime::data::Profile;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = match Gpu::open(0) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("this example needs a GPU: {e}");
            return Ok(());
        }
    };
    let (k, rows, width) = (2048u32, 512u32, 131_072u32);
    // Every candidate is planned, timed as graph replays and verified; all timings are kept.
    let record = tune_shape(
        &gpu,
        k,
        rows,
        width,
        Profile::Indexer.code(),
        TimingProtocol::default(),
        |i, n, spec| {
            if i < n {
                println!("[{}/{n}] {spec}", i + 1);
            }
        },
    )?;
    for t in &record.timings {
        println!(
            "{:>10}  {}",
            t.median_ms.map_or("-".into(), |ms| format!("{ms:.4} ms")),
            t.spec
        );
    }
    let path = std::env::temp_dir().join("topk-example-autotune.json");
    let mut store = Store::load(&path)?;
    store.upsert(record);
    store.save(&path)?;
    // The planner takes the fastest exact candidate for this device and shape bucket.
    let plan = Plan::with_store(&gpu, PlanRequest::new(k, rows, width), Some(&store))?;
    println!(
        "planned {} ({:?}); store at {}",
        plan.spec,
        plan.source,
        path.display()
    );
    Ok(())
}
