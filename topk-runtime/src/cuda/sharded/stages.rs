//! The stage chain of `sharded.cu`, shared by the context-parallel selector (G ranks, an
//! all-reduce between stages) and by single-device plans of `map=staged` (one rank, nothing to
//! reduce): workspace regions, position chunks, the order of stages and reductions, and one
//! stage launch.

use super::RankIo;
use crate::cuda::entry_args::{CallArgs, StageArgs, StageHead, StageTail};
use crate::{Error, Result};
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};
use std::ops::Range;
use std::sync::Arc;
use topk_codegen::interface::staged::{
    BOUNDARY as STAGE_BOUNDARY, CERTIFY as STAGE_CERTIFY, COPY as STAGE_COPY, COUNT as STAGE_COUNT,
    CURSOR_WORDS, DIGIT as STAGE_DIGIT, EMIT as STAGE_EMIT, PROPOSAL as STAGE_PROPOSAL,
    ROUTE as STAGE_ROUTE, SAMPLE as STAGE_SAMPLE, STATE_WORDS, STATUS_WORDS,
};
use topk_dsl::Spec;
/// Scores per position chunk (one CTA's share of a pass), and the smallest chunk.
const CHUNK_SCORES: u32 = 1 << 20;
const MIN_CHUNK_SCORES: u32 = 4096;
/// Largest chunk (see `sharding::MAX_SHARDED_POSITIONS`: chunk + position stays below 2^31).
const MAX_CHUNK_SCORES: u32 = 1 << 20;
/// Largest grid y extent; larger batches loop over rows inside the kernel.
const MAX_GRID_ROWS: u32 = 65_535;

/// Word ranges of a rank's workspace (the layout comment of sharded.cu).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Regions {
    pub sample: Range<usize>,
    pub counts: Range<usize>,
    pub digits: Vec<Range<usize>>,
    pub ranks: Range<usize>,
    pub staged: Range<usize>,
    pub status: Range<usize>,
    pub total: usize,
}

impl Regions {
    pub fn new(spec: &Spec, m_cap: usize, ranks: usize) -> Regions {
        let hist_bins = spec.hist_bins() as usize;
        let cands = topk_codegen::sharded::candidate_capacity(spec.k) as usize;
        let mut at = 0usize;
        let mut take = |n: usize| {
            let r = at..at + n;
            at += n;
            r
        };
        let sample = take(m_cap * spec.coarse_bins() as usize);
        let counts = take(m_cap * 2);
        let digits = (0..topk_codegen::sharded::digit_regions(spec))
            .map(|_| take(m_cap * hist_bins))
            .collect();
        let ranks = take(m_cap * ranks * 2);
        let staged = take(m_cap * spec.k as usize);
        let _state = take(m_cap * STATE_WORDS);
        let _cursors = take(m_cap * CURSOR_WORDS);
        let status = take(STATUS_WORDS);
        let _cands = take(m_cap * 2 * cands);
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
    pub fn zeroed(&self) -> Range<usize> {
        0..self.status.end
    }
}

/// Position chunks per row and scores per chunk for a rank's `width` positions: chunks of about
/// 1M scores (4 MB; 64K and 256K measured slower at 128 x 4M and 512 x 1M, bench/RESULTS.md),
/// and enough of them that a small batch still gives every SM four CTAs, but never more chunks
/// than 4K-score pieces of the row. `TOPK_SHARDED_CHUNK` overrides the chunk size (for
/// measurements).
pub(crate) fn chunking(width: u32, m_cap: u32, sms: u32) -> (u32, u32) {
    let chunk_scores = std::env::var("TOPK_SHARDED_CHUNK")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map(|c| c.clamp(MIN_CHUNK_SCORES, MAX_CHUNK_SCORES))
        .unwrap_or(CHUNK_SCORES);
    let chunks = width
        .div_ceil(chunk_scores)
        .max((4 * sms).div_ceil(m_cap.max(1)))
        .clamp(1, width.div_ceil(MIN_CHUNK_SCORES).max(1));
    let chunk_len = width
        .div_ceil(chunks)
        .next_multiple_of(4)
        .min(MAX_CHUNK_SCORES);
    (chunks, chunk_len)
}

/// One step of a call: a stage over a grid, or an all-reduce (sum) of a workspace range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Stage {
        stage: i32,
        digit: i32,
        grid: (u32, u32, u32),
    },
    Reduce(Range<usize>),
}

/// The stages of one call of `spec` in order, with the reductions between them.
pub(crate) fn steps(
    regions: &Regions,
    chunks: u32,
    m_cap: u32,
    spec: &Spec,
    threads: u32,
) -> Vec<Step> {
    let rows = m_cap.min(MAX_GRID_ROWS);
    let over_positions = (chunks, rows, 1);
    let per_row = (1, rows, 1);
    // With order=sorted one CTA sorts each row as it copies it.
    let copy_ctas = match spec.io.order {
        topk_dsl::Order::Sorted => 1,
        topk_dsl::Order::Any => spec.k.div_ceil(threads).min(8),
    };
    let stage = |stage, digit, grid| Step::Stage { stage, digit, grid };
    let mut out = vec![
        stage(STAGE_SAMPLE, 0, over_positions),
        Step::Reduce(regions.sample.clone()),
        stage(STAGE_PROPOSAL, 0, per_row),
        stage(STAGE_CERTIFY, 0, over_positions),
        Step::Reduce(regions.counts.clone()),
        stage(STAGE_ROUTE, 0, per_row),
    ];
    for (j, digit) in regions.digits.iter().enumerate() {
        out.push(stage(STAGE_DIGIT, j as i32, over_positions));
        out.push(Step::Reduce(digit.clone()));
        out.push(stage(STAGE_BOUNDARY, j as i32, per_row));
    }
    out.extend([
        stage(STAGE_COUNT, 0, over_positions),
        Step::Reduce(regions.ranks.clone()),
        stage(STAGE_EMIT, 0, over_positions),
        Step::Reduce(regions.staged.clone()),
        stage(STAGE_COPY, 0, (copy_ctas, rows, 1)),
    ]);
    out
}

/// Where a rank's positions lie in the rows: `width` positions from `offset` of rows
/// `total_width` wide, rank `rank` of `ranks`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RankPlace {
    pub width: u32,
    pub offset: u32,
    pub total_width: u32,
    pub rank: u32,
    pub ranks: u32,
}

/// Launch facts of the stage entry that do not change between calls.
pub(crate) struct StageLaunch<'a> {
    pub func: &'a CudaFunction,
    pub threads: u32,
    pub smem: u32,
    pub m_cap: u32,
    pub chunk_len: u32,
}

impl StageLaunch<'_> {
    /// Enqueues one stage on `stream` over `grid`, for a rank at `place` with workspace `ws`
    /// and the call interface's arguments `call` (the spec's kinds).
    ///
    /// # Safety
    /// `io` and `ws` must be live device pointers of `stream`'s context with the extents
    /// [`RankIo`] states and a workspace of the stage layout's size; `call`'s arrays those of
    /// `Plan::launch_call_with`.
    pub unsafe fn launch(
        &self,
        stream: &Arc<CudaStream>,
        (stage, digit, grid): (i32, i32, (u32, u32, u32)),
        place: RankPlace,
        io: &RankIo,
        call: &CallArgs,
        ws: CUdeviceptr,
    ) -> Result<()> {
        let cfg = LaunchConfig {
            grid_dim: grid,
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: self.smem,
        };
        let args = StageArgs {
            head: StageHead {
                stage,
                digit,
                scores: io.scores,
                pitch: io.pitch as i64,
            },
            call: *call,
            tail: StageTail {
                live_rows: io.live_rows,
                m_cap: self.m_cap as i32,
                shard_width: place.width as i32,
                offset: place.offset as i32,
                total_width: place.total_width as i32,
                rank: place.rank as i32,
                ranks: place.ranks as i32,
                chunk_len: self.chunk_len as i32,
                ws,
                out: io.out,
                out_pitch: io.out_pitch as i64,
                row_info: io.row_info,
            },
        };
        // SAFETY: the caller vouches for the pointers.
        unsafe { args.launch(stream, self.func, cfg) }.map_err(Error::driver(&format!(
            "launching stage {stage} on rank {}",
            place.rank
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_row_within_the_size_bounds() {
        for width in [
            1u32,
            100,
            4096,
            4097,
            100_000,
            1 << 20,
            (1 << 20) + 4,
            1 << 22,
            1 << 30,
        ] {
            for m_cap in [1u32, 8, 64, 4096] {
                let (chunks, len) = chunking(width, m_cap, 132);
                assert!(chunks >= 1 && len % 4 == 0, "{width} {m_cap}");
                assert!(
                    chunks as u64 * len as u64 >= width as u64,
                    "{width} {m_cap}"
                );
                assert!(len <= MAX_CHUNK_SCORES, "{width} {m_cap}");
                // Never more chunks than 4K-score pieces of the row.
                assert!(chunks <= width.div_ceil(MIN_CHUNK_SCORES).max(1), "{width}");
            }
        }
        // One row of 1M would want 528 chunks for four CTAs per SM: capped at 256 of 4K.
        assert_eq!(chunking(1 << 20, 1, 132), (256, 4096));
    }

    /// The host lays out and runs as many digit histograms as the generated kernel refines:
    /// the kernel's digits (the float32 key's, for 16-bit scores too), doubled by lowest ties.
    #[test]
    fn the_digit_regions_are_the_kernels_for_every_dtype_and_tie_rule() {
        let constant = |source: &str, name: &str| -> usize {
            let at = source
                .find(&format!("constexpr int {name} = "))
                .unwrap_or_else(|| panic!("{name} not in the source"));
            let rest = &source[at..];
            let value = &rest[rest.find('=').unwrap() + 1..rest.find(';').unwrap()];
            value.trim().parse().unwrap()
        };
        for text in [
            "map=staged",
            "map=staged,ties=lowest",
            "map=staged,dtype=f16",
            "map=staged,dtype=f16,ties=lowest,order=sorted",
            "map=staged,dtype=bf16,ties=lowest",
        ] {
            let spec = topk_dsl::Spec::parse(text).unwrap();
            let kernel = topk_codegen::generate(&spec).unwrap();
            let digits = constant(&kernel.source, "NUM_DIGITS");
            let lowest = spec.io.ties == topk_dsl::Ties::Lowest;
            let want = if lowest { 2 * digits } else { digits };
            assert_eq!(constant(&kernel.source, "DIGIT_REGIONS"), want, "{text}");
            let regions = Regions::new(&spec, 4, 1);
            assert_eq!(regions.digits.len(), want, "{text}");
            let plan = steps(&regions, 4, 4, &spec, spec.threads);
            let digit_stages = plan
                .iter()
                .filter(|s| {
                    matches!(
                        s,
                        Step::Stage {
                            stage: STAGE_DIGIT,
                            ..
                        }
                    )
                })
                .count();
            assert_eq!(digit_stages, want, "{text}");
        }
    }

    #[test]
    fn every_reduced_region_follows_the_stage_that_writes_it() {
        let spec = topk_dsl::Spec::default();
        let regions = Regions::new(&spec, 8, 2);
        let plan = steps(&regions, 4, 8, &spec, spec.threads);
        let reduced: Vec<Range<usize>> = plan
            .iter()
            .filter_map(|s| match s {
                Step::Reduce(r) => Some(r.clone()),
                Step::Stage { .. } => None,
            })
            .collect();
        let mut expected = vec![regions.sample.clone(), regions.counts.clone()];
        expected.extend(regions.digits.iter().cloned());
        expected.extend([regions.ranks.clone(), regions.staged.clone()]);
        assert_eq!(reduced, expected);
        // Each reduction comes right after a stage; the chain starts and ends with a stage.
        assert!(matches!(
            plan.first(),
            Some(Step::Stage {
                stage: STAGE_SAMPLE,
                ..
            })
        ));
        assert!(matches!(
            plan.last(),
            Some(Step::Stage {
                stage: STAGE_COPY,
                ..
            })
        ));
        for w in plan.windows(2) {
            if let Step::Reduce(_) = w[1] {
                assert!(matches!(w[0], Step::Stage { .. }));
            }
        }
        // Regions are disjoint, in order, and the zeroed part ends at the status words.
        assert!(regions.sample.end <= regions.counts.start);
        assert!(regions.staged.end <= regions.status.start);
        assert_eq!(regions.zeroed().end, regions.status.end);
        assert!(regions.total > regions.status.end);
    }
}
