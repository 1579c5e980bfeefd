//! `verify_with` catches each kind of wrong output a call interface allows: a wrong value
//! (also a `-0.0` for a `+0.0`, a padding value that is not `-inf`), a wrong order, a wrong tie
//! choice, an index written through the wrong transform or window convention; and refuses
//! inputs it cannot check.

mod call_support;

use call_support::{run, Output};
use half::bf16;
use topk_dsl::{Digits, Dtype, Io, Order, Rows, Spec, Ties, Transform};
use topk_runtime::call::{CallIo, IndexTransform, PageTable, RowSource};
use topk_runtime::{cpu, Score, ScoreRows};

const K: usize = 4;

/// One row of 12 scores: 9.0 at 5, ties of 7.0 at 1, 3, 8 and 10, a -0.0 at 11, the rest low.
fn row() -> Vec<f32> {
    vec![1.0, 7.0, 2.0, 7.0, 0.5, 9.0, 1.5, 3.0, 7.0, 0.25, 7.0, -0.0]
}

fn spec(io: Io) -> Spec {
    Spec {
        k: K as u32,
        io,
        ..Spec::default()
    }
}

fn scores(data: &[f32]) -> ScoreRows<'_, f32> {
    ScoreRows {
        data,
        rows: 1,
        width: data.len(),
        pitch: data.len(),
    }
}

/// The first violation `verify_with` reports for `out`, if any.
fn violation<T: Score>(
    spec: &Spec,
    s: &ScoreRows<T>,
    io: &CallIo,
    out: &Output<T>,
) -> Option<String> {
    let report = cpu::verify_with(spec, s, io, &out.indices, K, out.values.as_deref()).unwrap();
    report.violations.first().map(|v| v.what.clone())
}

fn expect(found: Option<String>, words: &str) {
    let found = found.unwrap_or_else(|| panic!("no violation; expected one about {words:?}"));
    assert!(found.contains(words), "{found}");
}

#[test]
fn wrong_values_are_caught_bit_for_bit() {
    let data = row();
    let s = scores(&data);
    let lengths = [12];
    let io = CallIo::lengths(&lengths);
    let sp = spec(Io {
        values: true,
        order: Order::Sorted,
        ties: Ties::Lowest,
        ..Io::DEFAULT
    });
    let good = run(&sp, &s, &io, true);
    assert_eq!(good.indices, vec![5, 1, 3, 8]);
    assert_eq!(violation(&sp, &s, &io, &good), None);
    let mut bad = good.clone();
    bad.values.as_mut().unwrap()[2] = 7.5;
    expect(violation(&sp, &s, &io, &bad), "value 7.5");
    // A short row: -0.0 selected, +0.0 written, and padding that is not -inf.
    let short = [3];
    let short_io = CallIo::lengths(&short);
    let tail = [7.0f32, -0.0, 1.0];
    let s3 = scores(&tail);
    let good = run(&sp, &s3, &short_io, true);
    assert_eq!(good.indices, vec![0, 2, 1, -1]);
    assert_eq!(violation(&sp, &s3, &short_io, &good), None);
    let mut zero = good.clone();
    zero.values.as_mut().unwrap()[2] = 0.0;
    expect(violation(&sp, &s3, &short_io, &zero), "bits 0x0");
    let mut pad = good.clone();
    pad.values.as_mut().unwrap()[3] = 0.0;
    expect(violation(&sp, &s3, &short_io, &pad), "not -inf");
}

#[test]
fn wrong_order_and_wrong_tie_choice_are_caught() {
    let data = row();
    let s = scores(&data);
    let lengths = [12];
    let io = CallIo::lengths(&lengths);
    let sorted_lowest = spec(Io {
        order: Order::Sorted,
        ties: Ties::Lowest,
        ..Io::DEFAULT
    });
    let good = run(&sorted_lowest, &s, &io, true);
    let with = |indices: Vec<i32>| Output::<f32> {
        indices,
        values: None,
    };
    // Descending order broken.
    expect(
        violation(&sorted_lowest, &s, &io, &with(vec![1, 5, 3, 8])),
        "out of order",
    );
    // Equal values not in ascending position order.
    expect(
        violation(&sorted_lowest, &s, &io, &with(vec![5, 3, 1, 8])),
        "ascending position order",
    );
    // Ties at rank K: 10 instead of 8 is exact, but not the lowest positions.
    let other_tie = with(vec![5, 1, 3, 10]);
    expect(
        violation(&sorted_lowest, &s, &io, &other_tie),
        "position 8 (score 7e0) is not selected but position 10",
    );
    let any = spec(Io::DEFAULT);
    assert_eq!(violation(&any, &s, &io, &other_tie), None);
    assert_eq!(violation(&any, &s, &io, &with(vec![8, 3, 5, 1])), None);
    let sorted_any = spec(Io {
        order: Order::Sorted,
        ..Io::DEFAULT
    });
    assert_eq!(
        violation(&sorted_any, &s, &io, &with(vec![5, 10, 1, 3])),
        None
    );
    assert_eq!(violation(&sorted_lowest, &s, &io, &good), None);
}

#[test]
fn indices_written_through_the_wrong_transform_or_window_convention_are_caught() {
    let data = row();
    let s = scores(&data);
    let (starts, ends) = ([2], [12]);
    let window = RowSource::Window {
        starts: &starts,
        ends: &ends,
    };
    let offsets = [1000];
    let table = [40, 41, 47, 43];
    let paged = IndexTransform::Paged(PageTable {
        data: &table,
        columns: 4,
        pitch: 4,
        page_size: 3,
    });
    for relative in [true, false] {
        for (transform, kind) in [
            (IndexTransform::Offset(&offsets), Transform::Offset),
            (paged, Transform::Paged),
        ] {
            let sp = spec(Io {
                rows: Rows::Window { relative },
                transform: kind,
                ..Io::DEFAULT
            });
            let io = CallIo {
                rows: window,
                transform,
                prior: None,
            };
            let good = run(&sp, &s, &io, false);
            assert_eq!(violation(&sp, &s, &io, &good), None, "{sp}");
            // The untransformed output is no output of this transform.
            let raw = run(
                &Spec {
                    io: Io {
                        transform: Transform::None,
                        ..sp.io
                    },
                    ..sp
                },
                &s,
                &CallIo {
                    rows: window,
                    transform: IndexTransform::None,
                    prior: None,
                },
                false,
            );
            expect(
                violation(&sp, &s, &io, &raw),
                "no position of the row's window",
            );
        }
        // Relative indices checked as absolute ones (and the other way round) break the
        // contract: they name other scores.
        let sp = spec(Io {
            rows: Rows::Window { relative },
            ..Io::DEFAULT
        });
        let io = CallIo {
            rows: window,
            transform: IndexTransform::None,
            prior: None,
        };
        let other = spec(Io {
            rows: Rows::Window {
                relative: !relative,
            },
            ..Io::DEFAULT
        });
        let out = run(&other, &s, &io, false);
        assert!(violation(&sp, &s, &io, &out).is_some(), "{sp}");
    }
}

#[test]
fn inputs_it_cannot_check_are_errors_not_violations() {
    let data = row();
    let s = scores(&data);
    let (starts, ends) = ([0], [12]);
    let window = RowSource::Window {
        starts: &starts,
        ends: &ends,
    };
    let out = vec![5, 1, 3, 8];
    let sp = spec(Io {
        rows: Rows::Window { relative: true },
        transform: Transform::Paged,
        ..Io::DEFAULT
    });
    // Two pages of the row on one physical page.
    let table = [4, 9, 4, 2];
    let io = CallIo {
        rows: window,
        transform: IndexTransform::Paged(PageTable {
            data: &table,
            columns: 4,
            pitch: 0,
            page_size: 3,
        }),
        prior: None,
    };
    let err = cpu::verify_with(&sp, &s, &io, &out, K, None).unwrap_err();
    assert!(err.to_string().contains("same physical page 4"), "{err}");
    // The spec names a window; the call passes lengths.
    let lengths = [12];
    let err = cpu::verify_with(&sp, &s, &CallIo::lengths(&lengths), &out, K, None).unwrap_err();
    assert!(err.to_string().contains("rows=window(relative)"), "{err}");
    // Values asked for but not given.
    let with_values = spec(Io {
        values: true,
        ..Io::DEFAULT
    });
    let err =
        cpu::verify_with(&with_values, &s, &CallIo::lengths(&lengths), &out, K, None).unwrap_err();
    assert!(err.to_string().contains("no values buffer"), "{err}");
    // bf16 scores under an f32 spec.
    let halves: Vec<bf16> = data.iter().map(|&x| bf16::from_f32(x)).collect();
    let hs = ScoreRows {
        data: &halves,
        rows: 1,
        width: 12,
        pitch: 12,
    };
    let err = cpu::verify_with(
        &spec(Io::DEFAULT),
        &hs,
        &CallIo::lengths(&lengths),
        &out,
        K,
        None,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("dtype=f32 but the scores are bf16"),
        "{err}"
    );
    let bf16_spec = Spec {
        dtype: Dtype::Bf16,
        digits: Digits::default_for(Dtype::Bf16, 11),
        ..spec(Io::DEFAULT)
    };
    let report =
        cpu::verify_with(&bf16_spec, &hs, &CallIo::lengths(&lengths), &out, K, None).unwrap();
    assert!(report.is_exact(), "{report}");
}
