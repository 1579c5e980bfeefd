//! Select the Top-K of a small ragged matrix on the best backend, then verify it.
//!
//! ```text
//! cargo run --release --example 01-select
//! ```

use topk::backend::{resolve, select};
use topk::runtime::cpu::verify;
use topk::runtime::data::{generate, shapes::causal_window, Profile};
use topk::runtime::ScoreMatrix;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (rows, width, k) = (16usize, 65_536usize, 2048usize);
    // A terminal causal window: row r holds width - rows + r + 1 valid scores.
    let lengths = causal_window(rows, width);
    let data = generate(Profile::Indexer, 7, k as u32, 0, &lengths, width, width)?;
    let scores = ScoreMatrix {
        data: &data,
        rows,
        width,
        pitch: width,
        lengths: &lengths,
    };

    // `auto` takes the GPU when one is usable, otherwise the CPU backend (same algorithm).
    let backend = resolve("auto")?;
    if let Some(why) = &backend.fallback_reason {
        println!("CPU backend ({why})");
    }
    let mut out = vec![0i32; rows * k];
    let selection = select(backend.backend, None, k, &scores, &mut out, k)?;
    println!("backend  {}", backend.backend);
    println!("spec     {}", selection.spec);
    println!("routes   {:?}", selection.stats.rows);

    // Exactness (paper eq. 30): no unselected valid score exceeds a selected one.
    let report = verify(&scores, k, &out, k)?;
    println!(
        "exact    {} ({} rows checked)",
        report.is_exact(),
        report.rows_checked
    );
    let mut row0: Vec<i32> = out[..k].to_vec();
    row0.sort_unstable();
    println!(
        "row 0    first indices {:?} ... last {:?}",
        &row0[..4],
        &row0[k - 4..]
    );
    Ok(())
}
