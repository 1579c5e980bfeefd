//! Shared helpers of the CPU integration tests: a small deterministic generator and checks.
#![allow(dead_code)]

use topk_runtime::{cpu, keys, ScoreMatrix};

/// SplitMix64: deterministic, seedable, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
    /// Roughly normal (sum of four uniforms, centred and scaled).
    pub fn gaussian(&mut self) -> f32 {
        (self.unit() + self.unit() + self.unit() + self.unit() - 2.0) * 1.732
    }
}

/// A row-major matrix that owns its buffers.
pub struct Matrix {
    pub data: Vec<f32>,
    pub rows: usize,
    pub width: usize,
    pub pitch: usize,
    pub lengths: Vec<i32>,
}

impl Matrix {
    /// Rows laid out at `pitch`, padding filled with NaN so that reading past a length shows.
    pub fn from_rows(rows: &[Vec<f32>], width: usize, pitch: usize) -> Matrix {
        let mut data = vec![f32::NAN; rows.len() * pitch];
        for (r, row) in rows.iter().enumerate() {
            data[r * pitch..r * pitch + row.len()].copy_from_slice(row);
        }
        Matrix {
            data,
            rows: rows.len(),
            width,
            pitch,
            lengths: rows.iter().map(|r| r.len() as i32).collect(),
        }
    }
    pub fn view(&self) -> ScoreMatrix<'_> {
        ScoreMatrix {
            data: &self.data,
            rows: self.rows,
            width: self.width,
            pitch: self.pitch,
            lengths: &self.lengths,
        }
    }
}

/// Sorted descending keys of the selected scores of one row: equal for two exact answers.
pub fn selected_keys(row: &[f32], slots: &[i32]) -> Vec<u32> {
    let mut keys: Vec<u32> = slots
        .iter()
        .filter(|&&i| i >= 0)
        .map(|&i| keys::desc_key32(row[i as usize]))
        .collect();
    keys.sort_unstable();
    keys
}

/// Assert that `out` is exact for every row: by the verifier and against the oracle's values.
pub fn assert_exact(m: &Matrix, k: usize, out: &[i32], out_pitch: usize, what: &str) {
    let view = m.view();
    let report = cpu::verify(&view, k, out, out_pitch).unwrap();
    assert!(report.is_exact(), "{what}, K = {k}: {report}");
    let mut expected = vec![0i32; m.rows * out_pitch];
    cpu::oracle(&view, k, &mut expected, out_pitch).unwrap();
    for r in 0..m.rows {
        let row = view.row(r);
        let got = &out[r * out_pitch..][..k];
        let want = &expected[r * out_pitch..][..k];
        assert_eq!(
            selected_keys(row, got),
            selected_keys(row, want),
            "{what}, K = {k}, row {r} (L = {}): selected values differ from the oracle's",
            row.len()
        );
        if row.len() <= k {
            assert_eq!(got, want, "{what}, K = {k}, short row {r}");
        }
    }
}
