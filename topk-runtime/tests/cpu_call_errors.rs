//! Bad calls of the call interface fail with one clear error that names the row, array or
//! field and says what to do; nothing panics.

use half::f16;
use topk_dsl::{Digits, Dtype, Io, Rows, Spec, Transform};
use topk_runtime::call::{CallIo, CallOut, IndexTransform, PageTable, RowSource};
use topk_runtime::{cpu, ScoreMatrix, ScoreRows};

const K: usize = 2;

fn spec(io: Io) -> Spec {
    Spec {
        k: K as u32,
        io,
        ..Spec::default()
    }
}

fn window_spec(transform: Transform) -> Spec {
    spec(Io {
        rows: Rows::Window { relative: true },
        transform,
        ..Io::DEFAULT
    })
}

/// The error of selecting `data` (rows of 4) with `spec` and `io`, values buffer when asked.
fn error(spec: &Spec, data: &[f32], io: &CallIo, values: Option<usize>) -> String {
    let rows = data.len() / 4;
    let scores = ScoreRows {
        data,
        rows,
        width: 4,
        pitch: 4,
    };
    let mut indices = vec![0; rows * K];
    let mut v = values.map(|n| vec![0f32; n]);
    let out = CallOut {
        indices: &mut indices,
        pitch: K,
        values: v.as_deref_mut(),
        boundary: None,
    };
    cpu::select_with(spec, &scores, io, out, false)
        .unwrap_err()
        .to_string()
}

fn has(message: String, words: &str) {
    assert!(message.contains(words), "{message}");
}

#[test]
fn calls_that_do_not_match_their_spec_are_refused() {
    let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let lengths = [4, 4];
    has(
        error(
            &window_spec(Transform::None),
            &data,
            &CallIo::lengths(&lengths),
            None,
        ),
        "the spec has rows=window(relative) but the call passes lengths",
    );
    let offsets = CallIo {
        rows: RowSource::Lengths(&lengths),
        transform: IndexTransform::Offset(&[0, 0]),
        prior: None,
    };
    has(
        error(&spec(Io::DEFAULT), &data, &offsets, None),
        "the spec has transform=none but the call passes offsets",
    );
    let values = spec(Io {
        values: true,
        ..Io::DEFAULT
    });
    has(
        error(&values, &data, &CallIo::lengths(&lengths), None),
        "no values buffer",
    );
    has(
        error(&values, &data, &CallIo::lengths(&lengths), Some(3)),
        "values: invalid input: index buffer holds 3 elements",
    );
    has(
        error(
            &spec(Io::DEFAULT),
            &data,
            &CallIo::lengths(&lengths),
            Some(4),
        ),
        "the spec has no values=true",
    );
    // f16 scores under an f32 spec, and the plain entry point with an interface it lacks.
    let halves: Vec<f16> = data.iter().map(|&x| f16::from_f32(x)).collect();
    let scores = ScoreRows {
        data: &halves,
        rows: 2,
        width: 4,
        pitch: 4,
    };
    let mut out = vec![0; 4];
    let err = cpu::select_with(
        &spec(Io::DEFAULT),
        &scores,
        &CallIo::lengths(&lengths),
        CallOut::indices(&mut out, K),
        false,
    )
    .unwrap_err();
    has(err.to_string(), "dtype=f32 but the scores are f16");
    let m = ScoreMatrix {
        data: &data,
        rows: 2,
        width: 4,
        pitch: 4,
        lengths: &lengths,
    };
    let f16_spec = Spec {
        dtype: Dtype::F16,
        digits: Digits::default_for(Dtype::F16, 11),
        ..spec(Io::DEFAULT)
    };
    for s in [values, window_spec(Transform::None), f16_spec] {
        let err = cpu::select(&s, &m, &mut out, K, false).unwrap_err();
        has(err.to_string(), "needs cpu::select_with");
    }
}

#[test]
fn windows_and_decode_rows_outside_the_matrix_name_their_row() {
    let data = [0f32; 8];
    let sp = window_spec(Transform::None);
    let window = |starts: &'static [i32], ends: &'static [i32]| CallIo {
        rows: RowSource::Window { starts, ends },
        transform: IndexTransform::None,
        prior: None,
    };
    has(
        error(&sp, &data, &window(&[0, 3], &[4, 5]), None),
        "row 1 has the window [3, 5)",
    );
    has(
        error(&sp, &data, &window(&[2, 0], &[1, 4]), None),
        "row 0 has the window [2, 1)",
    );
    has(
        error(&sp, &data, &window(&[0], &[4]), None),
        "1 window starts given for 2 rows",
    );
    let decode = spec(Io {
        rows: Rows::Decode,
        ..Io::DEFAULT
    });
    let io = |seq_lens: &'static [i32], next_n| CallIo {
        rows: RowSource::Decode { seq_lens, next_n },
        transform: IndexTransform::None,
        prior: None,
    };
    has(
        error(&decode, &data, &io(&[5], 2), None),
        "row 1 has length 5",
    );
    has(
        error(&decode, &data, &io(&[4, 4], 2), None),
        "groups of next_n",
    );
}

#[test]
fn transforms_that_cannot_represent_a_row_are_refused() {
    let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0];
    let (starts, ends) = ([2, 0], [4, 4]);
    let rows = RowSource::Window {
        starts: &starts,
        ends: &ends,
    };
    let offsets = [i32::MAX, 0];
    has(
        error(
            &window_spec(Transform::Offset),
            &data,
            &CallIo {
                rows,
                transform: IndexTransform::Offset(&offsets),
                prior: None,
            },
            None,
        ),
        "row 0: offset 2147483647",
    );
    let paged = |table: &'static [i32], columns, page_size| CallIo {
        rows,
        transform: IndexTransform::Paged(PageTable {
            data: table,
            columns,
            pitch: columns,
            page_size,
        }),
        prior: None,
    };
    let sp = window_spec(Transform::Paged);
    has(
        error(&sp, &data, &paged(&[1, 2, 3], 1, 2), None),
        "row 1: its indices reach 3",
    );
    has(
        error(&sp, &data, &paged(&[1], 1, 4), None),
        "page table holds 1 entries",
    );
    // A negative page is found when it is used: row 0 selects both of its scores.
    has(
        error(&sp, &data, &paged(&[-3, 1], 1, 4), None),
        "page-table entry 0 holds -3",
    );
    // A NaN inside a window is reported where it is in the matrix; one outside is not read.
    let nan_in_row_1 = [f32::NAN, 2.0, 3.0, 4.0, 5.0, 6.0, f32::NAN, 8.0];
    has(
        error(&sp, &nan_in_row_1, &paged(&[5, 6], 1, 4), None),
        "row 1, column 2 is NaN",
    );
}
