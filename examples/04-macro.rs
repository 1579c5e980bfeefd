//! A selector fixed at compile time.
//!
//! `topk_kernel!` validates its spec while the program compiles (a stride of 100 or digits that
//! do not sum to 32 are compile errors on that argument) and embeds the canonical text, the
//! hash and the generated CUDA source in a `const`.
//!
//! Run with `cargo run --example 04-macro`.

use topk::{topk_kernel, KernelConst, Spec};

/// Four CTAs per row, stride-128 view; every other field keeps its default.
const KVSPLIT4: KernelConst = topk_kernel!(k = 2048, stride = 128, split = 4);

/// The persistent exact selector at K = 512.
const EXACT_K512: KernelConst = topk_kernel!(k = 512, propose = exact);

const SOURCE_LINES: usize = 12;

fn describe(name: &str, kernel: &KernelConst) -> Result<(), String> {
    println!("{name}");
    println!("  spec   {}", kernel.text);
    println!("  hash   {}", kernel.hash);
    if kernel.has_source() {
        println!("  entry  {}", kernel.entry);
        println!(
            "  source ({} lines, the first {SOURCE_LINES}):",
            kernel.source.lines().count()
        );
        for line in kernel.source.lines().take(SOURCE_LINES) {
            println!("    | {line}");
        }
    } else {
        println!(
            "  source not available: code generation does not cover map={} yet",
            kernel.spec.mapping
        );
    }
    // The text is the spec's one name: parsing it at run time gives back the compile-time spec.
    let parsed = Spec::parse(kernel.text).map_err(|e| e.to_string())?;
    if parsed != kernel.spec {
        return Err(format!(
            "{name}: Spec::parse(text) = {parsed:?} differs from the macro's {:?}",
            kernel.spec
        ));
    }
    println!("  Spec::parse(text) == the macro's spec");
    Ok(())
}

fn main() -> Result<(), String> {
    describe("KVSPLIT4", &KVSPLIT4)?;
    println!();
    describe("EXACT_K512", &EXACT_K512)
}
