//! A validated Spec -> the `::topk::KernelConst` expression.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use sha2::{Digest, Sha256};
use topk_codegen::CodegenError;
use topk_dsl::{
    Centi, Dtype, Io, Mapping, Order, Prior, Proposal, RowLocalVariant, Rows, Spec, Ties, Transform,
};

/// The const expression for `spec`: the Spec as a struct literal, its canonical text, and the
/// generated source. A mapping codegen does not cover yet, or a dtype or interface feature the
/// kernels do not generate yet (the CPU backend runs it), gets an empty source and entry and a
/// hash of the canonical text, so the const still names the spec uniquely.
pub fn kernel_const(spec: &Spec) -> syn::Result<TokenStream> {
    let text = spec.to_string();
    let (entry, hash, source) = match topk_codegen::generate(spec) {
        Ok(kernel) => (kernel.entry, kernel.hash, kernel.source),
        Err(CodegenError::Unsupported(_) | CodegenError::CpuOnly(_)) => {
            (String::new(), text_hash(&text), String::new())
        }
        Err(e) => return Err(syn::Error::new(Span::call_site(), e)),
    };
    let spec = spec_literal(spec);
    Ok(quote! {
        ::topk::KernelConst {
            spec: #spec,
            text: #text,
            entry: #entry,
            hash: #hash,
            source: #source,
        }
    })
}

/// 16 hex digits of sha256(canonical text).
fn text_hash(text: &str) -> String {
    Sha256::digest(text.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `spec` as a const struct literal. Destructured field by field so a new Spec field fails to
/// compile here instead of being silently dropped.
fn spec_literal(spec: &Spec) -> TokenStream {
    let Spec {
        k,
        dtype,
        mapping,
        proposal,
        coarse_bits,
        digits,
        threads,
        view_run,
        stagger_us,
        tail_rows,
        tail_rho,
        prefetch,
        io,
    } = *spec;
    let tail_rho = centi(tail_rho);
    let dtype = match dtype {
        Dtype::F32 => quote!(::topk::dsl::Dtype::F32),
        Dtype::F16 => quote!(::topk::dsl::Dtype::F16),
        Dtype::Bf16 => quote!(::topk::dsl::Dtype::Bf16),
    };
    let io = io_literal(io);
    let mapping = match mapping {
        Mapping::Persistent => quote!(::topk::dsl::Mapping::Persistent),
        Mapping::KvSplit { splits } => quote!(::topk::dsl::Mapping::KvSplit { splits: #splits }),
        Mapping::RowLocal(RowLocalVariant::Register) => {
            quote!(::topk::dsl::Mapping::RowLocal(
                ::topk::dsl::RowLocalVariant::Register
            ))
        }
        Mapping::RowLocal(RowLocalVariant::Streaming) => {
            quote!(::topk::dsl::Mapping::RowLocal(
                ::topk::dsl::RowLocalVariant::Streaming
            ))
        }
        Mapping::Cluster { ctas } => quote!(::topk::dsl::Mapping::Cluster { ctas: #ctas }),
        Mapping::Staged => quote!(::topk::dsl::Mapping::Staged),
    };
    let proposal = match proposal {
        Proposal::Sampled {
            stride,
            rho,
            rescue,
            exact_below,
        } => {
            let rho = centi(rho);
            let rescue = match rescue {
                Some(r) => {
                    let r = centi(r);
                    quote!(::core::option::Option::Some(#r))
                }
                None => quote!(::core::option::Option::None),
            };
            quote!(::topk::dsl::Proposal::Sampled {
                stride: #stride,
                rho: #rho,
                rescue: #rescue,
                exact_below: #exact_below,
            })
        }
        Proposal::Exact => quote!(::topk::dsl::Proposal::Exact),
    };
    let widths = digits.widths;
    let len = digits.len;
    quote! {
        ::topk::dsl::Spec {
            k: #k,
            dtype: #dtype,
            mapping: #mapping,
            proposal: #proposal,
            coarse_bits: #coarse_bits,
            digits: ::topk::dsl::Digits { widths: [#(#widths),*], len: #len },
            threads: #threads,
            view_run: #view_run,
            stagger_us: #stagger_us,
            tail_rows: #tail_rows,
            tail_rho: #tail_rho,
            prefetch: #prefetch,
            io: #io,
        }
    }
}

/// The interface fields as a const struct literal (destructured so a new field fails here).
fn io_literal(io: Io) -> TokenStream {
    let Io {
        values,
        order,
        ties,
        rows,
        transform,
        prior,
        boundary,
    } = io;
    let order = match order {
        Order::Any => quote!(::topk::dsl::Order::Any),
        Order::Sorted => quote!(::topk::dsl::Order::Sorted),
    };
    let ties = match ties {
        Ties::Any => quote!(::topk::dsl::Ties::Any),
        Ties::Lowest => quote!(::topk::dsl::Ties::Lowest),
    };
    let rows = match rows {
        Rows::Lengths => quote!(::topk::dsl::Rows::Lengths),
        Rows::Window { relative } => quote!(::topk::dsl::Rows::Window { relative: #relative }),
        Rows::Decode => quote!(::topk::dsl::Rows::Decode),
    };
    let transform = match transform {
        Transform::None => quote!(::topk::dsl::Transform::None),
        Transform::Offset => quote!(::topk::dsl::Transform::Offset),
        Transform::Paged => quote!(::topk::dsl::Transform::Paged),
        Transform::PagedRows => quote!(::topk::dsl::Transform::PagedRows),
    };
    let prior = match prior {
        Prior::None => quote!(::topk::dsl::Prior::None),
        Prior::Bins { primary, rescue } => {
            quote!(::topk::dsl::Prior::Bins { primary: #primary, rescue: #rescue })
        }
    };
    quote! {
        ::topk::dsl::Io {
            values: #values,
            order: #order,
            ties: #ties,
            rows: #rows,
            transform: #transform,
            prior: #prior,
            boundary: #boundary,
        }
    }
}

fn centi(c: Centi) -> TokenStream {
    let hundredths = c.0;
    quote!(::topk::dsl::Centi(#hundredths))
}
