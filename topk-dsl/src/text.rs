//! Canonical text form of a Spec, for example
//! `k=2048,dtype=f32,map=persistent,propose=sampled(stride=128,rho=1.5,rescue=1.75),coarse=11,digits=11+11+10,threads=512`.
//!
//! [`Display`](fmt::Display) always writes every field, in that order, without spaces, with
//! ratios in their shortest decimal form; it is the one name of a Spec. The exceptions are
//! `view=run(R)`, `stagger=US`, `tail=RHO@ROWS` and `prefetch=B`, written last and each only
//! when set (R > 1, US > 0, ROWS > 0, B > 0), and
//! `exact_below=L` inside `sampled(...)`, written only when L > 0, and the interface fields
//! (`values`, `order`, `ties`, `rows`, `transform`, `prior`, `boundary`; `crate::text_io`), written last and only
//! when not the default, so that every spec without them keeps the name (and kernel hash) it
//! had before they existed. [`Spec::parse`] is lenient: fields in any order, spaces around
//! tokens, omitted fields from `Spec::default()` (but for `digits`, which a 16-bit `dtype` fills
//! with its own default, [`Digits::default_for`]). Parsing checks syntax only;
//! [`Spec::validate`] checks the rules.

use crate::text_io::{parse_io_field, write_io};
use crate::{Centi, Digits, Dtype, Mapping, Proposal, RowLocalVariant, Spec, SpecError};
use std::fmt;
use std::str::FromStr;

const SPEC_KEYS: &str = "k, dtype, map, propose, coarse, digits, threads, view, stagger, tail, \
     prefetch, values, order, ties, rows, transform, prior, boundary";
const SAMPLED_KEYS: &str = "stride, rho, rescue, exact_below";

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "k={},dtype={},map={},propose={},coarse={},digits={},threads={}",
            self.k,
            self.dtype,
            self.mapping,
            self.proposal,
            self.coarse_bits,
            self.digits,
            self.threads
        )?;
        if self.view_run != 1 {
            write!(f, ",view=run({})", self.view_run)?;
        }
        if self.stagger_us != 0 {
            write!(f, ",stagger={}", self.stagger_us)?;
        }
        if self.tail_rows != 0 {
            write!(f, ",tail={}@{}", self.tail_rho, self.tail_rows)?;
        }
        if self.prefetch != 0 {
            write!(f, ",prefetch={}", self.prefetch)?;
        }
        write_io(f, &self.io)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dtype::F32 => f.write_str("f32"),
            Dtype::F16 => f.write_str("f16"),
            Dtype::Bf16 => f.write_str("bf16"),
        }
    }
}

impl fmt::Display for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mapping::Persistent => f.write_str("persistent"),
            Mapping::KvSplit { splits } => write!(f, "kvsplit({splits})"),
            Mapping::RowLocal(RowLocalVariant::Register) => f.write_str("rowlocal(register)"),
            Mapping::RowLocal(RowLocalVariant::Streaming) => f.write_str("rowlocal(streaming)"),
            Mapping::Cluster { ctas } => write!(f, "cluster({ctas})"),
            Mapping::Staged => f.write_str("staged"),
        }
    }
}

impl fmt::Display for Proposal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Proposal::Sampled {
                stride,
                rho,
                rescue,
                exact_below,
            } => {
                write!(f, "sampled(stride={stride},rho={rho}")?;
                if let Some(rescue) = rescue {
                    write!(f, ",rescue={rescue}")?;
                }
                if *exact_below > 0 {
                    write!(f, ",exact_below={exact_below}")?;
                }
                f.write_str(")")
            }
            Proposal::Exact => f.write_str("exact"),
        }
    }
}

impl fmt::Display for Centi {
    /// Shortest decimal form: 150 -> `1.5`, 175 -> `1.75`, 200 -> `2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = (self.0 / 100, self.0 % 100);
        match frac {
            0 => write!(f, "{whole}"),
            _ if frac % 10 == 0 => write!(f, "{whole}.{}", frac / 10),
            _ => write!(f, "{whole}.{frac:02}"),
        }
    }
}

impl fmt::Display for Digits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Not `as_slice`: a hand-built value with `len > 4` must still print, not panic.
        for (i, w) in self.widths.iter().take(self.len as usize).enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{w}")?;
        }
        Ok(())
    }
}

impl Spec {
    /// Parse the text form. Fields may come in any order with spaces around tokens; omitted
    /// fields take the values of `Spec::default()`, but for `digits`, which takes the default
    /// of the spec's dtype and coarse width ([`Digits::default_for`]: `11+11+10` for f32). Unknown keys, repeated keys and malformed
    /// values are a [`SpecError::Parse`] naming the offending token. The result is not
    /// validated: call [`Spec::validate`] before using it.
    pub fn parse(text: &str) -> Result<Spec, SpecError> {
        let mut spec = Spec::default();
        if text.trim().is_empty() {
            return Ok(spec);
        }
        let mut seen: Vec<&str> = Vec::new();
        for item in split_top_level(text)? {
            let (key, value) = key_value(item)?;
            if seen.contains(&key) {
                return Err(SpecError::parse(
                    item,
                    format!("`{key}` is given twice; give each field once"),
                ));
            }
            seen.push(key);
            match key {
                "k" => spec.k = parse_uint(value, "k")?,
                "dtype" => spec.dtype = value.parse()?,
                "map" => spec.mapping = value.parse()?,
                "propose" => spec.proposal = value.parse()?,
                "coarse" => spec.coarse_bits = parse_uint(value, "coarse")?,
                "digits" => spec.digits = value.parse()?,
                "threads" => spec.threads = parse_uint(value, "threads")?,
                "view" => spec.view_run = parse_view(value)?,
                "stagger" => spec.stagger_us = parse_uint(value, "stagger")?,
                "tail" => (spec.tail_rho, spec.tail_rows) = parse_tail(value)?,
                "prefetch" => spec.prefetch = parse_uint(value, "prefetch")?,
                _ if parse_io_field(&mut spec.io, key, value)? => {}
                _ => {
                    return Err(SpecError::parse(
                        item,
                        format!("unknown key `{key}`; the keys are {SPEC_KEYS}"),
                    ))
                }
            }
        }
        if !seen.contains(&"digits") {
            spec.digits = Digits::default_for(spec.dtype, spec.coarse_bits);
        }
        Ok(spec)
    }
}

impl FromStr for Spec {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Spec::parse(s)
    }
}

impl FromStr for Dtype {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "f32" => Ok(Dtype::F32),
            "f16" => Ok(Dtype::F16),
            "bf16" => Ok(Dtype::Bf16),
            other => Err(SpecError::parse(
                other,
                "unknown dtype; the score dtypes are f32, f16 and bf16",
            )),
        }
    }
}

impl FromStr for Mapping {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let mapping = match call(s) {
            ("persistent", None) => Mapping::Persistent,
            ("kvsplit", Some(arg)) => Mapping::KvSplit {
                splits: parse_uint(arg, "kvsplit")?,
            },
            ("rowlocal", Some("register")) => Mapping::RowLocal(RowLocalVariant::Register),
            ("rowlocal", Some("streaming")) => Mapping::RowLocal(RowLocalVariant::Streaming),
            ("cluster", Some(arg)) => Mapping::Cluster {
                ctas: parse_uint(arg, "cluster")?,
            },
            ("staged", None) => Mapping::Staged,
            _ => {
                return Err(SpecError::parse(
                    s,
                    "unknown mapping; expected persistent, kvsplit(2|4|8), \
                     rowlocal(register|streaming), cluster(8|16) or staged",
                ))
            }
        };
        Ok(mapping)
    }
}

impl FromStr for Proposal {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        match call(s) {
            ("exact", None) => Ok(Proposal::Exact),
            ("sampled", Some(args)) => parse_sampled(s, args),
            _ => Err(SpecError::parse(
                s,
                "unknown proposal; expected exact or sampled(stride=S,rho=R[,rescue=R1][,exact_below=L])",
            )),
        }
    }
}

/// `view=stride` (the paper's view, the default) or `view=run(R)`.
fn parse_view(value: &str) -> Result<u8, SpecError> {
    match call(value.trim()) {
        ("stride", None) => Ok(1),
        ("run", Some(arg)) => parse_uint(arg, "view"),
        _ => Err(SpecError::parse(
            value,
            "unknown view; expected stride or run(R) (R contiguous scores per group)",
        )),
    }
}

/// The arguments of `sampled(...)`: `stride` and `rho` are required, `rescue` is optional
/// (`rescue=none` is accepted and means the same as leaving it out), and so is `exact_below`
/// (0 when left out).
fn parse_sampled(whole: &str, args: &str) -> Result<Proposal, SpecError> {
    let (mut stride, mut rho, mut rescue, mut exact_below) = (None, None, None, 0);
    let mut seen: Vec<&str> = Vec::new();
    for item in split_top_level(args)? {
        let (key, value) = key_value(item)?;
        if seen.contains(&key) {
            return Err(SpecError::parse(
                item,
                format!("`{key}` is given twice inside sampled(...)"),
            ));
        }
        seen.push(key);
        match key {
            "stride" => stride = Some(parse_uint(value, "stride")?),
            "rho" => rho = Some(value.parse()?),
            "rescue" if value == "none" => {}
            "rescue" => rescue = Some(value.parse()?),
            "exact_below" => exact_below = parse_uint(value, "exact_below")?,
            _ => {
                return Err(SpecError::parse(
                    item,
                    format!("unknown key `{key}` inside sampled(...); the keys are {SAMPLED_KEYS}"),
                ))
            }
        }
    }
    match (stride, rho) {
        (Some(stride), Some(rho)) => Ok(Proposal::Sampled {
            stride,
            rho,
            rescue,
            exact_below,
        }),
        _ => Err(SpecError::parse(
            whole,
            "sampled(...) needs both stride=S and rho=R",
        )),
    }
}

impl FromStr for Digits {
    type Err = SpecError;
    /// `11+11+10`: one to four widths, most significant first.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let mut widths = [0u8; 4];
        let mut len = 0usize;
        for part in s.split('+') {
            if len == widths.len() {
                return Err(SpecError::parse(s, "digits take at most 4 widths"));
            }
            widths[len] = parse_uint(part, "digits")?;
            len += 1;
        }
        Ok(Digits {
            widths,
            len: len as u8,
        })
    }
}

impl FromStr for Centi {
    type Err = SpecError;
    /// A non-negative decimal with at most two fractional digits: `1.5`, `1.75`, `2`, `1.50`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let bad = |reason: &str| SpecError::parse(s, reason);
        let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
        let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !all_digits(whole) || !all_digits(frac) || s.ends_with('.') {
            return Err(bad("expected a decimal ratio such as 1.5"));
        }
        if frac.len() > 2 {
            return Err(bad(
                "ratios have at most two decimal places (hundredths), e.g. 1.75",
            ));
        }
        let frac_hundredths = match frac.len() {
            0 => 0,
            1 => u64::from(frac.as_bytes()[0] - b'0') * 10,
            _ => frac.parse::<u64>().unwrap_or(0),
        };
        whole
            .parse::<u64>()
            .ok()
            .and_then(|w| w.checked_mul(100))
            .and_then(|w| u16::try_from(w + frac_hundredths).ok())
            .map(Centi)
            .ok_or_else(|| bad("ratio too large; at most 655.35"))
    }
}

/// Split on commas outside parentheses; every piece is trimmed and must be non-empty.
fn split_top_level(text: &str) -> Result<Vec<&str>, SpecError> {
    let mut pieces = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| SpecError::parse(text.trim(), "unbalanced `)`"))?;
            }
            ',' if depth == 0 => {
                pieces.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(SpecError::parse(text.trim(), "unclosed `(`"));
    }
    pieces.push(&text[start..]);
    pieces
        .into_iter()
        .map(|p| {
            let p = p.trim();
            if p.is_empty() {
                Err(SpecError::parse(
                    text.trim(),
                    "empty field; remove the stray comma",
                ))
            } else {
                Ok(p)
            }
        })
        .collect()
}

/// `key = value`, split at the first `=`, both sides trimmed.
fn key_value(item: &str) -> Result<(&str, &str), SpecError> {
    match item.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() && !value.trim().is_empty() => {
            Ok((key.trim(), value.trim()))
        }
        _ => Err(SpecError::parse(item, "expected key=value")),
    }
}

/// `name(args)` -> (`name`, Some(`args`)); anything else -> (whole, None). Both trimmed.
pub(crate) fn call(s: &str) -> (&str, Option<&str>) {
    match (s.find('('), s.strip_suffix(')')) {
        (Some(open), Some(inner)) => (s[..open].trim(), Some(inner[open + 1..].trim())),
        _ => (s, None),
    }
}

/// `tail=RHO@ROWS`: the margin of a call's last ROWS rows.
fn parse_tail(value: &str) -> Result<(Centi, u32), SpecError> {
    match value.split_once('@') {
        Some((rho, rows)) => {
            let rows = parse_uint(rows, "tail")?;
            if rows == 0 {
                // Not representable: the text names a tail only with its rows.
                return Err(SpecError::parse(
                    value,
                    "`tail` covers at least one row; leave it out for no tail margin",
                ));
            }
            Ok((rho.parse()?, rows))
        }
        None => Err(SpecError::parse(
            value,
            "`tail` takes RHO@ROWS, the margin of a call's last ROWS rows (e.g. tail=2@264)",
        )),
    }
}

/// A non-negative decimal integer that fits `T`; `field` names it in the error.
fn parse_uint<T: TryFrom<u64>>(token: &str, field: &str) -> Result<T, SpecError> {
    let token = token.trim();
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SpecError::parse(
            token,
            format!("`{field}` takes a non-negative decimal integer"),
        ));
    }
    token
        .parse::<u64>()
        .ok()
        .and_then(|v| T::try_from(v).ok())
        .ok_or_else(|| SpecError::parse(token, format!("`{field}` value is too large")))
}
