//! The host-kernel interface is written once (`topk_codegen::interface`): every family's source
//! gets its route codes, status bits, workspace words and entry parameter lists from it, and
//! declares each entry with that list.

use topk_codegen::interface::{control, route, staged, status};
use topk_codegen::{generate, Family};
use topk_dsl::{Spec, PRESETS};

/// One spec per family: the presets, plus the staged mapping, and every family with the call
/// interface.
fn specs() -> Vec<Spec> {
    let mut specs: Vec<Spec> = PRESETS.iter().map(|p| p.spec).collect();
    specs.push(Spec {
        mapping: topk_dsl::Mapping::Staged,
        ..Spec::default()
    });
    specs.extend(topk_dsl::call_interface_samples());
    specs
}

/// The tokens of `source` after `#define NAME ` up to the end of the (continued) definition,
/// with comments dropped.
fn definition(source: &str, name: &str) -> String {
    let head = format!("#define {name} ");
    let start = source
        .find(&head)
        .unwrap_or_else(|| panic!("no #define {name}"));
    let mut text = String::new();
    for line in source[start + head.len() - 1..].lines() {
        let continued = line.trim_end().ends_with('\\');
        let body = line.trim_end().trim_end_matches('\\');
        let body = match body.find("/*") {
            Some(at) => &body[..at],
            None => body,
        };
        text.push_str(body);
        text.push(' ');
        if !continued {
            break;
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_entry_is_declared_with_the_described_parameters() {
    for spec in specs() {
        let kernel = generate(&spec).unwrap();
        for entry in kernel.family.interface().entries {
            let list = entry
                .params(&spec.io)
                .iter()
                .map(|p| format!("{} {}", p.ty.c(), p.name))
                .collect::<Vec<_>>()
                .join(", ");
            let params = format!("{}_PARAMS", entry.define);
            assert_eq!(definition(&kernel.source, &params), list, "{spec}");
            let declared = format!("{}({params})", entry.define);
            assert_eq!(kernel.source.matches(&declared).count(), 1, "{spec}");
        }
    }
}

#[test]
fn route_codes_status_bits_and_words_are_the_described_ones() {
    for spec in specs() {
        let kernel = generate(&spec).unwrap();
        let s = &kernel.source;
        let d = |name: &str| definition(s, name);
        assert_eq!(d("ROUTE_SHORT"), route::SHORT.to_string());
        assert_eq!(d("ROUTE_PRIMARY"), route::PRIMARY.to_string());
        assert_eq!(d("ROUTE_RESCUE"), route::RESCUE.to_string());
        assert_eq!(d("ROUTE_RECOVERY"), route::RECOVERY.to_string());
        assert_eq!(d("ROUTE_DIRECT_EXACT"), route::DIRECT_EXACT.to_string());
        assert_eq!(d("STATUS_NAN"), format!("{}u", status::NAN));
        assert_eq!(d("STATUS_BAD_LENGTH"), format!("{}u", status::BAD_LENGTH));
        assert_eq!(d("STATUS_BAD_ROWS"), format!("{}u", status::BAD_ROWS));
        assert_eq!(
            d("STATUS_BAD_TRANSFORM"),
            format!("{}u", status::BAD_TRANSFORM)
        );
        if kernel.family == Family::Staged {
            assert!(!kernel.family.interface().control_block);
            assert_eq!(d("STAGE_SAMPLE"), staged::SAMPLE.to_string());
            assert_eq!(d("STAGE_COPY"), staged::COPY.to_string());
            assert_eq!(d("RS_WORDS"), staged::STATE_WORDS.to_string());
            assert_eq!(d("CURSOR_WORDS"), staged::CURSOR_WORDS.to_string());
            assert_eq!(d("STATUS_WORDS"), staged::STATUS_WORDS.to_string());
        } else {
            assert!(kernel.family.interface().control_block);
            assert_eq!(d("CONTROL_CURSOR"), control::CURSOR.to_string());
            assert_eq!(d("CONTROL_EXITS"), control::EXITS.to_string());
            assert_eq!(d("CONTROL_STATUS"), control::STATUS.to_string());
            // The fragments name the control words, never their numbers.
            assert!(
                !s.contains("control + 2") && !s.contains("control[0]"),
                "{spec}"
            );
        }
    }
}

#[test]
fn the_route_decision_is_one_function_in_every_source_and_the_cluster_kernel_calls_it() {
    let decision = "__device__ __forceinline__ int sampled_route(";
    for spec in specs() {
        let s = generate(&spec).unwrap().source;
        assert_eq!(s.matches(decision).count(), 1, "{spec}");
    }
    // The other families write the same decision out (row.cu says why).
    let spec = Spec::parse("map=cluster(8),threads=512").unwrap();
    let s = generate(&spec).unwrap().source;
    assert!(s.contains("return sampled_route(admitted, [&] {"));
}

#[test]
fn the_call_interface_adds_its_parameters_and_a_plain_spec_has_none() {
    use topk_codegen::interface::SELECTOR;
    use topk_dsl::{Io, Rows, Transform};
    let names = |io: Io| -> Vec<&str> { SELECTOR.params(&io).iter().map(|p| p.name).collect() };
    let plain = names(Io::DEFAULT);
    assert_eq!(plain[..3], ["scores", "pitch", "lengths"]);
    let window = names(Io {
        rows: Rows::Window { relative: false },
        transform: Transform::Paged,
        values: true,
        ..Io::DEFAULT
    });
    // The row source stands where `lengths` stands; the transform and values follow.
    assert_eq!(window[..4], ["scores", "pitch", "starts", "ends"]);
    assert_eq!(window[4..plain.len() + 1], plain[3..]);
    assert_eq!(
        window[plain.len() + 1..],
        [
            "page_table",
            "page_columns",
            "page_pitch",
            "page_size",
            "values"
        ]
    );
    let decode = names(Io {
        rows: Rows::Decode,
        transform: Transform::Offset,
        ..Io::DEFAULT
    });
    assert_eq!(decode[2..4], ["seq_lens", "next_n"]);
    assert_eq!(decode.last(), Some(&"offsets"));
    // A plain spec's source switches the call interface's code off.
    let plain = generate(&Spec::default()).unwrap().source;
    assert!(!plain.contains("#define CALL_IO") && !plain.contains("struct CallArgs"));
    let parts = topk_codegen::composition(&Spec::default())
        .unwrap()
        .fragments;
    assert!(parts.iter().all(|f| f.name != "callio.cu"));
    let call = Spec {
        io: Io {
            values: true,
            ..Io::DEFAULT
        },
        ..Spec::default()
    };
    let source = generate(&call).unwrap().source;
    assert!(source.contains("#define CALL_IO 1"));
    assert!(source.contains(
        "#define CALL_ARGS CallArgs{lengths, nullptr, nullptr, nullptr, 0, nullptr, nullptr, 0, \
         0, 0, values}"
    ));
}
