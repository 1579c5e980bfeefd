//! Row shapes: the terminal causal window of an indexer call, the shape autotune tunes on and
//! `topk gen` writes by default. (The evaluation's operator matrix and framework traces are the
//! benchmark harness's, `topk_bench::shapes`.)

/// Valid lengths of the terminal causal window of `m` rows ending at width `n`: row `r` has
/// length `n - m + r + 1` (the last row sees all `n` positions). Lengths below 0 (when
/// `m > n`) are 0; lengths are capped at `i32::MAX`.
pub fn causal_window(m: usize, n: usize) -> Vec<i32> {
    (0..m)
        .map(|r| {
            let len = (n + r + 1).saturating_sub(m);
            len.min(i32::MAX as usize) as i32
        })
        .collect()
}
