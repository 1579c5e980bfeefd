//! Arguments -> a validated Spec, with every error spanned on the argument that caused it.

use crate::args::Arg;
use proc_macro2::Span;
use std::fmt::Display;
use std::str::FromStr;
use syn::Lit;
use topk_dsl::{
    Centi, Digits, Dtype, Io, Mapping, Order, Proposal, RowLocalVariant, Rows, Spec, SpecError,
    Ties, Transform,
};

/// Every key `topk_kernel!` takes, with the form its value has.
const KEYS: &[(&str, &str)] = &[
    ("k", "an integer literal, e.g. `k = 2048`"),
    ("dtype", "`f32`, `f16` or `bf16`"),
    (
        "map",
        "one of `persistent`, `kvsplit`, `rowlocal_register`, `rowlocal_streaming`, `cluster`, `staged`",
    ),
    ("split", "an integer literal, e.g. `split = 4`"),
    ("stride", "an integer literal, e.g. `stride = 128`"),
    ("rho", "a decimal literal, e.g. `rho = 1.5`"),
    (
        "rescue",
        "a decimal literal or `none`, e.g. `rescue = 1.75`",
    ),
    (
        "exact_below",
        "an integer literal, e.g. `exact_below = 24576`",
    ),
    ("propose", "`sampled` or `exact`"),
    ("coarse", "an integer literal, e.g. `coarse = 11`"),
    (
        "digits",
        "a string or an array of widths, e.g. `digits = \"11+11+10\"` or `digits = [11, 11, 10]`",
    ),
    ("threads", "an integer literal, e.g. `threads = 512`"),
    ("values", "`true` or `false`"),
    ("order", "`any` or `sorted`"),
    ("ties", "`any` or `lowest`"),
    (
        "rows",
        "one of `lengths`, `window_relative`, `window_absolute`, `decode`",
    ),
    ("transform", "one of `none`, `offset`, `paged`, `paged_rows`"),
    (
        "prior",
        "a string `\"P/R\"` of coarse bins below a row's prior, e.g. `prior = \"2/8\"`",
    ),
    ("boundary", "`true` or `false`"),
];

/// The Spec the arguments describe, validated; fields not given keep `Spec::default()`.
pub fn spec_from_args(args: &[Arg]) -> syn::Result<Spec> {
    check_keys(args)?;
    let get = |key: &str| args.iter().find(|a| a.name() == key);
    let mut spec = Spec::default();
    if let Some(a) = get("k") {
        spec.k = integer(a)?;
    }
    if let Some(a) = get("dtype") {
        spec.dtype = match a.word().as_deref() {
            Some("f32") => Dtype::F32,
            Some("f16") => Dtype::F16,
            Some("bf16") => Dtype::Bf16,
            _ => return Err(expected(a)),
        };
    }
    if let Some(a) = get("threads") {
        spec.threads = integer(a)?;
    }
    if let Some(a) = get("coarse") {
        spec.coarse_bits = integer(a)?;
    }
    spec.digits = match get("digits") {
        Some(a) => digits(a)?,
        None => Digits::default_for(spec.dtype, spec.coarse_bits),
    };
    spec.io = io(&get)?;
    spec.mapping = mapping(spec.mapping, get("map"), get("split"))?;
    spec.proposal = proposal(
        spec.proposal,
        get("propose"),
        [get("stride"), get("rho"), get("rescue"), get("exact_below")],
    )?;
    spec.validate().map_err(|e| rule_error(args, &e))?;
    Ok(spec)
}

/// Unknown keys point at the key; a repeated key points at its second occurrence.
fn check_keys(args: &[Arg]) -> syn::Result<()> {
    for (i, a) in args.iter().enumerate() {
        let name = a.name();
        if !KEYS.iter().any(|(k, _)| *k == name) {
            let keys: Vec<_> = KEYS.iter().map(|(k, _)| *k).collect();
            return Err(syn::Error::new_spanned(
                &a.key,
                format!(
                    "unknown key `{name}`; topk_kernel! takes {}",
                    keys.join(", ")
                ),
            ));
        }
        if args[..i].iter().any(|b| b.name() == name) {
            return Err(a.error(format!("`{name}` is given twice; give each key once")));
        }
    }
    Ok(())
}

/// "`key` takes <form>", spanned on the argument.
fn expected(a: &Arg) -> syn::Error {
    let name = a.name();
    let form = KEYS
        .iter()
        .find(|(k, _)| *k == name)
        .map_or("", |(_, form)| form);
    a.error(format!("`{name}` takes {form}"))
}

fn integer<T>(a: &Arg) -> syn::Result<T>
where
    T: FromStr,
    T::Err: Display,
{
    match a.literal() {
        Some(Lit::Int(lit)) => lit
            .base10_parse()
            .map_err(|e| a.error(format!("`{}`: {e}", a.name()))),
        _ => Err(expected(a)),
    }
}

/// A ratio from a float or integer literal, exact to hundredths (the text form's rule).
fn ratio(a: &Arg) -> syn::Result<Centi> {
    let digits = match a.literal() {
        Some(Lit::Float(lit)) => lit.base10_digits().to_owned(),
        Some(Lit::Int(lit)) => lit.base10_digits().to_owned(),
        _ => return Err(expected(a)),
    };
    digits
        .parse()
        .map_err(|e| a.error(format!("`{}`: {}", a.name(), reason(&e))))
}

fn digits(a: &Arg) -> syn::Result<Digits> {
    match &a.value {
        syn::Expr::Lit(syn::ExprLit {
            lit: Lit::Str(text),
            ..
        }) => text
            .value()
            .parse()
            .map_err(|e| a.error(format!("`digits`: {}", reason(&e)))),
        syn::Expr::Array(array) => {
            let mut widths = [0u8; 4];
            if array.elems.len() > widths.len() {
                return Err(a.error("`digits` take at most 4 widths"));
            }
            for (slot, elem) in widths.iter_mut().zip(&array.elems) {
                *slot = match elem {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: Lit::Int(lit), ..
                    }) => lit
                        .base10_parse()
                        .map_err(|e| a.error(format!("`digits`: {e}")))?,
                    _ => return Err(expected(a)),
                };
            }
            Ok(Digits {
                widths,
                len: array.elems.len() as u8,
            })
        }
        _ => Err(expected(a)),
    }
}

/// The interface fields; those not given keep [`Io::DEFAULT`].
fn io<'a>(get: &dyn Fn(&str) -> Option<&'a Arg>) -> syn::Result<Io> {
    let mut io = Io::DEFAULT;
    let word = |key: &str| get(key).map(|a| (a, a.word()));
    if let Some(a) = get("values") {
        io.values = match a.literal() {
            Some(Lit::Bool(b)) => b.value,
            _ => return Err(expected(a)),
        };
    }
    if let Some((a, w)) = word("order") {
        io.order = match w.as_deref() {
            Some("any") => Order::Any,
            Some("sorted") => Order::Sorted,
            _ => return Err(expected(a)),
        };
    }
    if let Some((a, w)) = word("ties") {
        io.ties = match w.as_deref() {
            Some("any") => Ties::Any,
            Some("lowest") => Ties::Lowest,
            _ => return Err(expected(a)),
        };
    }
    if let Some((a, w)) = word("rows") {
        io.rows = match w.as_deref() {
            Some("lengths") => Rows::Lengths,
            Some("window_relative") => Rows::Window { relative: true },
            Some("window_absolute") => Rows::Window { relative: false },
            Some("decode") => Rows::Decode,
            _ => return Err(expected(a)),
        };
    }
    if let Some((a, w)) = word("transform") {
        io.transform = match w.as_deref() {
            Some("none") => Transform::None,
            Some("offset") => Transform::Offset,
            Some("paged") => Transform::Paged,
            Some("paged_rows") => Transform::PagedRows,
            _ => return Err(expected(a)),
        };
    }
    if let Some(a) = get("prior") {
        io.prior = match a.literal() {
            Some(Lit::Str(s)) => s.value().parse().map_err(|e| a.error(e))?,
            _ => return Err(expected(a)),
        };
    }
    if let Some(a) = get("boundary") {
        io.boundary = match a.literal() {
            Some(Lit::Bool(b)) => b.value,
            _ => return Err(expected(a)),
        };
    }
    Ok(io)
}

/// The mapping from `map` and `split`; `split = N` alone means `map = kvsplit`.
fn mapping(default: Mapping, map: Option<&Arg>, split: Option<&Arg>) -> syn::Result<Mapping> {
    // `None` for `map = kvsplit`, whose split count comes from `split`.
    let named = match map {
        None => None,
        Some(a) => match a.word().as_deref() {
            Some("persistent") => Some(Mapping::Persistent),
            Some("kvsplit") => None,
            Some("rowlocal_register") => Some(Mapping::RowLocal(RowLocalVariant::Register)),
            Some("rowlocal_streaming") => Some(Mapping::RowLocal(RowLocalVariant::Streaming)),
            Some("cluster") => Some(Mapping::Cluster { ctas: 8 }),
            Some("staged") => Some(Mapping::Staged),
            _ => return Err(expected(a)),
        },
    };
    match (named, map, split) {
        (None, None, None) => Ok(default),
        // `map = kvsplit` (or no map at all) with a split count.
        (None, _, Some(s)) => Ok(Mapping::KvSplit {
            splits: integer(s)?,
        }),
        (None, Some(m), None) => Err(m.error("`map = kvsplit` needs `split = 2`, `4` or `8`")),
        (Some(_), _, Some(s)) => {
            Err(s
                .error("`split` applies to `map = kvsplit` only; remove it or set `map = kvsplit`"))
        }
        (Some(mapping), _, None) => Ok(mapping),
    }
}

/// The proposal from `propose` and the sampled parameters `[stride, rho, rescue, exact_below]`;
/// any of the parameters alone means `propose = sampled`, with the others from the default
/// proposal.
fn proposal(
    default: Proposal,
    propose: Option<&Arg>,
    params: [Option<&Arg>; 4],
) -> syn::Result<Proposal> {
    let sampled = match propose {
        None => matches!(default, Proposal::Sampled { .. }) || params.iter().any(Option::is_some),
        Some(a) => match a.word().as_deref() {
            Some("sampled") => true,
            Some("exact") => false,
            _ => return Err(expected(a)),
        },
    };
    let [stride, rho, rescue, exact_below] = params;
    if !sampled {
        return match params.into_iter().flatten().next() {
            Some(a) => Err(a.error(format!(
                "`{}` applies to `propose = sampled` only; remove it, or remove `propose = exact`",
                a.name()
            ))),
            None => Ok(Proposal::Exact),
        };
    }
    let (mut s, mut r, mut r1, mut below) = sampled_defaults(default);
    if let Some(a) = stride {
        s = integer(a)?;
    }
    if let Some(a) = rho {
        r = ratio(a)?;
    }
    if let Some(a) = rescue {
        r1 = match a.word().as_deref() {
            Some("none") => None,
            _ => Some(ratio(a)?),
        };
    }
    if let Some(a) = exact_below {
        below = integer(a)?;
    }
    Ok(Proposal::Sampled {
        stride: s,
        rho: r,
        rescue: r1,
        exact_below: below,
    })
}

/// Stride, rho, rescue and exact_below of the default proposal, or the paper's stride-128
/// primary-only view at 1.5 K should the default ever become exact.
fn sampled_defaults(default: Proposal) -> (u32, Centi, Option<Centi>, u32) {
    match default {
        Proposal::Sampled {
            stride,
            rho,
            rescue,
            exact_below,
        } => (stride, rho, rescue, exact_below),
        Proposal::Exact => (128, Centi(150), None, 0),
    }
}

/// A broken validation rule, spanned on the argument that set the field. For a rule over two
/// fields, the one written later; a field given only through a related key (`split` for `map`,
/// `propose` for `stride`) points at that key; a rule broken by defaults alone points at the call.
fn rule_error(args: &[Arg], err: &SpecError) -> syn::Error {
    let fields = err.fields();
    let latest = |keys: &dyn Fn(&str) -> &'static [&'static str]| {
        args.iter()
            .rev()
            .find(|a| fields.iter().any(|f| keys(f).contains(&a.name().as_str())))
    };
    let direct = |field: &str| -> &'static [&'static str] {
        match field {
            "k" => &["k"],
            "dtype" => &["dtype"],
            "map" => &["map", "split"],
            "propose" => &["propose"],
            "stride" => &["stride"],
            "rho" => &["rho"],
            "rescue" => &["rescue"],
            "exact_below" => &["exact_below"],
            "coarse" => &["coarse"],
            "digits" => &["digits"],
            "threads" => &["threads"],
            "values" => &["values"],
            "order" => &["order"],
            "ties" => &["ties"],
            "rows" => &["rows"],
            "transform" => &["transform"],
            "prior" => &["prior"],
            "boundary" => &["boundary"],
            _ => &[],
        }
    };
    let related = |field: &str| -> &'static [&'static str] {
        match field {
            "stride" | "rho" | "rescue" => &["propose"],
            "propose" => &["stride", "rho", "rescue", "exact_below"],
            _ => &[],
        }
    };
    match latest(&direct).or_else(|| latest(&related)) {
        Some(a) => a.error(err),
        None => syn::Error::new(Span::call_site(), err),
    }
}

/// The reason of a parse error, without the text-form wrapper.
fn reason(err: &SpecError) -> String {
    match err {
        SpecError::Parse { text, reason } => format!("`{text}`: {reason}"),
        other => other.to_string(),
    }
}
