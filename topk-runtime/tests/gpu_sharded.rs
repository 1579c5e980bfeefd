//! The context-parallel selector on the GPU: ranks simulated on one device (and, where the
//! machine has several devices, one rank per device over NCCL) against the oracle and the
//! single-device CPU backend's routes. Every test needs a GPU and is ignored unless run with
//! `--ignored`.

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use topk_dsl::Spec;
use topk_runtime::cpu;
use topk_runtime::cuda::sharded::{RankIo, ShardedRequest, ShardedSelector};
use topk_runtime::cuda::Gpu;
use topk_runtime::data::{generate, Profile};
use topk_runtime::policy::context_parallel_spec;
use topk_runtime::sharding::Sharding;
use topk_runtime::{Route, ScoreMatrix};

mod gpu_support;
use gpu_support::gpu;

fn default_spec(k: u32) -> Spec {
    context_parallel_spec(k)
}

/// Lengths that stress the shards: empty, short, around K, ending on and just past a shard
/// boundary, inside the last shard, full.
fn lengths_for(k: usize, sharding: Sharding, width: usize) -> Vec<i32> {
    let sw = sharding.shard_width;
    let mut v = vec![0, 1, k - 1, k, k + 1, width, width - 1, width / 2 + 3];
    for b in [sw, sw + 1, 2 * sw - 1, 2 * sw] {
        if b <= width {
            v.push(b as i32 as usize);
        }
    }
    v.into_iter().map(|l| l.min(width) as i32).collect()
}

/// Runs `sel` on `profile` rows and checks exactness and the routes; returns the routes.
fn check(
    sel: &mut ShardedSelector,
    spec: &Spec,
    profile: Profile,
    lengths: &[i32],
    width: usize,
    label: &str,
) -> Vec<Route> {
    let k = spec.k as usize;
    let rows = lengths.len();
    let data = generate(profile, 7, spec.k, 0, lengths, width, width).unwrap();
    let m = ScoreMatrix {
        data: &data,
        rows,
        width,
        pitch: width,
        lengths,
    };
    let shards = sel.sharding().split(&m).unwrap();
    let (out, info) = sel
        .select_host(&shards, lengths)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    let report = cpu::verify(&m, k, &out, k).unwrap();
    assert!(
        report.is_exact(),
        "{label}: not exact: {:?}",
        &report.violations[..report.violations.len().min(4)]
    );
    let mut cpu_out = vec![0; rows * k];
    let cpu_stats = cpu::select(spec, &m, &mut cpu_out, k, true).unwrap();
    let routes: Vec<Route> = (0..rows)
        .map(|r| Route::from_code(info[2 * r] as u8).unwrap())
        .collect();
    assert_eq!(
        Some(&routes),
        cpu_stats.per_row.as_ref(),
        "{label}: routes differ from the single-device CPU backend's"
    );
    routes
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn simulated_ranks_are_exact_and_take_the_single_device_routes() {
    let gpu = gpu();
    let mut seen = [0usize; Route::ALL.len()];
    let mut cases = 0;
    for k in [2048u32, 512, 100] {
        let mut specs = vec![default_spec(k)];
        if k == 2048 {
            specs.push(Spec::parse("k=2048,propose=sampled(stride=64,rho=1.5)").unwrap());
            // No margin, no rescue: many rows underfill and take the recovery route.
            specs.push(Spec::parse("k=2048,propose=sampled(stride=128,rho=1)").unwrap());
            // No margin, a rescue boundary: underfilled rows take the band rescue (the default
            // margin leaves none on these rows).
            specs
                .push(Spec::parse("k=2048,propose=sampled(stride=128,rho=1,rescue=1.75)").unwrap());
        }
        for spec in specs {
            for ranks in [1usize, 2, 3, 4, 8] {
                let width = 70_001;
                let sharding = Sharding::covering(width, ranks).unwrap();
                let lengths = lengths_for(k as usize, sharding, width);
                let mut request = ShardedRequest::new(k, lengths.len() as u32, sharding);
                request.spec = Some(spec);
                let mut sel = ShardedSelector::simulated(&gpu, request).unwrap();
                for profile in Profile::ALL {
                    let label = format!("{spec} G={ranks} {profile}");
                    for r in check(&mut sel, &spec, profile, &lengths, width, &label) {
                        seen[r as usize] += 1;
                    }
                    cases += 1;
                }
            }
        }
    }
    println!("{cases} cases exact; rows per route (short/primary/rescue/recovery/direct) {seen:?}");
    assert!(
        Route::WITHOUT_PRIOR.iter().all(|&r| seen[r as usize] > 0),
        "every route exercised: {seen:?}"
    );
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn long_rows_on_many_ranks_are_exact() {
    let gpu = gpu();
    let k = 2048;
    let spec = default_spec(k);
    let width = 1 << 20;
    for ranks in [2usize, 8] {
        let sharding = Sharding::covering(width, ranks).unwrap();
        let lengths = vec![width as i32, (width - 12_345) as i32, 300_001, 4097];
        let mut request = ShardedRequest::new(k, lengths.len() as u32, sharding);
        request.spec = Some(spec);
        let mut sel = ShardedSelector::simulated(&gpu, request).unwrap();
        for profile in [Profile::Indexer, Profile::Iid, Profile::TiesAtK] {
            check(
                &mut sel,
                &spec,
                profile,
                &lengths,
                width,
                &format!("1M G={ranks} {profile}"),
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn nan_and_bad_lengths_are_reported() {
    let gpu = gpu();
    let sharding = Sharding::new(2, 8192).unwrap();
    let mut sel = ShardedSelector::simulated(&gpu, ShardedRequest::new(64, 2, sharding)).unwrap();
    let mut shards = vec![vec![0.5f32; 2 * 8192]; 2];
    shards[1][8192 + 100] = f32::NAN; // row 1, global column 8292
    let err = sel.select_host(&shards, &[16384, 16384]).unwrap_err();
    assert!(err.to_string().contains("NaN"), "{err}");
    let err = sel
        .select_host(&vec![vec![0.5f32; 2 * 8192]; 2], &[16385, 0])
        .unwrap_err();
    assert!(err.to_string().contains("16385"), "{err}");
}

/// Per-rank device buffers of one batch.
struct RankBufs {
    scores: CudaSlice<f32>,
    lengths: CudaSlice<i32>,
    live: CudaSlice<i32>,
    out: CudaSlice<i32>,
}

fn upload(
    gpus: &[Gpu],
    shards: &[Vec<f32>],
    lengths: &[i32],
    m_cap: usize,
    k: usize,
) -> Vec<RankBufs> {
    shards
        .iter()
        .enumerate()
        .map(|(r, shard)| {
            let s = gpus[r % gpus.len()].stream();
            RankBufs {
                scores: s.clone_htod(shard).unwrap(),
                lengths: s.clone_htod(lengths).unwrap(),
                live: s.clone_htod(&[m_cap as i32]).unwrap(),
                out: s.clone_htod(&vec![-7i32; m_cap * k]).unwrap(),
            }
        })
        .collect()
}

fn rank_io(gpus: &[Gpu], bufs: &mut [RankBufs], pitch: usize, k: usize) -> Vec<RankIo> {
    bufs.iter_mut()
        .enumerate()
        .map(|(r, b)| {
            let s = gpus[r % gpus.len()].stream();
            RankIo {
                scores: b.scores.device_ptr(s).0,
                pitch: pitch as u64,
                lengths: b.lengths.device_ptr(s).0,
                live_rows: b.live.device_ptr(s).0,
                out: b.out.device_ptr_mut(s).0,
                out_pitch: k as u64,
                row_info: 0,
            }
        })
        .collect()
}

/// Captures one call, then replays it with new lengths and a smaller live row count: each
/// replay is exact on the live rows, and rows past the live count keep their old contents.
fn graph_replays_follow_new_inputs(gpus: &[Gpu], mut sel: ShardedSelector, label: &str) {
    let spec = *sel.spec();
    let k = spec.k as usize;
    let sharding = sel.sharding();
    let width = sharding.total_width();
    let m_cap = 6;
    let first: Vec<i32> = vec![width as i32, 5000, 0, (width - 999) as i32, 2047, 40_000];
    let second: Vec<i32> = vec![3000, width as i32, 12_345, 2048, width as i32 - 1, 9];
    let data = generate(
        Profile::Indexer,
        11,
        spec.k,
        0,
        &vec![width as i32; m_cap],
        width,
        width,
    )
    .unwrap();
    let full = ScoreMatrix {
        data: &data,
        rows: m_cap,
        width,
        pitch: width,
        lengths: &first,
    };
    let shards = sharding
        .split(&ScoreMatrix {
            lengths: &vec![width as i32; m_cap],
            ..full
        })
        .unwrap();
    let mut bufs = upload(gpus, &shards, &first, m_cap, k);
    let io = rank_io(gpus, &mut bufs, sharding.shard_width, k);
    // SAFETY: the buffers outlive the graph and hold the extents RankIo states.
    let graph = unsafe { sel.capture(&io) }.unwrap_or_else(|e| panic!("{label}: capture: {e}"));
    for (lengths, live) in [(&first, m_cap), (&second, m_cap), (&first, 4)] {
        for (r, b) in bufs.iter_mut().enumerate() {
            let s = gpus[r % gpus.len()].stream();
            s.memcpy_htod(lengths, &mut b.lengths).unwrap();
            s.memcpy_htod(&[live as i32], &mut b.live).unwrap();
            s.memcpy_htod(&vec![-7i32; m_cap * k], &mut b.out).unwrap();
            s.synchronize().unwrap();
        }
        graph.replay().unwrap();
        graph.synchronize().unwrap();
        assert_eq!(sel.status().unwrap(), 0, "{label}: status");
        let m = ScoreMatrix {
            data: &data,
            rows: live,
            width,
            pitch: width,
            lengths: &lengths[..live],
        };
        for (r, b) in bufs.iter().enumerate() {
            let out = gpus[r % gpus.len()].stream().clone_dtoh(&b.out).unwrap();
            let report = cpu::verify(&m, k, &out[..live * k], k).unwrap();
            assert!(
                report.is_exact(),
                "{label}: rank {r} replay not exact: {:?}",
                report.violations.first()
            );
            assert!(
                out[live * k..].iter().all(|&x| x == -7),
                "{label}: rows past the live count were written"
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored on a GPU host"]
fn simulated_graph_replays_follow_new_lengths_and_live_rows() {
    let gpu = gpu();
    let sharding = Sharding::covering(200_000, 4).unwrap();
    let sel = ShardedSelector::simulated(&gpu, ShardedRequest::new(2048, 6, sharding)).unwrap();
    graph_replays_follow_new_inputs(&[gpu], sel, "simulated G=4");
}

/// Every device of the machine, when there are at least two.
fn all_devices() -> Option<Vec<Gpu>> {
    let mut gpus = Vec::new();
    while let Ok(g) = Gpu::open(gpus.len()) {
        gpus.push(g);
    }
    (gpus.len() >= 2).then_some(gpus)
}

#[test]
#[ignore = "needs two GPUs and libnccl: run with --ignored on a multi-GPU host"]
fn nccl_ranks_are_exact_and_replay_inside_graphs() {
    let _ = gpu();
    let gpus = all_devices().expect(
        "this test needs two or more GPUs; on a one-GPU host leave it out with `--skip nccl_`",
    );
    let ranks = gpus.len();
    for k in [2048u32, 512] {
        let spec = default_spec(k);
        let width = 300_007;
        let sharding = Sharding::covering(width, ranks).unwrap();
        let lengths = lengths_for(k as usize, sharding, width);
        let mut request = ShardedRequest::new(k, lengths.len() as u32, sharding);
        request.spec = Some(spec);
        let mut sel = ShardedSelector::nccl(&gpus, request).unwrap_or_else(|e| panic!("NCCL: {e}"));
        for profile in Profile::ALL {
            check(
                &mut sel,
                &spec,
                profile,
                &lengths,
                width,
                &format!("NCCL G={ranks} K={k} {profile}"),
            );
        }
    }
    let sharding = Sharding::covering(200_000, ranks).unwrap();
    let sel = ShardedSelector::nccl(&gpus, ShardedRequest::new(2048, 6, sharding)).unwrap();
    graph_replays_follow_new_inputs(&gpus, sel, &format!("NCCL G={ranks}"));
}
