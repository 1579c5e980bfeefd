//! `topk_kernel!(k = 2048, stride = 128, split = 4, ...)`: a Spec validated at compile time.
//!
//! Depend on the `topk` crate and invoke the macro as `topk::topk_kernel!`: the expansion names
//! `::topk::KernelConst` and `::topk::dsl::*`, so it does not work through this crate alone.

mod args;
mod assemble;
mod expand;

use proc_macro::TokenStream;

/// A selector fixed at compile time: `topk::topk_kernel!(key = value, ...)` is a const
/// expression of type `topk::KernelConst` holding the validated Spec, its canonical text, and
/// the generated CUDA source with its entry point and hash.
///
/// Use it through the `topk` crate (add `topk` as a dependency, call `topk::topk_kernel!`):
///
/// ```ignore
/// const KV4: topk::KernelConst = topk::topk_kernel!(k = 2048, stride = 128, split = 4);
/// assert_eq!(KV4.text, "k=2048,dtype=f32,map=kvsplit(4),\
///     propose=sampled(stride=128,rho=1.5,rescue=1.75),coarse=11,digits=11+11+10,threads=512");
/// ```
///
/// Keys may come in any order; each at most once. An omitted key keeps the value of
/// `Spec::default()` (the paper's wide-row persistent policy at K = 2048):
///
/// | key       | value                                                        | default      |
/// |-----------|--------------------------------------------------------------|--------------|
/// | `k`       | integer, `1..=16384`                                         | `2048`       |
/// | `dtype`   | `f32`, `f16` or `bf16`                                       | `f32`        |
/// | `map`     | `persistent`, `kvsplit`, `rowlocal_register`, `rowlocal_streaming`, `cluster`, `staged` | `persistent` |
/// | `split`   | integer, 2, 4 or 8: `map = kvsplit` with that many CTAs per row (implies `map = kvsplit`) | none |
/// | `propose` | `sampled` or `exact`                                          | `sampled`    |
/// | `stride`  | integer, a power of two in `2..=1024` (sampled only)         | `128`        |
/// | `rho`     | decimal, `1.0..=8.0`, hundredths at most (sampled only)      | `1.5`        |
/// | `rescue`  | decimal above `rho`, at most `8.0`, or `none` (sampled only) | `1.75`       |
/// | `exact_below` | integer, rows shorter than this are exact (`map = persistent` only) | `0` |
/// | `coarse`  | integer, `8..=12` bits                                       | `11`         |
/// | `digits`  | `"11+11+10"` or `[11, 11, 10]`: widths of `1..=12` summing to the key width (3 or 4 summing to 32 for f32, 2 to 4 summing to 16 for f16 and bf16) | `11+11+10`; `coarse` + the rest for f16 and bf16 |
/// | `threads` | integer, 128, 256, 384, 512 or 1024                          | `512`        |
/// | `values`  | `true` or `false`: also write the selected values            | `false`      |
/// | `order`   | `any` or `sorted` (descending by value)                      | `any`        |
/// | `ties`    | `any` or `lowest` (deterministic: the lowest indices win)    | `any`        |
/// | `rows`    | `lengths`, `window_relative`, `window_absolute` or `decode`  | `lengths`    |
/// | `transform` | `none`, `offset`, `paged` or `paged_rows` (a page table's rows by a row map) | `none` |
/// | `prior`   | `"P/R"`: propose from a per-row prior, P and R coarse bins below it (`P <= R <= 64`) | none |
/// | `boundary` | `true` or `false`: also write each row's K-th largest score  | `false`      |
///
/// `map = cluster` means `cluster(8)`. `stride`, `rho`, `rescue` or `exact_below` without
/// `propose` mean `propose = sampled`; with `propose = exact` they are an error. `rowlocal_*`
/// needs `propose = exact, threads = 1024`; `cluster` takes either proposal on `threads = 512`
/// or `1024`; `kvsplit` needs a sampled proposal.
///
/// A key or value that breaks a rule of `Spec::validate` is a compile error on that
/// `key = value` pair; for a rule over two keys, on the one written later.
///
/// Every dtype (`f32`, `f16`, `bf16`) and every part of the call interface generates on every
/// mapping, but for `prior` and `boundary`, which generate on `persistent` and `rowlocal_*`. Where code generation ever refuses a spec (`Spec::gpu_unsupported` names what;
/// such specs run on the CPU backend), `source` and `entry` are empty and `hash` is 16 hex
/// digits of sha256 of the canonical text.
#[proc_macro]
pub fn topk_kernel(input: TokenStream) -> TokenStream {
    let args = syn::parse_macro_input!(input as args::Args);
    assemble::spec_from_args(&args.0)
        .and_then(|spec| expand::kernel_const(&spec))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
