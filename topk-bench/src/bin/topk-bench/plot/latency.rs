//! Latency against rows per call, one panel per row width: how each selector scales with the
//! batch, next to the time one read of the valid scores takes.

use super::canvas::{self, Area, DrawResult, FONT};
use super::results::{positive, Item, Merged};
use plotters::prelude::*;

const PANEL: (u32, u32) = (640, 430);
const NOTE_HEIGHT: u32 = 56;

pub fn latency(m: &Merged) -> Result<String, String> {
    let shapes = m.shapes();
    let mut widths: Vec<u64> = Vec::new();
    for s in &shapes {
        if !widths.contains(&s.width) {
            widths.push(s.width);
        }
    }
    let cols = widths.len().clamp(1, 2);
    let rows = widths.len().div_ceil(cols).max(1);
    let title = format!("Top-K latency per call ({})", m.context());
    let notes = [
        format!(
            "Medians of CUDA-graph replays; dashed: one-read floor (valid bytes / {}).",
            bandwidth(m)
        ),
        skipped_note(m, &shapes),
    ];
    let page_width = canvas::fit_width(
        PANEL.0 * cols as u32,
        &[
            (&title, canvas::TITLE_SIZE),
            (&notes[0], canvas::NOTE_SIZE),
            (&notes[1], canvas::NOTE_SIZE),
        ],
    );
    let size = (page_width, 50 + PANEL.1 * rows as u32 + NOTE_HEIGHT);
    // Selectors with an exact time somewhere; only those get a legend entry.
    let drawn: Vec<&str> = m
        .selectors()
        .into_iter()
        .enumerate()
        .filter(|&(i, _)| {
            shapes
                .iter()
                .any(|c| c.timings(&m.peer_names)[i].1.ok_ms().is_some())
        })
        .map(|(_, name)| name)
        .collect();
    canvas::svg(size, |root| {
        let body = root.titled(&title, (FONT, canvas::TITLE_SIZE))?;
        let height = body.dim_in_pixel().1;
        let (panels, note) = body.split_vertically(height - NOTE_HEIGHT);
        for (i, (area, &width)) in panels
            .split_evenly((rows, cols))
            .iter()
            .zip(&widths)
            .enumerate()
        {
            let calls: Vec<&Item> = shapes
                .iter()
                .copied()
                .filter(|c| c.width == width)
                .collect();
            panel(area, m, &calls, width, (i == 0).then_some(&drawn))?;
        }
        for (i, text) in notes.iter().enumerate() {
            note.draw_text(
                text,
                &(FONT, canvas::NOTE_SIZE).into(),
                (16, 8 + 22 * i as i32),
            )?;
        }
        Ok(())
    })
}

/// One row width: a line with markers per selector, the floor dashed; both axes logarithmic.
/// `legend` names the selectors to list in a legend, for the one panel that shows it.
fn panel(
    area: &Area,
    m: &Merged,
    calls: &[&Item],
    width: u64,
    legend: Option<&Vec<&str>>,
) -> DrawResult {
    let mut calls = calls.to_vec();
    calls.sort_by_key(|c| c.rows);
    let series: Vec<(&str, Vec<(f64, f64)>)> = m
        .selectors()
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let points = calls
                .iter()
                .filter_map(|c| Some((c.rows as f64, c.timings(&m.peer_names)[i].1.ok_ms()?)))
                .collect();
            (name, points)
        })
        .collect();
    let floor: Vec<(f64, f64)> = calls
        .iter()
        .filter_map(|c| Some((c.rows as f64, positive(Some(c.floor_ms))?)))
        .collect();
    let all = series.iter().flat_map(|(_, p)| p).chain(&floor);
    let (x_lo, x_hi, y_lo, y_hi) = all.fold(
        (f64::MAX, f64::MIN, f64::MAX, f64::MIN),
        |(a, b, c, d), &(x, y)| (a.min(x), b.max(x), c.min(y), d.max(y)),
    );
    let caption = format!("N = {}", canvas::width_label(width));
    if x_lo > x_hi {
        let text = format!("{caption}: no exact time to draw");
        area.draw_text(&text, &(FONT, canvas::CAPTION_SIZE).into(), (40, 40))?;
        return Ok(());
    }
    let x_ticks: Vec<f64> = floor.iter().map(|p| p.0).collect();
    let (y_lo, y_hi) = (y_lo / 1.5, y_hi * 1.5);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, canvas::CAPTION_SIZE))
        .margin(10)
        .margin_right(24)
        .x_label_area_size(46)
        .y_label_area_size(62)
        .build_cartesian_2d(
            (x_lo / 1.25..x_hi * 1.25)
                .log_scale()
                .base(2.0)
                .with_key_points(x_ticks),
            (y_lo..y_hi)
                .log_scale()
                .with_key_points(canvas::log_ticks(y_lo, y_hi)),
        )?;
    chart
        .configure_mesh()
        .bold_line_style(canvas::GRID)
        .x_desc("rows per call M")
        .y_desc("latency (ms)")
        .x_label_formatter(&|x| format!("{:.0}", x))
        .y_label_formatter(&|y| canvas::tick_label(*y))
        .label_style((FONT, canvas::LABEL_SIZE))
        .axis_desc_style((FONT, canvas::LABEL_SIZE))
        .draw()?;
    for (i, (name, points)) in series.into_iter().enumerate() {
        let color = canvas::color(name, i);
        let series = chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
        if legend.is_some_and(|names| names.contains(&name)) {
            series
                .label(name)
                .legend(move |p| canvas::line_key(p, color));
        }
        chart.draw_series(
            points
                .into_iter()
                .map(|p| Circle::new(p, 4, color.filled())),
        )?;
    }
    chart
        .draw_series(DashedLineSeries::new(
            floor,
            7,
            5,
            canvas::FLOOR.stroke_width(2),
        ))?
        .label("one-read floor")
        .legend(|p| canvas::dashed_key(p, canvas::FLOOR));
    if legend.is_some() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK.mix(0.3))
            .label_font((FONT, canvas::LABEL_SIZE))
            .draw()?;
    }
    Ok(())
}

/// `4.49 TB/s`, or how the merge script defines the floor when the file does not say.
fn bandwidth(m: &Merged) -> String {
    match positive(m.meta.read_bandwidth_bps) {
        Some(bps) => format!("{:.2} TB/s", bps / 1e12),
        None => "the device's read bandwidth".into(),
    }
}

/// Which points are missing from the chart and why, per selector
/// (`torch at 512x128K (inexact)`, `sglang at every shape (unavailable)`).
fn skipped_note(m: &Merged, shapes: &[&Item]) -> String {
    let mut parts = Vec::new();
    for (i, name) in m.selectors().into_iter().enumerate() {
        let missed: Vec<(&str, &str)> = shapes
            .iter()
            .map(|c| (c.name.as_str(), c.timings(&m.peer_names)[i].1))
            .filter(|(_, t)| t.ok_ms().is_none())
            .map(|(shape, t)| (shape, t.status()))
            .collect();
        if missed.is_empty() {
            continue;
        }
        if missed.len() == shapes.len() {
            let mut statuses: Vec<&str> = missed.iter().map(|m| m.1).collect();
            statuses.dedup();
            parts.push(format!("{name} at every shape ({})", statuses.join(", ")));
        } else {
            let listed: Vec<String> = missed.iter().map(|(c, t)| format!("{c} ({t})")).collect();
            parts.push(format!("{name} at {}", canvas::short_list(&listed, 3)));
        }
    }
    if parts.is_empty() {
        "Every selector has an exact time at every shape.".into()
    } else {
        format!("Not drawn (no exact time): {}.", parts.join("; "))
    }
}
