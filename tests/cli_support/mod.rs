//! Shared helpers for the CLI tests: run the binary, build array files by hand.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod run;
pub use run::Run;

pub fn topk(args: &[&str]) -> Run {
    topk_env(args, &[])
}

pub fn topk_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_topk"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("the topk binary runs");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// A `.npy` file with a hand-written header dict and raw data bytes.
pub fn raw_npy(path: &Path, dict: &str, data: &[u8]) {
    let mut text = dict.to_string();
    // Pad so that magic, version, length, text and newline end on a 64-byte boundary.
    let unpadded = 10 + text.len() + 1;
    text.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    text.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(text.len() as u16).to_le_bytes());
    bytes.extend_from_slice(text.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(path, bytes).unwrap();
}

pub fn f32_bytes(xs: &[f32]) -> Vec<u8> {
    xs.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A small deterministic score matrix with ties, infinities, signed zeros and subnormals.
pub fn tricky_scores(rows: usize, width: usize) -> Vec<f32> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..rows * width)
        .map(|i| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (state >> 40) as f32 / (1u64 << 24) as f32;
            match i % 97 {
                0 => f32::INFINITY,
                1 => f32::NEG_INFINITY,
                2 => -0.0,
                3 => 0.0,
                4 => f32::from_bits(1),
                5 => 0.5, // a value that repeats across the row: ties
                _ => u * 2.0 - 1.0,
            }
        })
        .collect()
}

/// Write scores and lengths with the library writer; returns their paths.
pub fn write_problem(dir: &Path, rows: usize, width: usize, lengths: &[i32]) -> (PathBuf, PathBuf) {
    let scores = dir.join("scores.npy");
    let lens = dir.join("lengths.npy");
    topk::io::npy::write(&scores, &[rows, width], &tricky_scores(rows, width)).unwrap();
    topk::io::npy::write(&lens, &[lengths.len()], lengths).unwrap();
    (scores, lens)
}

/// Every file in `dir`, for checking that nothing (not even a temporary) was left behind.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
