//! A score matrix resident on the device, generated there or uploaded, and the device verifier
//! of a selection over it: what autotune times its candidates on and checks their outputs with.

use super::device::Gpu;
use super::launch::{LaunchBuffers, Workspace};
use super::plan::Plan;
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;

fn cuda(what: &str) -> impl FnOnce(cudarc::driver::DriverError) -> Error + use<> {
    Error::driver(what)
}

/// A float32 score matrix resident on the device, with its valid lengths and live row count
/// uploaded beside it (the launch inputs of the operator contract).
pub struct DeviceMatrix {
    /// Scores, `rows` rows of `pitch` elements (the last one `width` long).
    pub scores: CudaSlice<f32>,
    /// Valid length of each row.
    pub lengths: CudaSlice<i32>,
    /// The live row count `m` (one element, equal to `rows`).
    pub live_rows: CudaSlice<i32>,
    /// The valid lengths, as uploaded.
    pub host_lengths: Vec<i32>,
    /// Rows of the matrix.
    pub rows: usize,
    /// Allocated row width `N`.
    pub width: usize,
    /// Row pitch in elements, `>= width`.
    pub pitch: usize,
}

impl DeviceMatrix {
    /// Bytes of valid scores: what one read of the input must move.
    pub fn valid_bytes(&self) -> u64 {
        self.host_lengths.iter().map(|&l| l.max(0) as u64 * 4).sum()
    }

    /// Wraps device scores with uploaded lengths and live row count.
    fn with_scores(
        gpu: &Gpu,
        scores: CudaSlice<f32>,
        lengths: &[i32],
        width: usize,
        pitch: usize,
    ) -> Result<DeviceMatrix> {
        let stream = gpu.stream();
        let rows = lengths.len();
        Ok(DeviceMatrix {
            scores,
            lengths: stream
                .clone_htod(lengths)
                .map_err(cuda("uploading lengths"))?,
            live_rows: stream
                .clone_htod(&[rows as i32])
                .map_err(cuda("uploading the row count"))?,
            host_lengths: lengths.to_vec(),
            rows,
            width,
            pitch,
        })
    }

    /// Uploads a host matrix: `data` holds `lengths.len()` rows of `pitch` elements.
    ///
    /// # Errors
    /// [`Error::Cuda`] when an allocation or copy fails.
    pub fn upload(
        gpu: &Gpu,
        data: &[f32],
        lengths: &[i32],
        width: usize,
        pitch: usize,
    ) -> Result<DeviceMatrix> {
        let scores = gpu
            .stream()
            .clone_htod(data)
            .map_err(cuda("uploading scores"))?;
        DeviceMatrix::with_scores(gpu, scores, lengths, width, pitch)
    }

    /// Generates the profile of code `profile_code` ([`crate::data::Profile::code`]) on the
    /// device: bit for bit the matrix `data::generate(profile, seed, k, 0, lengths, width,
    /// pitch)` gives on the host, without crossing the bus.
    ///
    /// # Errors
    /// [`Error::Cuda`] or [`Error::Compile`] when the generator kernel cannot be built or run.
    pub fn generate(
        gpu: &Gpu,
        profile_code: i32,
        seed: u64,
        k: u32,
        lengths: &[i32],
        width: usize,
        pitch: usize,
    ) -> Result<DeviceMatrix> {
        let stream = gpu.stream();
        let rows = lengths.len();
        let source = topk_codegen::generator::generator_source();
        let gen = gpu.load(&source, topk_codegen::generator::GENERATOR_ENTRY, 0)?;
        let len = if rows == 0 {
            1
        } else {
            (rows - 1) * pitch + width
        };
        let scores = stream
            .alloc_zeros::<f32>(len)
            .map_err(cuda("allocating scores"))?;
        let mut m = DeviceMatrix::with_scores(gpu, scores, lengths, width, pitch)?;
        let pitch_i = pitch as i64;
        let rows_i = rows as i32;
        let width_i = width as i32;
        let k_i = k as i32;
        let offset = 0i64;
        let mut b = stream.launch_builder(&gen.func);
        b.arg(&mut m.scores)
            .arg(&pitch_i)
            .arg(&rows_i)
            .arg(&width_i)
            .arg(&m.lengths)
            .arg(&seed)
            .arg(&profile_code)
            .arg(&k_i)
            .arg(&offset);
        let cfg = LaunchConfig {
            grid_dim: (gpu.props().sms * 8, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: arguments follow the generator's fixed signature; buffers cover rows x pitch.
        unsafe { b.launch(cfg) }.map_err(cuda("generating scores"))?;
        Ok(m)
    }

    /// Launches `plan` on this matrix into `out` (`rows x plan.request.out_pitch`), and the
    /// per-row route words into `info` when given (see [`crate::RouteStats::from_row_info`]).
    ///
    /// # Errors
    /// As [`Plan::launch`].
    pub fn launch(
        &self,
        plan: &Plan,
        stream: &Arc<CudaStream>,
        out: &mut CudaSlice<i32>,
        info: Option<&mut CudaSlice<i32>>,
        ws: &mut Workspace,
    ) -> Result<()> {
        let (s, l, r) = (
            self.scores.slice(..),
            self.lengths.slice(..),
            self.live_rows.slice(..),
        );
        let mut o = out.slice_mut(..);
        let mut i = info.map(|i| i.slice_mut(..));
        plan.launch(
            stream,
            LaunchBuffers {
                scores: &s,
                lengths: &l,
                live_rows: &r,
                out: &mut o,
                row_info: i.as_mut(),
            },
            ws,
        )
    }

    /// Checks `out` (`rows x out_pitch` indices selected at rank `k`) against the contract on
    /// the device and returns the rows that break it (eq. 30, or the `-1` padding), as (row,
    /// verifier code) pairs: empty when the output is exact.
    ///
    /// # Errors
    /// [`Error::Cuda`] or [`Error::Compile`] when the verifier kernel cannot be built or run.
    pub fn verify(
        &self,
        gpu: &Gpu,
        out: &CudaSlice<i32>,
        k: u32,
        out_pitch: usize,
    ) -> Result<Vec<(usize, i32)>> {
        let stream = gpu.stream();
        let k_pow2 = k.next_power_of_two().max(32);
        let v = gpu.load(
            topk_codegen::verifier::verifier_source(),
            topk_codegen::verifier::VERIFIER_ENTRY,
            k_pow2 * 4,
        )?;
        let mut flags = stream
            .alloc_zeros::<i32>(self.rows.max(1))
            .map_err(cuda("allocating flags"))?;
        let pitch = self.pitch as i64;
        let rows = self.rows as i32;
        let width = self.width as i32;
        let out_pitch_i = out_pitch as i64;
        let k_i = k as i32;
        let k_pow2_i = k_pow2 as i32;
        let mut b = stream.launch_builder(&v.func);
        b.arg(&self.scores)
            .arg(&pitch)
            .arg(&self.lengths)
            .arg(&rows)
            .arg(&width)
            .arg(out)
            .arg(&out_pitch_i)
            .arg(&k_i)
            .arg(&k_pow2_i)
            .arg(&mut flags);
        let cfg = LaunchConfig {
            grid_dim: (self.rows.max(1) as u32, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: k_pow2 * 4,
        };
        // SAFETY: arguments follow the verifier's signature; buffers cover rows x pitch / out_pitch.
        unsafe { b.launch(cfg) }.map_err(cuda("verifying"))?;
        let flags = stream
            .clone_dtoh(&flags)
            .map_err(cuda("reading verdicts"))?;
        Ok(flags
            .iter()
            .enumerate()
            .take(self.rows)
            .filter(|(_, &f)| f != 0)
            .map(|(r, &f)| (r, f))
            .collect())
    }
}
