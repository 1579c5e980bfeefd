//! The call-interface example of docs/rust-api.md, as a test that it compiles and says
//! what the README says.

use topk::dsl::{Io, Order, Rows, Ties};
use topk::runtime::call::{CallIo, CallOut, IndexTransform, RowSource};
use topk::runtime::{cpu, ScoreRows};
use topk::Spec;

#[test]
fn the_readme_call_example_selects_the_two_lowest_equal_scores_of_the_window() {
    let spec = Spec {
        k: 2,
        io: Io {
            values: true,
            order: Order::Sorted,
            ties: Ties::Lowest,
            rows: Rows::Window { relative: true },
            ..Io::DEFAULT
        },
        ..Spec::default()
    };
    let scores = [0.5f32, 3.0, 1.0, 3.0, 2.0, 9.0];
    let rows = ScoreRows {
        data: &scores,
        rows: 1,
        width: 6,
        pitch: 6,
    };
    let io = CallIo {
        rows: RowSource::Window {
            starts: &[1],
            ends: &[5],
        },
        transform: IndexTransform::None,
        prior: None,
    };
    let (mut idx, mut vals) = ([0i32; 2], [0f32; 2]);
    let out = CallOut {
        indices: &mut idx,
        pitch: 2,
        values: Some(&mut vals),
        boundary: None,
    };
    cpu::select_with(&spec, &rows, &io, out, false).unwrap();
    assert_eq!((idx, vals), ([0, 2], [3.0, 3.0]));
}
