//! The sampled view of a row (paper eq. 13, grouped): `run` contiguous positions every
//! `run * stride` positions, the first group at `phase * run`. `run = 1` is the paper's stride
//! view `{i < L : i mod stride = phase}`; larger runs keep the sample count and read `1/run` of
//! the 32-byte sectors. The GPU kernels (`propose.cu`, `propose_runs.cu`) walk the same
//! positions, so the proposal, and the route, agree row by row.

/// Positions of the view of a row of `len` valid scores, in increasing order.
pub fn view_positions(
    len: usize,
    phase: usize,
    stride: usize,
    run: usize,
) -> impl Iterator<Item = usize> {
    let period = run * stride;
    (phase * run..len)
        .step_by(period.max(1))
        .flat_map(move |start| start..(start + run).min(len))
}

/// How many positions [`view_positions`] yields, without walking them.
pub fn view_len(len: usize, phase: usize, stride: usize, run: usize) -> usize {
    let first = phase * run;
    if len <= first {
        return 0;
    }
    let period = run * stride;
    let groups = (len - first).div_ceil(period);
    let last_start = first + (groups - 1) * period;
    (groups - 1) * run + (len - last_start).min(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_matches_the_walk_and_run_1_is_the_stride_view() {
        for run in [1, 2, 4, 8] {
            for stride in [1, 16, 128] {
                for phase in [0, 1, stride - 1].into_iter().filter(|&p| p < stride) {
                    for len in [0, 1, 7, 8, 9, 127, 128, 1000, 4097] {
                        let walk: Vec<usize> = view_positions(len, phase, stride, run).collect();
                        assert_eq!(walk.len(), view_len(len, phase, stride, run));
                        assert!(walk.windows(2).all(|w| w[0] < w[1]));
                        assert!(walk.iter().all(|&p| p < len));
                        // Groups start on multiples of `run` (one aligned vector load each).
                        assert!(walk.iter().all(|&p| (p / run) % stride == phase));
                        if run == 1 {
                            let stride_view: Vec<usize> =
                                (0..len).filter(|i| i % stride == phase).collect();
                            assert_eq!(walk, stride_view);
                        }
                    }
                }
            }
        }
    }
}
