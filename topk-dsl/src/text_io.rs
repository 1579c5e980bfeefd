//! The text form of a spec's interface fields ([`Io`]): `values=true`, `order=sorted`,
//! `ties=lowest`, `rows=window(relative)`, `rows=window(absolute)`, `rows=decode`,
//! `transform=offset`, `transform=paged`, `transform=paged(rows)`, `prior=P/R` and
//! `boundary=true`. Each is written, after every other field and in that order, only when it is
//! not the default, so every spec of the plain operator keeps its name (and kernel hash).

use crate::text::call;
use crate::{Io, Order, Prior, Rows, SpecError, Ties, Transform};
use std::fmt;
use std::str::FromStr;

/// Append the fields of `io` that differ from [`Io::DEFAULT`].
pub(crate) fn write_io(f: &mut fmt::Formatter<'_>, io: &Io) -> fmt::Result {
    let default = Io::DEFAULT;
    if io.values != default.values {
        write!(f, ",values={}", io.values)?;
    }
    if io.order != default.order {
        write!(f, ",order={}", io.order)?;
    }
    if io.ties != default.ties {
        write!(f, ",ties={}", io.ties)?;
    }
    if io.rows != default.rows {
        write!(f, ",rows={}", io.rows)?;
    }
    if io.transform != default.transform {
        write!(f, ",transform={}", io.transform)?;
    }
    if io.prior != default.prior {
        write!(f, ",prior={}", io.prior)?;
    }
    if io.boundary != default.boundary {
        write!(f, ",boundary={}", io.boundary)?;
    }
    Ok(())
}

/// Set the interface field `key` of `io` from `value`; `Ok(false)` when `key` is not one.
pub(crate) fn parse_io_field(io: &mut Io, key: &str, value: &str) -> Result<bool, SpecError> {
    match key {
        "values" => io.values = parse_bool(value, "values")?,
        "order" => io.order = value.parse()?,
        "ties" => io.ties = value.parse()?,
        "rows" => io.rows = value.parse()?,
        "transform" => io.transform = value.parse()?,
        "prior" => io.prior = value.parse()?,
        "boundary" => io.boundary = parse_bool(value, "boundary")?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn parse_bool(value: &str, field: &str) -> Result<bool, SpecError> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(SpecError::parse(
            other,
            format!("`{field}` takes true or false"),
        )),
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Order::Any => "any",
            Order::Sorted => "sorted",
        })
    }
}

impl FromStr for Order {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "any" => Ok(Order::Any),
            "sorted" => Ok(Order::Sorted),
            other => Err(SpecError::parse(
                other,
                "unknown order; expected any or sorted (descending by value)",
            )),
        }
    }
}

impl fmt::Display for Ties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ties::Any => "any",
            Ties::Lowest => "lowest",
        })
    }
}

impl FromStr for Ties {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "any" => Ok(Ties::Any),
            "lowest" => Ok(Ties::Lowest),
            other => Err(SpecError::parse(
                other,
                "unknown tie rule; expected any or lowest (the lowest indices win: deterministic)",
            )),
        }
    }
}

impl fmt::Display for Rows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rows::Lengths => "lengths",
            Rows::Window { relative: true } => "window(relative)",
            Rows::Window { relative: false } => "window(absolute)",
            Rows::Decode => "decode",
        })
    }
}

impl FromStr for Rows {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        match call(s) {
            ("lengths", None) => Ok(Rows::Lengths),
            ("window", Some("relative")) => Ok(Rows::Window { relative: true }),
            ("window", Some("absolute")) => Ok(Rows::Window { relative: false }),
            ("window", _) => Err(SpecError::parse(
                s,
                "say how window indices are written: window(relative) (from the window's start, \
                 as vLLM, SGLang and FlashInfer do) or window(absolute) (positions in the row)",
            )),
            ("decode", None) => Ok(Rows::Decode),
            _ => Err(SpecError::parse(
                s,
                "unknown row source; expected lengths, window(relative), window(absolute) or decode",
            )),
        }
    }
}

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Transform::None => "none",
            Transform::Offset => "offset",
            Transform::Paged => "paged",
            Transform::PagedRows => "paged(rows)",
        })
    }
}

impl FromStr for Transform {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        match call(s) {
            ("none", None) => Ok(Transform::None),
            ("offset", None) => Ok(Transform::Offset),
            ("paged", None) => Ok(Transform::Paged),
            ("paged", Some("rows")) => Ok(Transform::PagedRows),
            _ => Err(SpecError::parse(
                s,
                "unknown transform; expected none, offset (index + offset[r]), paged (through a \
                 page table) or paged(rows) (through a page table's rows by a row map)",
            )),
        }
    }
}

impl fmt::Display for Prior {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prior::None => f.write_str("none"),
            Prior::Bins { primary, rescue } => write!(f, "{primary}/{rescue}"),
        }
    }
}

impl FromStr for Prior {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s == "none" {
            return Ok(Prior::None);
        }
        let bins = |part: &str| part.trim().parse::<u8>().ok();
        match s.split_once('/').map(|(p, r)| (bins(p), bins(r))) {
            Some((Some(primary), Some(rescue))) => Ok(Prior::Bins { primary, rescue }),
            _ => Err(SpecError::parse(
                s,
                "expected none or P/R: the coarse bins below a row's prior boundary that its \
                 cutoff (P) and its rescue band (R >= P) reach, e.g. prior=2/8",
            )),
        }
    }
}
