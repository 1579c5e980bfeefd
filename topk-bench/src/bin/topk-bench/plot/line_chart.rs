//! Lines with markers on log-log axes, in a grid of panels: how a time or a speedup moves with
//! the row width or the number of ranks. Callers keep only exact measurements.

use super::canvas::{self, Area, DrawResult, Key, FONT};
use plotters::prelude::*;

const PANEL: (u32, u32) = (520, 400);
/// Panels side by side at most, so that the page stays readable on a screen.
const MAX_COLS: usize = 4;

pub struct LineChart<'a> {
    pub title: String,
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub x_label: fn(f64) -> String,
    /// Legend names, one colour each; every panel has a line per series (maybe empty).
    pub series: Vec<String>,
    pub panels: Vec<LinePanel>,
    /// Panels side by side (at most four).
    pub cols: usize,
    /// A dashed horizontal line and what it means.
    pub reference: Option<(f64, String)>,
    pub notes: Vec<String>,
}

pub struct LinePanel {
    pub caption: String,
    /// `(x, y)` per series, in any order; of two points at one x the later counts.
    pub lines: Vec<Vec<(f64, f64)>>,
}

pub fn line_chart(chart: &LineChart) -> Result<String, String> {
    let cols = chart.cols.clamp(1, chart.panels.len().clamp(1, MAX_COLS));
    let rows = chart.panels.len().div_ceil(cols).max(1);
    let footer = 30 + 22 * chart.notes.len() as u32 + 12;
    let mut texts = vec![(chart.title.as_str(), canvas::TITLE_SIZE)];
    texts.extend(chart.notes.iter().map(|n| (n.as_str(), canvas::NOTE_SIZE)));
    let mut legend: Vec<(String, RGBColor, Key)> = (0..)
        .zip(&chart.series)
        .map(|(i, name)| (name.clone(), canvas::series_color(i), Key::Line))
        .collect();
    if let Some((_, text)) = &chart.reference {
        legend.push((text.clone(), canvas::FLOOR, Key::Dashed));
    }
    let page_width =
        canvas::fit_width(PANEL.0 * cols as u32, &texts).max(canvas::legend_width(&legend));
    let size = (page_width, 50 + PANEL.1 * rows as u32 + footer);
    canvas::svg(size, |root| {
        let body = root.titled(&chart.title, (FONT, canvas::TITLE_SIZE))?;
        let height = body.dim_in_pixel().1;
        let (grid, footer_area) = body.split_vertically(height - footer);
        if chart.panels.is_empty() {
            let text = "no measurements of this kind in the file";
            grid.draw_text(text, &(FONT, canvas::CAPTION_SIZE).into(), (40, 40))?;
        }
        for (area, p) in grid.split_evenly((rows, cols)).iter().zip(&chart.panels) {
            panel(area, chart, p)?;
        }
        canvas::legend_row(&footer_area, 6, &legend)?;
        canvas::notes(&footer_area, 36, &chart.notes)
    })
}

/// Sorted by x, one point per x (the last given).
fn tidy(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for &(x, y) in points {
        match out.iter_mut().find(|p| p.0 == x) {
            Some(p) => p.1 = y,
            None => out.push((x, y)),
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

fn panel(area: &Area, chart: &LineChart, p: &LinePanel) -> DrawResult {
    let lines: Vec<Vec<(f64, f64)>> = p
        .lines
        .iter()
        .map(|l| {
            tidy(l)
                .into_iter()
                .filter(|&(x, y)| x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite())
                .collect()
        })
        .collect();
    let mut xs: Vec<f64> = lines.iter().flatten().map(|p| p.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let (Some(&x_lo), Some(&x_hi)) = (xs.first(), xs.last()) else {
        let text = format!("{}: no exact time to draw", p.caption);
        area.draw_text(&text, &(FONT, canvas::CAPTION_SIZE).into(), (40, 40))?;
        return Ok(());
    };
    let reference = chart.reference.as_ref().map(|r| r.0);
    let ys = lines.iter().flatten().map(|p| p.1).chain(reference);
    let (y_lo, y_hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let (y_lo, y_hi) = (y_lo / 1.5, y_hi * 1.5);
    let (x_lo, x_hi) = (x_lo / 1.25, x_hi * 1.25);
    // A range of less than a decade may hold one tick of 1, 2, 5; it gets finer ones.
    let mut y_ticks = canvas::log_ticks(y_lo, y_hi);
    if y_ticks.len() < 3 {
        y_ticks = canvas::log_ticks_at(y_lo, y_hi, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]);
    }
    let mut plot = ChartBuilder::on(area)
        .caption(&p.caption, (FONT, canvas::CAPTION_SIZE))
        .margin(10)
        .margin_right(24)
        .x_label_area_size(46)
        .y_label_area_size(62)
        .build_cartesian_2d(
            (x_lo..x_hi).log_scale().base(2.0).with_key_points(xs),
            (y_lo..y_hi).log_scale().with_key_points(y_ticks),
        )?;
    plot.configure_mesh()
        .bold_line_style(canvas::GRID)
        .x_desc(chart.x_desc)
        .y_desc(chart.y_desc)
        .x_label_formatter(&|x| (chart.x_label)(*x))
        .y_label_formatter(&|y| canvas::tick_label(*y))
        .label_style((FONT, canvas::LABEL_SIZE))
        .axis_desc_style((FONT, canvas::LABEL_SIZE))
        .draw()?;
    if let Some(r) = reference {
        plot.draw_series(DashedLineSeries::new(
            [(x_lo, r), (x_hi, r)],
            7,
            5,
            canvas::FLOOR.stroke_width(2),
        ))?;
    }
    for (i, points) in lines.into_iter().enumerate() {
        let color = canvas::series_color(i);
        plot.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
        plot.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 4, color.filled())),
        )?;
    }
    Ok(())
}
