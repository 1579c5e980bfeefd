//! What every chart shares: an SVG document drawn into memory, one colour per selector, text
//! sizes, and how numbers are written on axes and bars.

use super::results::OURS;
use plotters::coord::Shift;
use plotters::prelude::*;

pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
pub type DrawResult = Result<(), Box<dyn std::error::Error>>;

pub const FONT: &str = "sans-serif";
// Sizes as plotters takes them; its SVG backend writes them scaled by 1/1.24.
pub const TITLE_SIZE: u32 = 26;
pub const CAPTION_SIZE: u32 = 21;
pub const LABEL_SIZE: u32 = 16;
pub const NOTE_SIZE: u32 = 16;
/// Mesh lines: visible enough to read values off, faint enough to stay behind the data.
pub const GRID: RGBColor = RGBColor(225, 225, 225);
pub const FLOOR: RGBColor = BLACK;

/// Draw a white SVG document of `size` pixels into a string.
pub fn svg(size: (u32, u32), draw: impl FnOnce(&Area) -> DrawResult) -> Result<String, String> {
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        draw(&root).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(text)
}

/// A page width of at least `min` pixels that also holds each `(text, plotters font size)` on
/// one line: plotters does not wrap text, and SVG text cannot be measured before a viewer
/// renders it, so this errs wide (half an em per character).
pub fn fit_width(min: u32, texts: &[(&str, u32)]) -> u32 {
    texts
        .iter()
        .map(|(text, size)| (text.chars().count() as f64 * *size as f64 * 0.5) as u32 + 40)
        .fold(min, u32::max)
}

/// Nine colours that tell apart well on white; grey is left out, it is the floor's and the
/// grid's.
const PALETTE: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A fixed colour for each known selector, so a selector looks the same in every chart;
/// further peers take the spare colours by their position.
pub fn color(selector: &str, position: usize) -> RGBColor {
    const SPARE: [RGBColor; 4] = [PALETTE[4], PALETTE[5], PALETTE[6], PALETTE[8]];
    match selector {
        OURS => PALETTE[3],
        "torch" => PALETTE[1],
        "flashinfer" => PALETTE[0],
        "sglang" => PALETTE[2],
        _ => SPARE[position % SPARE.len()],
    }
}

/// The colour of the `i`-th series of a chart whose series are not selectors (policies,
/// variants, shapes); nine series get nine colours, more repeat them.
pub fn series_color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// How a legend entry draws its key.
#[derive(Clone, Copy)]
pub enum Key {
    Bar,
    Line,
    Dashed,
}

/// A legend on one line of `area` at height `y`, for pages whose panels leave no free corner.
pub fn legend_row(area: &Area, y: i32, entries: &[(String, RGBColor, Key)]) -> DrawResult {
    let mut x = 16;
    for (text, color, key) in entries {
        let at = (x, y + 9);
        match key {
            Key::Bar => area.draw(&bar_key(at, *color).into_dyn())?,
            Key::Line => area.draw(&line_key(at, *color).into_dyn())?,
            Key::Dashed => area.draw(&dashed_key(at, *color).into_dyn())?,
        }
        area.draw_text(text, &(FONT, LABEL_SIZE).into(), (x + 28, y))?;
        x += legend_entry_width(text) as i32;
    }
    Ok(())
}

/// The width [`legend_row`] takes for `entries`, to size the page by.
pub fn legend_width(entries: &[(String, RGBColor, Key)]) -> u32 {
    16 + entries
        .iter()
        .map(|(text, _, _)| legend_entry_width(text))
        .sum::<u32>()
}

fn legend_entry_width(text: &str) -> u32 {
    28 + fit_width(0, &[(text, LABEL_SIZE)])
}

/// Lines of note text from height `y` down.
pub fn notes(area: &Area, y: i32, lines: &[String]) -> DrawResult {
    for (i, text) in (0..).zip(lines) {
        area.draw_text(text, &(FONT, NOTE_SIZE).into(), (16, y + 22 * i))?;
    }
    Ok(())
}

/// A short dashed stroke, the key of a dashed line.
pub fn dashed_key<'a, DB: DrawingBackend + 'a>(
    at: (i32, i32),
    color: RGBColor,
) -> impl IntoDynElement<'a, DB, (i32, i32)> {
    let style = color.stroke_width(2);
    EmptyElement::at(at)
        + PathElement::new(vec![(0, 0), (7, 0)], style)
        + PathElement::new(vec![(12, 0), (19, 0)], style)
}

/// A stroke with a dot, the key of a line with markers.
pub fn line_key<'a, DB: DrawingBackend + 'a>(
    at: (i32, i32),
    color: RGBColor,
) -> impl IntoDynElement<'a, DB, (i32, i32)> {
    EmptyElement::at(at)
        + PathElement::new(vec![(0, 0), (20, 0)], color.stroke_width(2))
        + Circle::new((10, 0), 4, color.filled())
}

/// A filled square, the key of bars.
pub fn bar_key<'a, DB: DrawingBackend + 'a>(
    at: (i32, i32),
    color: RGBColor,
) -> impl IntoDynElement<'a, DB, (i32, i32)> {
    EmptyElement::at(at) + Rectangle::new([(3, -7), (17, 7)], color.filled())
}

/// `128K`, `1M`: a row width as the result tables write it.
pub fn width_label(n: u64) -> String {
    const KI: u64 = 1 << 10;
    const MI: u64 = 1 << 20;
    if n >= MI && n & (MI - 1) == 0 {
        format!("{}M", n / MI)
    } else if n >= KI && n & (KI - 1) == 0 {
        format!("{}K", n / KI)
    } else {
        n.to_string()
    }
}

/// Milliseconds to three significant digits (`0.113`, `4.39`, `42.4`, `433`).
pub fn millis(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else if ms >= 1.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.3}")
    }
}

/// Ticks of a log axis over `lo..hi`: 1, 2 and 5 times the powers of ten.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    log_ticks_at(lo, hi, &[1.0, 2.0, 5.0])
}

/// Ticks of a log axis over `lo..hi` at `multiples` of the powers of ten.
pub fn log_ticks_at(lo: f64, hi: f64, multiples: &[f64]) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = 10f64.powi(lo.log10().floor() as i32);
    while decade <= hi {
        for &m in multiples {
            let t = m * decade;
            if (lo..=hi).contains(&t) {
                ticks.push(t);
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// A tick of [`log_ticks`] without float noise (`0.05`, not `0.05000000000000001`).
pub fn tick_label(v: f64) -> String {
    let decimals = (-v.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}

/// The geometric mean of the positive values, if any.
pub fn geomean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// `a, b, c and 4 more`: at most `shown` entries of a list, for one line of a note.
pub fn short_list(items: &[String], shown: usize) -> String {
    let mut text = items
        .iter()
        .take(shown)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > shown {
        text.push_str(&format!(" and {} more", items.len() - shown));
    }
    text
}

/// The chart note on measurements left out (`what (why)` each), or that none was.
pub fn not_drawn(skipped: &[String]) -> String {
    if skipped.is_empty() {
        "Every measurement is exact; none is left out.".into()
    } else {
        format!("Not drawn (no exact time): {}.", short_list(skipped, 4))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_step_one_two_five_inside_the_range() {
        let ticks = log_ticks(0.04, 130.0);
        let labels: Vec<String> = ticks.iter().map(|&t| tick_label(t)).collect();
        assert_eq!(
            labels,
            ["0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50", "100"]
        );
    }

    #[test]
    fn widths_read_like_the_result_tables() {
        assert_eq!(width_label(131072), "128K");
        assert_eq!(width_label(1 << 20), "1M");
        assert_eq!(width_label(440320), "430K");
        assert_eq!(width_label(1000), "1000");
    }

    #[test]
    fn geomean_ignores_what_cannot_be_a_ratio() {
        let g = geomean([2.0, 8.0, 0.0, f64::NAN]).unwrap();
        assert!((g - 4.0).abs() < 1e-12);
        assert_eq!(geomean([]), None);
    }
}
