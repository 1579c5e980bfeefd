//! The `.npy` header: magic, version, and the Python dict literal that describes the array
//! (`{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }`).

use crate::io::ElementType;

pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Data type named by a header's `descr`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Descr {
    /// A supported type in little-endian (or this host's native) order.
    Supported(ElementType),
    /// A big-endian multi-byte type; the text is the descr as written.
    BigEndian(String),
    /// Any other type: the text is numpy's name for it when known, else the descr itself.
    Other(String),
}

/// A parsed `.npy` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub descr: Descr,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
    /// Offset of the first data byte from the start of the file.
    pub data_offset: usize,
}

/// Length of the fixed prefix: magic, two version bytes, and a 2-byte (v1) or 4-byte (v2, v3)
/// header length.
pub(crate) fn prefix_len(version_major: u8) -> Result<usize, String> {
    match version_major {
        1 => Ok(10),
        2 | 3 => Ok(12),
        v => Err(format!(
            "unsupported format version {v}.x; versions 1 to 3 are read"
        )),
    }
}

/// Parse the header from the first bytes of a file. `bytes` must hold the whole header;
/// [`header_len`] tells how many bytes that is.
pub fn parse(bytes: &[u8]) -> Result<Header, String> {
    let total = header_len(bytes)?;
    if bytes.len() < total {
        return Err("the header is cut short".into());
    }
    let prefix = prefix_len(bytes[6])?;
    let text = &bytes[prefix..total];
    // Version 3 allows UTF-8 (field names); versions 1 and 2 are Latin-1, i.e. ASCII here.
    let text = std::str::from_utf8(text).map_err(|_| "the header is not text".to_string())?;
    let dict = Literal::parse_document(text)?;
    let Literal::Dict(entries) = dict else {
        return Err("the header is not a dict".into());
    };
    let field = |name: &str| {
        entries
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("the header has no '{name}' field"))
    };
    let descr = match field("descr")? {
        Literal::Str(s) => parse_descr(s)?,
        Literal::List(_) => Descr::Other("a structured dtype".into()),
        _ => return Err("'descr' is not a string".into()),
    };
    let fortran_order = match field("fortran_order")? {
        Literal::Bool(b) => *b,
        _ => return Err("'fortran_order' is not True or False".into()),
    };
    let shape = match field("shape")? {
        Literal::Tuple(items) => items
            .iter()
            .map(|d| match d {
                Literal::Int(n) => {
                    usize::try_from(*n).map_err(|_| "a dimension is too large".to_string())
                }
                _ => Err("'shape' holds a value that is not an integer".to_string()),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err("'shape' is not a tuple".into()),
    };
    Ok(Header {
        descr,
        fortran_order,
        shape,
        data_offset: total,
    })
}

/// Total header length (prefix + dict text) from the first 12 bytes of a file.
pub fn header_len(bytes: &[u8]) -> Result<usize, String> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("the file does not start with the .npy magic".into());
    }
    let prefix = prefix_len(bytes[6])?;
    if bytes.len() < prefix {
        return Err("the header is cut short".into());
    }
    let len = if prefix == 10 {
        u16::from_le_bytes([bytes[8], bytes[9]]) as usize
    } else {
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize
    };
    Ok(prefix + len)
}

fn parse_descr(descr: &str) -> Result<Descr, String> {
    let (order, code) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '=' | '|')) => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let size: usize = code
        .get(1..)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("unknown descr '{descr}'"))?;
    let kind = code.chars().next().unwrap_or('?');
    // '=' is the writer's native order; like numpy, read it as this host's order. '|' means
    // "not applicable" and only makes sense for one-byte types.
    let little = match order {
        '<' => true,
        '>' => size == 1,
        '=' => cfg!(target_endian = "little") || size == 1,
        _ => size == 1,
    };
    let supported = match (kind, size) {
        ('f', 4) => Some(ElementType::F32),
        ('i', 4) => Some(ElementType::I32),
        ('i', 8) => Some(ElementType::I64),
        ('f', 2) => Some(ElementType::F16),
        ('u', 2) => Some(ElementType::U16),
        _ => None,
    };
    Ok(match supported {
        Some(_) if order == '|' => Descr::Other(format!(
            "'{descr}' (a byte order of '|' is ambiguous for a {size}-byte type)"
        )),
        Some(_) if !little => Descr::BigEndian(descr.to_string()),
        Some(t) => Descr::Supported(t),
        None => Descr::Other(numpy_type_name(kind, size).unwrap_or_else(|| format!("'{descr}'"))),
    })
}

fn numpy_type_name(kind: char, size: usize) -> Option<String> {
    let family = match kind {
        'f' => "float",
        'i' => "int",
        'u' => "uint",
        'c' => "complex",
        'b' => return Some("bool".into()),
        _ => return None,
    };
    Some(format!("{family}{}", size * 8))
}

/// Header bytes for an array, padded so the data starts at a multiple of 64 bytes.
pub fn encode(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims = match shape {
        [one] => format!("{one},"),
        _ => shape
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}");
    let padded = |prefix: usize| (prefix + dict.len() + 1).div_ceil(64) * 64;
    let fits_v1 = padded(10) - 10 <= u16::MAX as usize;
    let prefix = if fits_v1 { 10 } else { 12 };
    let total = padded(prefix);
    let text_len = total - prefix;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    if fits_v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(text_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(text_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(total - 1, b' ');
    out.push(b'\n');
    out
}

/// The subset of Python literals that `.npy` headers use.
#[derive(Clone, Debug, PartialEq)]
enum Literal {
    Str(String),
    Bool(bool),
    Int(u64),
    None,
    Tuple(Vec<Literal>),
    List(Vec<Literal>),
    Dict(Vec<(String, Literal)>),
}

impl Literal {
    fn parse_document(text: &str) -> Result<Literal, String> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let value = p.value(0)?;
        p.skip_space();
        if p.i != p.s.len() {
            return Err("unexpected text after the header dict".into());
        }
        Ok(value)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

/// Nesting deeper than this is not a header numpy writes; stop before the stack does.
const MAX_DEPTH: usize = 16;

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", c as char, self.i))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Literal, String> {
        if depth > MAX_DEPTH {
            return Err("the header nests too deeply".into());
        }
        match self.peek() {
            Some(b'{') => self.dict(depth),
            Some(b'(') => self.sequence(b')', depth).map(Literal::Tuple),
            Some(b'[') => self.sequence(b']', depth).map(Literal::List),
            Some(q @ (b'\'' | b'"')) => self.string(q).map(Literal::Str),
            Some(c) if c.is_ascii_digit() => self.int(),
            Some(c) if c.is_ascii_alphabetic() => self.word(),
            Some(c) => Err(format!("unexpected '{}' at byte {}", c as char, self.i)),
            None => Err("the header ends early".into()),
        }
    }

    fn dict(&mut self, depth: usize) -> Result<Literal, String> {
        self.expect(b'{')?;
        let mut entries = Vec::new();
        loop {
            match self.peek() {
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Literal::Dict(entries));
                }
                Some(q @ (b'\'' | b'"')) => {
                    let key = self.string(q)?;
                    self.expect(b':')?;
                    let value = self.value(depth + 1)?;
                    entries.push((key, value));
                    if self.peek() == Some(b',') {
                        self.i += 1;
                    } else if self.peek() != Some(b'}') {
                        return Err(format!("expected ',' or '}}' at byte {}", self.i));
                    }
                }
                _ => return Err(format!("expected a quoted key at byte {}", self.i)),
            }
        }
    }

    fn sequence(&mut self, close: u8, depth: usize) -> Result<Vec<Literal>, String> {
        self.i += 1; // the opening bracket, already peeked
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.i += 1;
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {}
                _ => {
                    return Err(format!(
                        "expected ',' or '{}' at byte {}",
                        close as char, self.i
                    ))
                }
            }
        }
    }

    fn string(&mut self, quote: u8) -> Result<String, String> {
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != quote {
            if self.s[self.i] == b'\\' {
                return Err("escape sequences are not expected in a header".into());
            }
            self.i += 1;
        }
        if self.i == self.s.len() {
            return Err("a string is not closed".into());
        }
        let text = std::str::from_utf8(&self.s[start..self.i])
            .map_err(|_| "a string is not text".to_string())?
            .to_string();
        self.i += 1;
        Ok(text)
    }

    fn int(&mut self) -> Result<Literal, String> {
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        let digits = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII digits");
        let n = digits
            .parse::<u64>()
            .map_err(|_| format!("the integer {digits} is too large"))?;
        // Headers written by Python 2 mark long integers with an `L`.
        if self.s.get(self.i) == Some(&b'L') {
            self.i += 1;
        }
        Ok(Literal::Int(n))
    }

    fn word(&mut self) -> Result<Literal, String> {
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_alphanumeric() {
            self.i += 1;
        }
        match &self.s[start..self.i] {
            b"True" => Ok(Literal::Bool(true)),
            b"False" => Ok(Literal::Bool(false)),
            b"None" => Ok(Literal::None),
            w => Err(format!("unexpected word '{}'", String::from_utf8_lossy(w))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(dict: &str) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        out.extend_from_slice(dict.as_bytes());
        out
    }

    #[test]
    fn encoded_headers_parse_back_and_align_the_data() {
        for shape in [vec![], vec![7], vec![3, 4], vec![1 << 40, 2]] {
            for t in [
                ElementType::F32,
                ElementType::I32,
                ElementType::I64,
                ElementType::F16,
                ElementType::U16,
            ] {
                let bytes = encode(t.npy_descr(), &shape);
                assert_eq!(bytes.len() % 64, 0);
                let h = parse(&bytes).unwrap();
                assert_eq!(h.descr, Descr::Supported(t));
                assert_eq!(h.shape, shape);
                assert!(!h.fortran_order);
                assert_eq!(h.data_offset, bytes.len());
            }
        }
    }

    #[test]
    fn numpy_spellings_are_understood() {
        let h = parse(&header(
            "{\"descr\":\"<i8\",\"shape\":(2L,3L),\"fortran_order\":True}\n",
        ))
        .unwrap();
        assert_eq!(h.descr, Descr::Supported(ElementType::I64));
        assert_eq!(h.shape, vec![2, 3]);
        assert!(h.fortran_order);
    }

    #[test]
    fn byte_orders_are_told_apart() {
        assert_eq!(parse_descr(">f4").unwrap(), Descr::BigEndian(">f4".into()));
        assert!(matches!(parse_descr("|f4").unwrap(), Descr::Other(_)));
        assert_eq!(parse_descr("<f8").unwrap(), Descr::Other("float64".into()));
        assert_eq!(
            parse_descr("<f2").unwrap(),
            Descr::Supported(ElementType::F16)
        );
        assert_eq!(parse_descr(">f2").unwrap(), Descr::BigEndian(">f2".into()));
        // bfloat16 has no descr: a .npy of it is its uint16 bit patterns.
        assert_eq!(
            encode(ElementType::Bf16.npy_descr(), &[2])[..],
            encode("<u2", &[2])[..]
        );
        assert_eq!(parse_descr("|u1").unwrap(), Descr::Other("uint8".into()));
        #[cfg(target_endian = "little")]
        assert_eq!(
            parse_descr("=i4").unwrap(),
            Descr::Supported(ElementType::I32)
        );
    }

    #[test]
    fn malformed_headers_are_errors_not_panics() {
        for dict in [
            "",
            "{",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 'a')}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing",
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        ] {
            assert!(parse(&header(dict)).is_err(), "{dict:?} parsed");
        }
        let mut short = header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}");
        short.truncate(30);
        assert!(parse(&short).is_err());
        assert!(parse(b"\x93NUMPY\x09\x00\x00\x00").is_err());
    }
}
