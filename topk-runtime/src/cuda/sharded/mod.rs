//! Context-parallel exact Top-K: every row's positions are sharded over ranks
//! ([`Sharding`]), one rank per device over NCCL or several ranks simulated on one device.
//!
//! Each stage of `topk_codegen::sharded` runs on every rank, and an all-reduce (sum) of one
//! workspace region follows it: the view histogram (every rank then derives the same proposal
//! as one device would), the certificate counts (same routes as one device), one digit
//! histogram per radix digit (the same threshold key), the per-rank (above, ties) counts (each
//! rank's output slots) and the output slots themselves (each written by one rank). Live rows
//! and lengths stay on the device and nothing is allocated or read back while launching, so
//! the whole sequence, NCCL calls included, can be captured into CUDA graphs.

mod collective;
mod graph;

pub use collective::{Collective, NcclCollective, RankWorkspace, SimulatedCollective};
pub use graph::ShardedGraph;

use super::device::Gpu;
use super::plan::context_parallel_spec;
use crate::sharding::Sharding;
use crate::{Error, Result};
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaFunction, DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use std::ops::Range;
use topk_codegen::sharded::{generate_sharded, ShardedSource};
use topk_dsl::Spec;

const STAGE_SAMPLE: i32 = 0;
const STAGE_PROPOSAL: i32 = 1;
const STAGE_CERTIFY: i32 = 2;
const STAGE_ROUTE: i32 = 3;
const STAGE_DIGIT: i32 = 4;
const STAGE_BOUNDARY: i32 = 5;
const STAGE_COUNT: i32 = 6;
const STAGE_EMIT: i32 = 7;
const STAGE_COPY: i32 = 8;
/// Words of per-row state and cursors (keep in sync with sharded.cu).
const STATE_WORDS: usize = 8;
const CURSOR_WORDS: usize = 4;
const STATUS_WORDS: usize = 4;
/// Scores per position chunk (one CTA's share of a pass), and the smallest chunk.
const CHUNK_SCORES: u32 = 1 << 20;
const MIN_CHUNK_SCORES: u32 = 4096;
/// Largest chunk (see `sharding::MAX_SHARDED_POSITIONS`: chunk + position stays below 2^31).
const MAX_CHUNK_SCORES: u32 = 1 << 20;
/// Largest grid y extent; larger batches loop over rows inside the kernel.
const MAX_GRID_ROWS: u32 = 65_535;

/// What to plan: rank K over batches of up to `m_cap` rows sharded as `sharding`.
#[derive(Clone, Copy, Debug)]
pub struct ShardedRequest {
    pub k: u32,
    pub m_cap: u32,
    pub sharding: Sharding,
    /// K, proposal and digits to use (map=persistent); default: the persistent default map.
    pub spec: Option<Spec>,
}

impl ShardedRequest {
    pub fn new(k: u32, m_cap: u32, sharding: Sharding) -> ShardedRequest {
        ShardedRequest {
            k,
            m_cap,
            sharding,
            spec: None,
        }
    }

    fn spec(&self) -> Spec {
        self.spec.unwrap_or_else(|| context_parallel_spec(self.k))
    }
}

/// Device pointers of one rank's call. `scores`: `m_cap` rows of the rank's shard (`pitch >=
/// shard_width` floats apart); `lengths`: `m_cap` GLOBAL valid lengths; `live_rows`: one int;
/// `out`: `m_cap` rows of K global positions (`out_pitch` apart), rows `>= live` untouched;
/// `row_info`: 0, or `2 * m_cap` ints (route, frontier size) per row.
#[derive(Clone, Copy, Debug)]
pub struct RankIo {
    pub scores: CUdeviceptr,
    pub pitch: u64,
    pub lengths: CUdeviceptr,
    pub live_rows: CUdeviceptr,
    pub out: CUdeviceptr,
    pub out_pitch: u64,
    pub row_info: CUdeviceptr,
}

/// Word ranges of a rank's workspace (the layout comment of sharded.cu).
#[derive(Clone, Debug)]
struct Regions {
    sample: Range<usize>,
    counts: Range<usize>,
    digits: Vec<Range<usize>>,
    ranks: Range<usize>,
    staged: Range<usize>,
    status: Range<usize>,
    total: usize,
}

impl Regions {
    fn new(spec: &Spec, src: &ShardedSource, m_cap: usize, ranks: usize) -> Regions {
        let mut at = 0usize;
        let mut take = |n: usize| {
            let r = at..at + n;
            at += n;
            r
        };
        let sample = take(m_cap * spec.coarse_bins() as usize);
        let counts = take(m_cap * 2);
        let digits = (0..spec.digits.as_slice().len())
            .map(|_| take(m_cap * src.hist_bins as usize))
            .collect();
        let ranks = take(m_cap * ranks * 2);
        let staged = take(m_cap * spec.k as usize);
        let _state = take(m_cap * STATE_WORDS);
        let _cursors = take(m_cap * CURSOR_WORDS);
        let status = take(STATUS_WORDS);
        let _cands = take(m_cap * 2 * src.cands as usize);
        Regions {
            sample,
            counts,
            digits,
            ranks,
            staged,
            status,
            total: at,
        }
    }

    /// Everything but the candidate buffers is zeroed before each call.
    fn zeroed(&self) -> Range<usize> {
        0..self.status.end
    }
}

/// A planned context-parallel selector: the generated stages loaded on every rank's device,
/// a workspace per rank and the collective between them.
pub struct ShardedSelector {
    spec: Spec,
    source: ShardedSource,
    sharding: Sharding,
    m_cap: u32,
    chunks: u32,
    chunk_len: u32,
    regions: Regions,
    stage_fns: Vec<CudaFunction>,
    ranks: Vec<RankWorkspace>,
    collective: Box<dyn Collective>,
}

impl ShardedSelector {
    /// All ranks of `request.sharding` simulated on `gpu`, on its stream.
    pub fn simulated(gpu: &Gpu, request: ShardedRequest) -> Result<ShardedSelector> {
        let src = Self::generate(&request)?;
        let sum = gpu.load(&src.source, &src.sum_entry, 0)?.func;
        let gpus = vec![gpu.clone(); request.sharding.ranks];
        Self::build(&gpus, request, src, Box::new(SimulatedCollective { sum }))
    }

    /// One rank per device of `gpus` (rank i on `gpus[i]`), all-reduced over NCCL.
    pub fn nccl(gpus: &[Gpu], request: ShardedRequest) -> Result<ShardedSelector> {
        if gpus.len() != request.sharding.ranks {
            return Err(Error::Input(format!(
                "{} devices for {} shards: NCCL runs one rank per device",
                gpus.len(),
                request.sharding.ranks
            )));
        }
        let src = Self::generate(&request)?;
        let streams: Vec<_> = gpus.iter().map(|g| g.stream().clone()).collect();
        let collective = NcclCollective::new(&streams)?;
        Self::build(gpus, request, src, Box::new(collective))
    }

    fn generate(request: &ShardedRequest) -> Result<ShardedSource> {
        // The fields are public: a literal may skip Sharding::new's checks.
        Sharding::new(request.sharding.ranks, request.sharding.shard_width)?;
        let spec = request.spec();
        if spec.k != request.k {
            return Err(Error::Input(format!(
                "the spec's K ({}) differs from the request's K ({})",
                spec.k, request.k
            )));
        }
        if request.m_cap == 0 {
            return Err(Error::Input("M_cap must be at least 1 row".into()));
        }
        Ok(generate_sharded(&spec)?)
    }

    fn build(
        gpus: &[Gpu],
        request: ShardedRequest,
        source: ShardedSource,
        collective: Box<dyn Collective>,
    ) -> Result<ShardedSelector> {
        let spec = source.spec;
        let sharding = request.sharding;
        let m_cap = request.m_cap;
        let regions = Regions::new(&spec, &source, m_cap as usize, sharding.ranks);
        let mut stage_fns = Vec::with_capacity(gpus.len());
        let mut ranks = Vec::with_capacity(gpus.len());
        for gpu in gpus {
            stage_fns.push(
                gpu.load(&source.source, &source.entry, source.dynamic_smem)?
                    .func,
            );
            let stream = gpu.stream().clone();
            let words = stream.alloc_zeros::<u32>(regions.total).map_err(|e| {
                Error::Cuda(format!(
                    "allocating {} bytes of sharded workspace on device {}: {e}",
                    regions.total * 4,
                    gpu.ordinal()
                ))
            })?;
            ranks.push(RankWorkspace { stream, words });
        }
        // Position chunks of about 1M scores (4 MB; 64K and 256K measured slower at 128 x 4M
        // and 512 x 1M, bench/RESULTS.md), and enough of them that a small batch still gives
        // every SM four CTAs; never chunks under 4K scores.
        let sms = gpus[0].props().sms;
        let width = sharding.shard_width as u32;
        let chunk_scores = std::env::var("TOPK_SHARDED_CHUNK")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .map(|c| c.clamp(MIN_CHUNK_SCORES, MAX_CHUNK_SCORES))
            .unwrap_or(CHUNK_SCORES);
        let chunks = width
            .div_ceil(chunk_scores)
            .max((4 * sms).div_ceil(m_cap))
            .clamp(1, width.div_ceil(MIN_CHUNK_SCORES).max(1));
        let chunk_len = width
            .div_ceil(chunks)
            .next_multiple_of(4)
            .min(MAX_CHUNK_SCORES);
        Ok(ShardedSelector {
            spec,
            source,
            sharding,
            m_cap,
            chunks,
            chunk_len,
            regions,
            stage_fns,
            ranks,
            collective,
        })
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    pub fn sharding(&self) -> Sharding {
        self.sharding
    }

    pub fn collective_name(&self) -> &'static str {
        self.collective.name()
    }

    /// Workspace bytes per rank (grows with M_cap and K, never with the row width).
    pub fn workspace_bytes(&self) -> u64 {
        self.regions.total as u64 * 4
    }

    /// Position chunks per row and positions per chunk of the position stages.
    pub fn grid_chunks(&self) -> (u32, u32) {
        (self.chunks, self.chunk_len)
    }

    /// Enqueues one call on every rank's stream (and the collectives between the stages).
    /// Graph-capturable: no allocation, no synchronization.
    ///
    /// # Safety
    /// `io[r]` must hold valid pointers on rank r's device with the extents [`RankIo`] states,
    /// not written by other work while the call runs.
    pub unsafe fn launch_raw(&mut self, io: &[RankIo]) -> Result<()> {
        if io.len() != self.ranks.len() {
            return Err(Error::Input(format!(
                "{} rank buffers for {} ranks",
                io.len(),
                self.ranks.len()
            )));
        }
        for (r, b) in io.iter().enumerate() {
            if b.pitch < self.sharding.shard_width as u64 || b.out_pitch < self.spec.k as u64 {
                return Err(Error::Input(format!(
                    "rank {r}: pitch {} must be >= the shard width {} and out_pitch {} >= K = {}",
                    b.pitch, self.sharding.shard_width, b.out_pitch, self.spec.k
                )));
            }
        }
        for rank in &mut self.ranks {
            let mut zero = rank.words.slice_mut(self.regions.zeroed());
            rank.stream
                .memset_zeros(&mut zero)
                .map_err(|e| Error::Cuda(format!("clearing the sharded workspace: {e}")))?;
        }
        let rows = self.m_cap.min(MAX_GRID_ROWS);
        let over_positions = (self.chunks, rows, 1);
        let per_row = (1, rows, 1);
        let copy_ctas = (self.spec.k).div_ceil(self.source.threads).min(8);
        self.stage(io, STAGE_SAMPLE, 0, over_positions)?;
        self.reduce(self.regions.sample.clone())?;
        self.stage(io, STAGE_PROPOSAL, 0, per_row)?;
        self.stage(io, STAGE_CERTIFY, 0, over_positions)?;
        self.reduce(self.regions.counts.clone())?;
        self.stage(io, STAGE_ROUTE, 0, per_row)?;
        for j in 0..self.regions.digits.len() {
            self.stage(io, STAGE_DIGIT, j as i32, over_positions)?;
            self.reduce(self.regions.digits[j].clone())?;
            self.stage(io, STAGE_BOUNDARY, j as i32, per_row)?;
        }
        self.stage(io, STAGE_COUNT, 0, over_positions)?;
        self.reduce(self.regions.ranks.clone())?;
        self.stage(io, STAGE_EMIT, 0, over_positions)?;
        self.reduce(self.regions.staged.clone())?;
        self.stage(io, STAGE_COPY, 0, (copy_ctas, rows, 1))
    }

    fn reduce(&mut self, range: Range<usize>) -> Result<()> {
        self.collective.all_reduce_sum(&mut self.ranks, range)
    }

    fn stage(
        &mut self,
        io: &[RankIo],
        stage: i32,
        digit: i32,
        grid: (u32, u32, u32),
    ) -> Result<()> {
        let cfg = LaunchConfig {
            grid_dim: grid,
            block_dim: (self.source.threads, 1, 1),
            shared_mem_bytes: self.source.dynamic_smem,
        };
        let ranks = self.sharding.ranks as i32;
        let m_cap = self.m_cap as i32;
        let shard_width = self.sharding.shard_width as i32;
        let total_width = self.sharding.total_width() as i32;
        let chunk_len = self.chunk_len as i32;
        for (r, (rank, b)) in self.ranks.iter_mut().zip(io).enumerate() {
            let offset = self.sharding.offset(r) as i32;
            let rank_id = r as i32;
            let pitch = b.pitch as i64;
            let out_pitch = b.out_pitch as i64;
            let (ws, _w) = rank.words.device_ptr_mut(&rank.stream);
            let mut l = rank.stream.launch_builder(&self.stage_fns[r]);
            l.arg(&stage)
                .arg(&digit)
                .arg(&b.scores)
                .arg(&pitch)
                .arg(&b.lengths)
                .arg(&b.live_rows)
                .arg(&m_cap)
                .arg(&shard_width)
                .arg(&offset)
                .arg(&total_width)
                .arg(&rank_id)
                .arg(&ranks)
                .arg(&chunk_len)
                .arg(&ws)
                .arg(&b.out)
                .arg(&out_pitch)
                .arg(&b.row_info);
            // SAFETY: the argument list matches the generated stage entry's signature.
            unsafe { l.launch(cfg) }.map_err(|e| {
                Error::Cuda(format!("launching sharded stage {stage} on rank {r}: {e}"))
            })?;
        }
        Ok(())
    }

    /// Status bits (NaN, bad length, bad row count) raised by the last call on any rank;
    /// synchronizes every rank's stream.
    pub fn status(&self) -> Result<u32> {
        let mut bits = 0u32;
        for rank in &self.ranks {
            let words = rank
                .stream
                .clone_dtoh(&rank.words.slice(self.regions.status.clone()))
                .map_err(|e| Error::Cuda(format!("reading the sharded status: {e}")))?;
            bits |= words[0];
        }
        Ok(bits)
    }

    /// Uploads host shards, runs one call, checks the status and that every rank ended with
    /// the same output, and returns the output (`rows x K`) and the (route, frontier) pairs.
    pub fn select_host(
        &mut self,
        shards: &[Vec<f32>],
        lengths: &[i32],
    ) -> Result<(Vec<i32>, Vec<i32>)> {
        let rows = lengths.len();
        let k = self.spec.k as usize;
        if rows == 0 || rows > self.m_cap as usize {
            return Err(Error::Input(format!(
                "{rows} rows for a selector planned for 1..={} rows",
                self.m_cap
            )));
        }
        if shards.len() != self.ranks.len() {
            return Err(Error::Input(format!(
                "{} shards for {} ranks",
                shards.len(),
                self.ranks.len()
            )));
        }
        self.sharding.check_lengths(lengths)?;
        let sw = self.sharding.shard_width;
        let cuda = |what: &'static str| {
            move |e: cudarc::driver::DriverError| Error::Cuda(format!("{what}: {e}"))
        };
        let mut bufs = Vec::new();
        for (r, (rank, shard)) in self.ranks.iter().zip(shards).enumerate() {
            if shard.len() != rows * sw {
                return Err(Error::Input(format!(
                    "shard {r} holds {} scores, expected {rows} x {sw}",
                    shard.len()
                )));
            }
            let s = &rank.stream;
            let scores = s.clone_htod(shard).map_err(cuda("uploading a shard"))?;
            let lens = s.clone_htod(lengths).map_err(cuda("uploading lengths"))?;
            let live = s
                .clone_htod(&[rows as i32])
                .map_err(cuda("uploading the row count"))?;
            let out = s
                .alloc_zeros::<i32>(rows * k)
                .map_err(cuda("allocating the output"))?;
            let info = s
                .alloc_zeros::<i32>(2 * rows)
                .map_err(cuda("allocating row info"))?;
            bufs.push((scores, lens, live, out, info));
        }
        let io: Vec<RankIo> = self
            .ranks
            .iter()
            .zip(bufs.iter_mut())
            .map(|(rank, (scores, lens, live, out, info))| RankIo {
                scores: scores.device_ptr(&rank.stream).0,
                pitch: sw as u64,
                lengths: lens.device_ptr(&rank.stream).0,
                live_rows: live.device_ptr(&rank.stream).0,
                out: out.device_ptr_mut(&rank.stream).0,
                out_pitch: k as u64,
                row_info: info.device_ptr_mut(&rank.stream).0,
            })
            .collect();
        // SAFETY: every buffer above is live, on its rank's device, with the stated extents.
        unsafe { self.launch_raw(&io)? };
        let bits = self.status()?;
        if bits != 0 {
            return Err(Error::Input(format!(
                "the device reported invalid input (status {bits:#x}: 1 = NaN score, 2 = length \
                 outside [0, {}], 4 = live rows outside [0, M_cap]); clean the scores or fix the lengths",
                self.sharding.total_width()
            )));
        }
        let mut first: Option<(Vec<i32>, Vec<i32>)> = None;
        for (r, (rank, (_, _, _, out, info))) in self.ranks.iter().zip(&bufs).enumerate() {
            let o = rank
                .stream
                .clone_dtoh(out)
                .map_err(cuda("reading the output"))?;
            let i = rank
                .stream
                .clone_dtoh(info)
                .map_err(cuda("reading row info"))?;
            match &first {
                None => first = Some((o, i)),
                Some((o0, i0)) => {
                    if &o != o0 || &i != i0 {
                        return Err(Error::Cuda(format!(
                            "rank {r} ended with an output different from rank 0's"
                        )));
                    }
                }
            }
        }
        first.ok_or_else(|| Error::Input("no ranks".into()))
    }
}
