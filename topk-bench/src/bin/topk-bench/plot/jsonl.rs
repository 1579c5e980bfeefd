//! Measurement lines of the GPU bench scripts: one JSON object per shape, either a whole
//! `.jsonl` file or the lines of a text log that start with `{`.

use super::canvas;
use super::results::positive;
use serde::Deserialize;
use std::path::Path;

/// One timed shape of one policy, variant or rank count.
#[derive(Deserialize)]
pub struct Measurement {
    /// What was varied (`rho=1.5`, `kvsplit4`, `nccl`), from the field the script adds.
    #[serde(skip)]
    pub label: String,
    pub profile: String,
    pub rows: u64,
    pub width: u64,
    #[serde(default)]
    pub k: Option<u64>,
    #[serde(default)]
    pub ranks: Option<u64>,
    #[serde(default)]
    pub median_ms: Option<f64>,
    #[serde(default)]
    pub floor_ms: Option<f64>,
    #[serde(default)]
    pub exact: Option<bool>,
    #[serde(default)]
    pub spec: Option<String>,
}

/// Which lines of a file hold measurements.
#[derive(Clone, Copy)]
pub enum Lines {
    /// Every non-blank line (`.jsonl`).
    All,
    /// Lines starting with `{`; the rest is a table for people.
    Braced,
}

/// Where a file of measurements comes from, for error messages and chart notes.
pub struct Source<'a> {
    /// The field naming what was varied (`ablation`, `variant`, `how`).
    pub label: &'a str,
    pub lines: Lines,
    /// The script that writes the file.
    pub writer: &'a str,
}

impl Measurement {
    /// `2048x256K`
    pub fn shape(&self) -> String {
        format!("{}x{}", self.rows, canvas::width_label(self.width))
    }

    /// The median time when the outputs were verified exact, or why it cannot be drawn.
    pub fn ms(&self) -> Result<f64, &'static str> {
        match self.exact {
            Some(true) => positive(self.median_ms).ok_or("no time"),
            Some(false) => Err("inexact"),
            None => Err("not verified"),
        }
    }

    /// The exact time over the one-read floor, or why there is none.
    pub fn x_floor(&self) -> Result<f64, &'static str> {
        let ms = self.ms()?;
        Ok(ms / positive(self.floor_ms).ok_or("no floor")?)
    }
}

/// The measurements of `path`, or nothing when the file does not exist; a line that is not a
/// measurement is an error naming the file and the line.
pub fn read_optional(path: &Path, source: &Source) -> Result<Option<Vec<Measurement>>, String> {
    if !path.exists() {
        return Ok(None);
    }
    read(path, source).map(Some)
}

pub fn read(path: &Path, source: &Source) -> Result<Vec<Measurement>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        let wanted = match source.lines {
            Lines::All => !line.is_empty(),
            Lines::Braced => line.starts_with('{'),
        };
        if wanted {
            found.push(parse(line, source.label).map_err(|what| {
                format!(
                    "`{}` line {}: {what}; write it again with {}",
                    path.display(),
                    i + 1,
                    source.writer
                )
            })?);
        }
    }
    Ok(found)
}

fn parse(line: &str, label: &str) -> Result<Measurement, String> {
    let value: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("not a JSON object ({e})"))?;
    let name = value
        .get(label)
        .and_then(|v| v.as_str())
        .ok_or_else(|| format!("no text field `{label}`"))?
        .to_string();
    let mut m = Measurement::deserialize(value).map_err(|e| format!("not a measurement ({e})"))?;
    m.label = name;
    Ok(m)
}

/// The distinct values of `key` over `items`, in order of first appearance.
pub fn distinct<T, K: PartialEq>(items: &[T], key: impl Fn(&T) -> K) -> Vec<K> {
    let mut seen = Vec::new();
    for item in items {
        let k = key(item);
        if !seen.contains(&k) {
            seen.push(k);
        }
    }
    seen
}

/// ` (K=2048)` when every measurement names the same K, for titles; empty otherwise.
pub fn k_suffix(runs: &[&Measurement]) -> String {
    match distinct(runs, |m| m.k).as_slice() {
        [Some(k)] => format!(" (K={k})"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(exact: &str, median: &str) -> String {
        format!(
            r#"{{"variant":"v","profile":"iid","rows":8,"width":1024,"median_ms":{median},"floor_ms":0.5,"exact":{exact}}}"#
        )
    }

    #[test]
    fn only_exact_positive_times_are_drawable() {
        let m = parse(&line("true", "1.0"), "variant").unwrap();
        assert_eq!(m.label, "v");
        assert_eq!(m.x_floor(), Ok(2.0));
        let m = parse(&line("false", "1.0"), "variant").unwrap();
        assert_eq!(m.ms(), Err("inexact"));
        let m = parse(&line("true", "null"), "variant").unwrap();
        assert_eq!(m.ms(), Err("no time"));
    }

    #[test]
    fn a_line_without_the_label_field_is_refused() {
        let err = parse(&line("true", "1.0"), "ablation").err().unwrap();
        assert!(err.contains("`ablation`"), "{err}");
    }
}
