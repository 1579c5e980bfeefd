//! One bar per shape for a ratio where 1.0 is the mark to beat: the speedup over the best
//! exact peer, and our time over the one-read floor.

use super::canvas::{self, FONT};
use super::results::{positive, Item, Merged, OURS};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const BAR_PITCH: u32 = 56;
const HEIGHT: u32 = 600;
const NOTE_HEIGHT: u32 = 34;
/// Room above the tallest bar (as a share of its height) for its value and the legend.
const HEADROOM: f64 = 1.4;

struct Bar<'a> {
    shape: &'a Item,
    value: Option<f64>,
    color: RGBColor,
}

/// A bar chart and what it says.
struct Ratios<'a> {
    title: String,
    y_desc: &'a str,
    /// What the line at 1.0 means.
    reference: &'a str,
    bars: Vec<Bar<'a>>,
    /// Legend entries, one per bar colour.
    keys: Vec<(String, RGBColor)>,
}

/// Speedup over the best exact peer, each bar in the colour of that peer.
pub fn speedup(m: &Merged) -> Result<String, String> {
    let peer_color = |name: &str| {
        let i = m.peer_names.iter().position(|n| n == name).unwrap_or(0);
        canvas::color(name, i + 1)
    };
    let bars: Vec<Bar> = m
        .shapes()
        .into_iter()
        .map(|c| Bar {
            shape: c,
            value: positive(c.speedup_vs_best),
            color: peer_color(c.best_peer.as_deref().unwrap_or("")),
        })
        .collect();
    let mut keys: Vec<(String, RGBColor)> = Vec::new();
    for bar in bars.iter().filter(|b| b.value.is_some()) {
        if let Some(best) = &bar.shape.best_peer {
            let key = format!("best peer: {best}");
            if !keys.iter().any(|(k, _)| *k == key) {
                keys.push((key, bar.color));
            }
        }
    }
    let title = format!(
        "Speedup over the best exact peer, geomean {} ({})",
        geomean_text(&bars),
        m.context()
    );
    draw(Ratios {
        title,
        y_desc: "best peer time / our time",
        reference: "1.0: as fast as the best peer",
        bars,
        keys,
    })
}

/// Our time over the one-read floor: how close to a single pass over the scores we are.
pub fn floor(m: &Merged) -> Result<String, String> {
    let color = canvas::color(OURS, 0);
    let bars: Vec<Bar> = m
        .shapes()
        .into_iter()
        .map(|c| Bar {
            shape: c,
            value: positive(c.ours_x_floor),
            color,
        })
        .collect();
    let title = format!(
        "Our time over the one-read floor, geomean {} ({})",
        geomean_text(&bars),
        m.context()
    );
    draw(Ratios {
        title,
        y_desc: "our time / floor",
        reference: "1.0: one read of the valid scores",
        bars,
        keys: vec![(OURS.to_string(), color)],
    })
}

fn geomean_text(bars: &[Bar]) -> String {
    match canvas::geomean(bars.iter().filter_map(|b| b.value)) {
        Some(g) => format!("{g:.2}x"),
        None => "n/a".into(),
    }
}

/// `(first, end, width)` of each run of neighbouring bars with one row width.
fn width_groups(bars: &[Bar]) -> Vec<(i32, i32, u64)> {
    let mut groups: Vec<(i32, i32, u64)> = Vec::new();
    for (i, bar) in (0..).zip(bars) {
        match groups.last_mut() {
            Some(g) if g.2 == bar.shape.width => g.1 = i + 1,
            _ => groups.push((i, i + 1, bar.shape.width)),
        }
    }
    groups
}

/// The chart's note: the shapes without a value, if any.
fn missing_note(bars: &[Bar]) -> String {
    let missing: Vec<String> = bars
        .iter()
        .filter(|b| b.value.is_none())
        .map(|b| b.shape.name.clone())
        .collect();
    if missing.is_empty() {
        String::new()
    } else {
        format!(
            "No exact time on both sides at: {}.",
            canvas::short_list(&missing, 6)
        )
    }
}

/// Bars labelled with their rows per call M under `N = ...` for each run of one width, the
/// value on top of each bar, a dashed line at 1.0, and a note naming shapes without a value.
fn draw(r: Ratios) -> Result<String, String> {
    let n = r.bars.len() as i32;
    let top = r.bars.iter().filter_map(|b| b.value).fold(1.0f64, f64::max) * HEADROOM;
    let note = missing_note(&r.bars);
    let width = canvas::fit_width(
        BAR_PITCH * n as u32 + 160,
        &[(&r.title, canvas::TITLE_SIZE), (&note, canvas::NOTE_SIZE)],
    );
    canvas::svg((width, HEIGHT), |root| {
        let body = root.titled(&r.title, (FONT, canvas::TITLE_SIZE))?;
        let height = body.dim_in_pixel().1;
        let (plot, note_area) = body.split_vertically(height - NOTE_HEIGHT);
        let mut chart = ChartBuilder::on(&plot)
            .margin(10)
            .margin_right(24)
            .x_label_area_size(70)
            .y_label_area_size(70)
            .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .bold_line_style(canvas::GRID)
            .light_line_style(TRANSPARENT)
            .x_labels(r.bars.len())
            .x_desc("rows per call M, grouped by row width N")
            .y_desc(r.y_desc)
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) => usize::try_from(*i)
                    .ok()
                    .and_then(|i| r.bars.get(i))
                    .map_or(String::new(), |b| b.shape.rows.to_string()),
                _ => String::new(),
            })
            .y_label_formatter(&|y| format!("{y:.1}"))
            .label_style((FONT, canvas::LABEL_SIZE))
            .axis_desc_style((FONT, canvas::LABEL_SIZE))
            .draw()?;
        let group_style = TextStyle::from((FONT, canvas::LABEL_SIZE).into_font())
            .pos(Pos::new(HPos::Center, VPos::Top));
        for &(first, end, width) in &width_groups(&r.bars) {
            if first > 0 {
                let edge = || SegmentValue::Exact(first);
                let line = [(edge(), 0.0), (edge(), top)];
                chart.draw_series([PathElement::new(line, BLACK.mix(0.25))])?;
            }
            let (left, base) = chart.backend_coord(&(SegmentValue::Exact(first), 0.0));
            let (right, _) = chart.backend_coord(&(SegmentValue::Exact(end), 0.0));
            let text = format!("N = {}", canvas::width_label(width));
            root.draw_text(&text, &group_style, ((left + right) / 2, base + 26))?;
        }
        let value_style = TextStyle::from((FONT, canvas::LABEL_SIZE - 2).into_font())
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        for (i, bar) in (0..).zip(&r.bars) {
            let Some(v) = bar.value else { continue };
            let mut rect = Rectangle::new(
                [
                    (SegmentValue::Exact(i), 0.0),
                    (SegmentValue::Exact(i + 1), v),
                ],
                bar.color.filled(),
            );
            rect.set_margin(0, 0, 7, 7);
            chart.draw_series([rect])?;
            let at = (SegmentValue::CenterOf(i), v + top * 0.008);
            chart.draw_series([Text::new(format!("{v:.2}"), at, value_style.clone())])?;
        }
        for (key, color) in &r.keys {
            let color = *color;
            chart
                .draw_series(std::iter::empty::<Circle<(SegmentValue<i32>, f64), i32>>())?
                .label(key.as_str())
                .legend(move |p| canvas::bar_key(p, color));
        }
        chart
            .draw_series(DashedLineSeries::new(
                [(SegmentValue::Exact(0), 1.0), (SegmentValue::Last, 1.0)],
                7,
                5,
                canvas::FLOOR.stroke_width(2),
            ))?
            .label(r.reference)
            .legend(|p| canvas::dashed_key(p, canvas::FLOOR));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .label_font((FONT, canvas::LABEL_SIZE))
            .draw()?;
        note_area.draw_text(&note, &(FONT, canvas::NOTE_SIZE).into(), (16, 8))?;
        Ok(())
    })
}
