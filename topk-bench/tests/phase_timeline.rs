//! The phase probe's route and phase words decoded on the host: what a probed launch's rows
//! say about who ran them, when, and for how long (no GPU needed).

use topk_bench::{PhaseSummary, RowTimeline};
use topk_codegen::probe::{PASS_UNIT_NS, PHASE_UNIT_NS, START_UNIT_NS};
use topk_runtime::Route;

/// The pair a probed launch writes for one row.
fn probed_row(route: Route, worker: u32, start: u32, phases: (u32, u32, u32)) -> [i32; 2] {
    let (proposal, pass, refine) = phases;
    [
        (route as u32 | (worker << 3) | (start << 13)) as i32,
        (proposal | (refine << 10) | (pass << 20)) as i32,
    ]
}

#[test]
fn probed_rows_decode_to_a_timeline_without_the_short_rows() {
    let info: Vec<i32> = [
        probed_row(Route::Short, 0, 0, (0, 0, 0)),
        probed_row(Route::Primary, 7, 1000, (40, 120, 50)),
        probed_row(Route::Rescue, 263, 1010, (44, 240, 52)),
    ]
    .concat();
    let t = RowTimeline::from_info(&info);
    assert_eq!(t.len(), 2);
    assert_eq!((t[0].row, t[0].worker, t[0].route), (1, 7, Route::Primary));
    assert_eq!((t[1].row, t[1].worker, t[1].route), (2, 263, Route::Rescue));
    assert_eq!(t[0].start_us, 0.0);
    assert_eq!(t[1].start_us, 10.0 * START_UNIT_NS as f64 / 1e3);
    assert_eq!(t[0].proposal_us, 40.0 * PHASE_UNIT_NS as f64 / 1e3);
    assert_eq!(t[1].pass_us, 240.0 * PASS_UNIT_NS as f64 / 1e3);
    assert_eq!(t[1].refine_us, 52.0 * PHASE_UNIT_NS as f64 / 1e3);
    // The summary counts the same rows, whatever worker and start bits the words carry.
    let s = PhaseSummary::from_info(&info);
    assert_eq!(s.rows, 2);
    assert_eq!(s.pass.max, 240.0 * PASS_UNIT_NS as f64 / 1e3);
}
