//! Device-side benchmark harness: matrices generated on the GPU with the shared counter-based
//! formula, the selector timed as graph replays, and the timed output verified on the GPU.

use super::device::Gpu;
use super::launch::{status, LaunchBuffers, Workspace};
use super::plan::{Plan, PlanRequest};
use super::selector::route_stats;
use super::timing::{time_graph, GraphTiming, TimingProtocol};
use crate::routes::RouteStats;
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;
use topk_dsl::Spec;

/// Read bandwidth measured on the H200 with a float4 streaming read: the floor divisor.
pub const FLOOR_READ_BYTES_PER_S: f64 = 4.49e12;

fn cuda(what: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| Error::Cuda(format!("{what}: {e}"))
}

/// A score matrix resident on the device.
pub struct DeviceMatrix {
    pub scores: CudaSlice<f32>,
    pub lengths: CudaSlice<i32>,
    pub live_rows: CudaSlice<i32>,
    pub host_lengths: Vec<i32>,
    pub rows: usize,
    pub width: usize,
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

    /// Uploads a host matrix.
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

    /// Generates `profile` on the device with the same formula as the CPU generator.
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

    /// Launches `plan` on this matrix into `out` (and per-row route info into `info`).
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

    /// Rows whose output breaks eq. 30 or the sentinel contract, as (row, code) pairs.
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

/// One benchmarked shape.
#[derive(Clone, Debug)]
pub struct BenchReport {
    pub spec: Spec,
    pub entry: String,
    pub rows: usize,
    pub width: usize,
    pub k: u32,
    pub timing: GraphTiming,
    pub floor_ms: f64,
    pub valid_bytes: u64,
    pub exact: bool,
    pub bad_rows: Vec<(usize, i32)>,
    pub routes: RouteStats,
    pub workspace_bytes: u64,
    pub grid: u32,
    pub ctas_per_sm: u32,
    pub compile_ms: f64,
    /// Per-row phase times of a phase-probe build ([`bench_matrix_with`]), else `None`; such a
    /// build's candidate counts in `routes` are meaningless.
    pub phases: Option<PhaseSummary>,
    /// A phase-probe build's rows laid out in time (rows longer than K), else empty.
    pub timeline: Vec<RowTimeline>,
}

/// One row of a phase-probe launch: who ran it, when it started (microseconds after the
/// launch's first row started) and how long its phases took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowTimeline {
    pub row: usize,
    pub worker: u32,
    pub route: crate::Route,
    pub start_us: f64,
    pub proposal_us: f64,
    pub pass_us: f64,
    pub refine_us: f64,
}

impl RowTimeline {
    /// From the (route word, phase word) pairs of a probed launch ([`topk_codegen::probe`]).
    pub fn from_info(info: &[i32]) -> Vec<RowTimeline> {
        use topk_codegen::probe::{start_offsets_us, PhaseTimes, RowStamp};
        let rows: Vec<(usize, RowStamp, PhaseTimes)> = info
            .chunks_exact(2)
            .enumerate()
            .map(|(row, pair)| (row, RowStamp::decode(pair[0]), PhaseTimes::decode(pair[1])))
            .filter(|(_, stamp, _)| stamp.route != crate::Route::Short as u8)
            .collect();
        let stamps: Vec<RowStamp> = rows.iter().map(|r| r.1).collect();
        rows.iter()
            .zip(start_offsets_us(&stamps))
            .map(|(&(row, stamp, t), start_us)| RowTimeline {
                row,
                worker: stamp.worker,
                route: crate::Route::from_code(stamp.route).unwrap_or(crate::Route::Short),
                start_us,
                proposal_us: t.proposal_us,
                pass_us: t.pass_us,
                refine_us: t.refine_us,
            })
            .collect()
    }
}

/// A probed launch's route words with the worker and start stamps cleared, as an ordinary
/// build writes them.
fn plain_route_words(info: &[i32]) -> Vec<i32> {
    info.chunks_exact(2)
        .flat_map(|pair| {
            let route = topk_codegen::probe::RowStamp::decode(pair[0]).route;
            [i32::from(route), pair[1]]
        })
        .collect()
}

/// Distribution of one phase over the rows that ran it: mean, p50, p90, max, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut v: Vec<f64>) -> Spread {
        if v.is_empty() {
            return Spread::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Spread {
            mean: v.iter().sum::<f64>() / n as f64,
            p50: v[n / 2],
            p90: v[(n * 9 / 10).min(n - 1)],
            max: v[n - 1],
        }
    }
}

/// Where the rows' time went in a phase-probe build (rows longer than K only).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseSummary {
    pub rows: usize,
    pub proposal: Spread,
    pub pass: Spread,
    pub refine: Spread,
}

impl PhaseSummary {
    /// From the (route word, phase word) pairs of a probed launch.
    pub fn from_info(info: &[i32]) -> PhaseSummary {
        PhaseSummary::of(&RowTimeline::from_info(info))
    }

    /// The spread of each phase over a probed launch's rows.
    pub fn of(timeline: &[RowTimeline]) -> PhaseSummary {
        let spread =
            |phase: fn(&RowTimeline) -> f64| Spread::of(timeline.iter().map(phase).collect());
        PhaseSummary {
            rows: timeline.len(),
            proposal: spread(|t| t.proposal_us),
            pass: spread(|t| t.pass_us),
            refine: spread(|t| t.refine_us),
        }
    }
}

/// Plans, captures and times the selector on `m`, then verifies the timed output.
pub fn bench_matrix(
    gpu: &Gpu,
    m: &DeviceMatrix,
    k: u32,
    spec: Option<Spec>,
    protocol: TimingProtocol,
) -> Result<BenchReport> {
    bench_matrix_with(gpu, m, k, spec, protocol, false)
}

/// [`bench_matrix`]; with `phase_probe`, on the phase-timing build of the persistent kernel
/// ([`topk_codegen::probe`]): the report's `phases` say where the rows' time went, and its
/// times and candidate counts are those of the instrumented build, not the selector's.
pub fn bench_matrix_with(
    gpu: &Gpu,
    m: &DeviceMatrix,
    k: u32,
    spec: Option<Spec>,
    protocol: TimingProtocol,
    phase_probe: bool,
) -> Result<BenchReport> {
    let stream = gpu.stream().clone();
    let mut request = PlanRequest::new(k, m.rows as u32, m.width as u32);
    request.pitch = m.pitch as u64;
    request.spec = spec;
    request.phase_probe = phase_probe;
    let plan = Plan::new(gpu, request)?;
    if request.phase_probe && plan.grid > 1024 {
        // The probe's route word holds a worker index of ten bits.
        return Err(Error::Input(format!(
            "the phase probe names at most 1024 workers; this plan launches {}",
            plan.grid
        )));
    }
    let mut ws = Workspace::new(&plan, &stream)?;
    let out_len = m.rows.max(1) * k as usize;
    let mut out = stream
        .alloc_zeros::<i32>(out_len)
        .map_err(cuda("allocating the output"))?;
    let mut info = stream
        .alloc_zeros::<i32>(2 * m.rows.max(1))
        .map_err(cuda("allocating row info"))?;
    // One plain call for the route statistics and the status word.
    m.launch(&plan, &stream, &mut out, Some(&mut info), &mut ws)?;
    stream.synchronize().map_err(cuda("running the selector"))?;
    let bits = ws.status(&stream)?;
    if bits & (status::NAN | status::BAD_LENGTH | status::BAD_ROWS) != 0 {
        return Err(Error::Input(format!(
            "the device reported invalid input (status {bits:#x})"
        )));
    }
    let host_info = stream.clone_dtoh(&info).map_err(cuda("reading row info"))?;
    let (routes, phases, timeline) = if request.phase_probe {
        let timeline = RowTimeline::from_info(&host_info);
        (
            route_stats(&plain_route_words(&host_info), false),
            Some(PhaseSummary::of(&timeline)),
            timeline,
        )
    } else {
        (route_stats(&host_info, false), None, Vec::new())
    };
    // Poison the output so the verifier sees only what the timed replays wrote.
    stream
        .memset_zeros(&mut out)
        .map_err(cuda("clearing the output"))?;
    let timing = time_graph(&stream, protocol, || {
        m.launch(&plan, &stream, &mut out, None, &mut ws)
    })?;
    let bad_rows = m.verify(gpu, &out, k, k as usize)?;
    let valid_bytes = m.valid_bytes();
    Ok(BenchReport {
        spec: plan.spec,
        entry: plan.kernel.entry.clone(),
        rows: m.rows,
        width: m.width,
        k,
        timing,
        floor_ms: valid_bytes as f64 / FLOOR_READ_BYTES_PER_S * 1e3,
        valid_bytes,
        exact: bad_rows.is_empty(),
        bad_rows,
        routes,
        workspace_bytes: plan.workspace_bytes,
        grid: plan.grid,
        ctas_per_sm: plan.ctas_per_sm,
        compile_ms: plan.loaded.compile_ms,
        phases,
        timeline,
    })
}

#[cfg(test)]
mod tests {
    use super::PhaseSummary;
    use topk_codegen::probe::{PASS_UNIT_NS, PHASE_UNIT_NS};

    #[test]
    fn phase_summary_skips_short_rows_and_spreads_the_rest() {
        let word = |a: u32, b: u32, d: u32| (a | (d << 10) | (b << 20)) as i32;
        // (route, word): one short row (ignored), three primary rows.
        let info = [
            0,
            0,
            1,
            word(10, 100, 20),
            1,
            word(30, 300, 40),
            2,
            word(20, 200, 60),
        ];
        let s = PhaseSummary::from_info(&info);
        assert_eq!(s.rows, 3);
        let unit = PHASE_UNIT_NS as f64 / 1e3;
        assert!((s.proposal.mean - 20.0 * unit).abs() < 1e-9);
        assert_eq!(s.proposal.p50, 20.0 * unit);
        assert_eq!(s.proposal.max, 30.0 * unit);
        assert_eq!(s.refine.max, 60.0 * unit);
        assert_eq!(s.pass.p50, 200.0 * PASS_UNIT_NS as f64 / 1e3);
    }
}
