//! `topk_kernel!` at compile time: every documented form of its keys expands to a const, and an
//! invalid spec is a compile error on the offending `key = value` pair (the `.stderr` file beside
//! each failing case records where the error points).

#[test]
fn topk_kernel_accepts_valid_and_rejects_invalid_specs_at_compile_time() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
