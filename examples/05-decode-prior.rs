//! A decode loop that carries each row's K-th largest score from one step to the next as the
//! row's prior boundary (`prior=P/R`, `boundary=true`): the rows certify at the prior in one
//! pass, and the output is the one the call without a prior gives, byte for byte.
//!
//! ```text
//! cargo run --release --example 05-decode-prior
//! ```
//! On the CPU backend (the kernels generate the prior, but the runtime runs them on a GPU only
//! once they have been checked there).

use topk::runtime::call::{CallIo, CallOut, IndexTransform, RowSource};
use topk::runtime::data::DecodeTrace;
use topk::runtime::{cpu, Route, ScoreRows};
use topk_dsl::{Io, Order, Prior, Spec, Ties};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (k, steps) = (2048usize, 6);
    // Four sequences growing by one position per step; their queries drift a little.
    let trace = DecodeTrace {
        start_lens: vec![131_072, 100_000, 65_536, 40_000],
        dims: 16,
        drift: 0.05,
        seed: 1,
    };
    let (rows, width) = (trace.start_lens.len(), 131_072 + steps);
    // Sorted output with lowest-index ties: the output bytes are a function of the scores.
    let canonical = Io {
        order: Order::Sorted,
        ties: Ties::Lowest,
        boundary: true,
        ..Io::DEFAULT
    };
    let plain = Spec {
        k: k as u32,
        io: canonical,
        ..Spec::default()
    };
    let with_prior = Spec {
        io: Io {
            prior: Prior::SUGGESTED,
            ..canonical
        },
        ..plain
    };
    let mut prior = vec![f32::NAN; rows]; // no prior before the first step
    for t in 0..steps {
        let step = trace.step(t, width);
        let scores = ScoreRows {
            data: &step.scores,
            rows,
            width,
            pitch: width,
        };
        let select = |spec: &Spec, prior: Option<&[f32]>| {
            let io = CallIo {
                rows: RowSource::Lengths(&step.lengths),
                transform: IndexTransform::None,
                prior,
            };
            let (mut indices, mut boundary) = (vec![0i32; rows * k], vec![0f32; rows]);
            let out = CallOut {
                indices: &mut indices,
                pitch: k,
                values: None,
                boundary: Some(&mut boundary),
            };
            let stats = cpu::select_with(spec, &scores, &io, out, false)?;
            Ok::<_, topk::runtime::Error>((indices, boundary, stats))
        };
        let (indices, boundary, stats) = select(&with_prior, Some(&prior))?;
        let (reference, _, _) = select(&plain, None)?;
        assert_eq!(indices, reference, "the prior never changes the output");
        let certified = stats.count(Route::PriorPrimary) + stats.count(Route::PriorRescue);
        println!(
            "step {t}: {certified} of {rows} rows certified at their prior ({stats}); \
             boundaries {:?}",
            boundary
        );
        prior = boundary; // this step's K-th largest scores are the next step's priors
    }
    Ok(())
}
