//! Autotune sweeps on the GPU: every candidate timed on one generated matrix, verified.

use super::bench::{bench_matrix, DeviceMatrix};
use super::device::Gpu;
use super::timing::TimingProtocol;
use crate::autotune::{candidates, sweep, DeviceKey, Record, ShapeBucket};
use crate::Result;
use topk_dsl::Spec;

/// The key autotune records are stored under for this device.
pub fn device_key(gpu: &Gpu) -> DeviceKey {
    let p = gpu.props();
    DeviceKey {
        name: p.name.clone(),
        cc_major: p.cc_major,
        cc_minor: p.cc_minor,
        driver_version: p.driver_version,
    }
}

/// Sweeps the candidate set of (`k`, `rows`, `width`) on a terminal causal window of
/// `profile_code` scores generated on the device; every candidate's timed output is verified
/// on the device, and a candidate that fails to plan, run or verify scores no time.
pub fn tune_shape(
    gpu: &Gpu,
    k: u32,
    rows: u32,
    width: u32,
    profile_code: i32,
    protocol: TimingProtocol,
    progress: impl FnMut(usize, usize, &Spec),
) -> Result<Record> {
    let lengths = crate::data::shapes::causal_window(rows as usize, width as usize);
    let m = DeviceMatrix::generate(
        gpu,
        profile_code,
        1,
        k,
        &lengths,
        width as usize,
        width as usize,
    )?;
    let set = candidates(k, width);
    Ok(sweep(
        device_key(gpu),
        ShapeBucket::of(k, rows, width),
        (rows, width),
        &set,
        |spec| {
            let r = bench_matrix(gpu, &m, k, Some(*spec), protocol)?;
            Ok((r.timing.median_ms, r.exact))
        },
        progress,
    ))
}
