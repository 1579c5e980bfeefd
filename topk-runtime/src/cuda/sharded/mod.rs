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
pub(crate) mod stages;

use collective::{Collective, NcclCollective, RankWorkspace, SimulatedCollective};
pub use graph::ShardedGraph;

use super::device::Gpu;
use super::entry_args::CallArgs;
use crate::policy::context_parallel_spec;
use crate::sharding::Sharding;
use crate::{Error, Result};
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaFunction, DevicePtr, DevicePtrMut};
use stages::{chunking, steps, RankPlace, Regions, StageLaunch, Step};
use std::ops::Range;
use topk_codegen::sharded::{generate_sharded, ShardedSource};
use topk_dsl::Spec;

/// What to plan: rank K over batches of up to `m_cap` rows sharded as `sharding`.
#[derive(Clone, Copy, Debug)]
pub struct ShardedRequest {
    /// Indices selected per row.
    pub k: u32,
    /// Rows a call may hold.
    pub m_cap: u32,
    /// How a row's positions are split over the ranks.
    pub sharding: Sharding,
    /// K, proposal and digits to use (map=persistent or staged, stride view, no
    /// `exact_below`); default: `policy::context_parallel_spec`.
    pub spec: Option<Spec>,
}

impl ShardedRequest {
    /// A request with the context-parallel default spec.
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
    /// The rank's shard of the scores.
    pub scores: CUdeviceptr,
    /// Elements between the shard's rows.
    pub pitch: u64,
    /// Global valid length of each row.
    pub lengths: CUdeviceptr,
    /// One i32: the live row count.
    pub live_rows: CUdeviceptr,
    /// Global positions selected, `m_cap x out_pitch`.
    pub out: CUdeviceptr,
    /// Elements between output rows, `>= K`.
    pub out_pitch: u64,
    /// (route, frontier size) per row, or 0.
    pub row_info: CUdeviceptr,
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
    /// The call's stages and all-reduces in order, fixed at planning.
    steps: Vec<Step>,
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
        if !spec.io.is_default() {
            return Err(Error::Input(format!(
                "{spec}: the context-parallel selector takes lengths and writes unordered \
                 indices; select with the call interface on one device (map=staged)"
            )));
        }
        if spec.dtype != topk_dsl::Dtype::F32 {
            return Err(Error::Input(format!(
                "{spec}: the context-parallel selector takes f32 scores; select 16-bit scores \
                 on one device (map=staged)"
            )));
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
        let regions = Regions::new(&spec, m_cap as usize, sharding.ranks);
        let mut stage_fns = Vec::with_capacity(gpus.len());
        let mut ranks = Vec::with_capacity(gpus.len());
        for gpu in gpus {
            stage_fns.push(
                gpu.load(&source.source, &source.entry, source.dynamic_smem)?
                    .func,
            );
            let stream = gpu.stream().clone();
            let words = stream
                .alloc_zeros::<u32>(regions.total)
                .map_err(Error::driver(&format!(
                    "allocating {} bytes of sharded workspace on device {}",
                    regions.total * 4,
                    gpu.ordinal()
                )))?;
            ranks.push(RankWorkspace { stream, words });
        }
        let (chunks, chunk_len) = chunking(sharding.shard_width as u32, m_cap, gpus[0].props().sms);
        let steps = steps(&regions, chunks, m_cap, &spec, source.threads);
        Ok(ShardedSelector {
            spec,
            source,
            sharding,
            m_cap,
            chunks,
            chunk_len,
            steps,
            regions,
            stage_fns,
            ranks,
            collective,
        })
    }

    /// The spec every rank runs.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// How rows are split over the ranks.
    pub fn sharding(&self) -> Sharding {
        self.sharding
    }

    /// The collective between the stages: NCCL, or the one-device simulation.
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
                .map_err(Error::driver("clearing the sharded workspace"))?;
        }
        for i in 0..self.steps.len() {
            match self.steps[i].clone() {
                Step::Stage { stage, digit, grid } => {
                    // SAFETY: the caller vouches for `io`; the workspaces are this selector's.
                    unsafe { self.stage(io, (stage, digit, grid))? }
                }
                Step::Reduce(range) => self.reduce(range)?,
            }
        }
        Ok(())
    }

    fn reduce(&mut self, range: Range<usize>) -> Result<()> {
        self.collective.all_reduce_sum(&mut self.ranks, range)
    }

    /// # Safety
    /// As [`ShardedSelector::launch_raw`].
    unsafe fn stage(&mut self, io: &[RankIo], step: (i32, i32, (u32, u32, u32))) -> Result<()> {
        for (r, (rank, b)) in self.ranks.iter_mut().zip(io).enumerate() {
            let launch = StageLaunch {
                func: &self.stage_fns[r],
                threads: self.source.threads,
                smem: self.source.dynamic_smem,
                m_cap: self.m_cap,
                chunk_len: self.chunk_len,
            };
            let place = RankPlace {
                width: self.sharding.shard_width as u32,
                offset: self.sharding.offset(r) as u32,
                total_width: self.sharding.total_width() as u32,
                rank: r as u32,
                ranks: self.sharding.ranks as u32,
            };
            let (ws, _w) = rank.words.device_ptr_mut(&rank.stream);
            let call = CallArgs::lengths(b.lengths);
            // SAFETY: the caller vouches for `io`; `ws` is rank r's workspace of the layout size.
            unsafe { launch.launch(&rank.stream, step, place, b, &call, ws)? };
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
                .map_err(Error::driver("reading the sharded status"))?;
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
        let cuda = |what: &'static str| Error::driver(what);
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
