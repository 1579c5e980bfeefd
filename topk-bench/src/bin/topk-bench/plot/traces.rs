//! Whole traces: per trace, the summed latency of its calls for each selector, as horizontal
//! bars against the trace's one-read floor.

use super::canvas::{self, Area, DrawResult, FONT};
use super::results::{positive, Item, Merged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const WIDTH: u32 = 1100;
const PANEL_BASE: u32 = 110;
const BAR_HEIGHT: u32 = 44;

pub fn traces(m: &Merged) -> Result<String, String> {
    let selectors = m.selectors();
    let panel_height = PANEL_BASE + BAR_HEIGHT * selectors.len() as u32;
    let title = format!(
        "Total latency of each trace, summed over its calls ({})",
        m.context()
    );
    let captions: Vec<String> = m.traces.iter().map(caption).collect();
    let mut texts = vec![(title.as_str(), canvas::TITLE_SIZE)];
    texts.extend(captions.iter().map(|c| (c.as_str(), canvas::CAPTION_SIZE)));
    let size = (
        canvas::fit_width(WIDTH, &texts),
        50 + panel_height * m.traces.len().max(1) as u32,
    );
    canvas::svg(size, |root| {
        let body = root.titled(&title, (FONT, canvas::TITLE_SIZE))?;
        if m.traces.is_empty() {
            let text = "this file holds no traces";
            body.draw_text(text, &(FONT, canvas::CAPTION_SIZE).into(), (40, 40))?;
            return Ok(());
        }
        let panels = body.split_evenly((m.traces.len(), 1));
        for ((area, trace), caption) in panels.iter().zip(&m.traces).zip(captions) {
            panel(area, m, trace, caption)?;
        }
        Ok(())
    })
}

/// `trace245: 26 calls, 250880 rows, one-read floor 28.0 ms (dashed), speedup ... 1.37x`.
fn caption(trace: &Item) -> String {
    let mut text = format!(
        "{}: {} calls, {} rows",
        trace.name,
        trace.calls.unwrap_or(0),
        trace.rows
    );
    if let Some(f) = positive(Some(trace.floor_ms)) {
        text.push_str(&format!(
            ", one-read floor {} ms (dashed)",
            canvas::millis(f)
        ));
    }
    if let Some(s) = positive(trace.speedup_vs_best) {
        text.push_str(&format!(", speedup over the best peer {s:.2}x"));
    }
    text
}

/// One trace: a bar per selector (ours on top), its total written at the end of the bar, and
/// the floor as a dashed vertical line.
fn panel(area: &Area, m: &Merged, trace: &Item, caption: String) -> DrawResult {
    let timings = trace.timings(&m.peer_names);
    let n = timings.len();
    let floor = positive(Some(trace.floor_ms));
    let ours = trace.ours.ok_ms();
    let top = timings
        .iter()
        .filter_map(|(_, t)| t.ok_ms())
        .chain(floor)
        .fold(0.0f64, f64::max);
    // Selector i sits in row n - 1 - i, so the first (ours) is drawn on top.
    let row = |i: usize| (n - 1 - i) as i32;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, canvas::CAPTION_SIZE))
        .margin(10)
        .margin_right(30)
        .x_label_area_size(44)
        .y_label_area_size(100)
        .build_cartesian_2d(
            0.0..top.max(f64::MIN_POSITIVE) * 1.3,
            (0..n as i32 - 1).into_segmented(),
        )?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(canvas::GRID)
        .y_labels(n)
        .x_desc("total latency (ms)")
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(r) => usize::try_from(n as i32 - 1 - r)
                .ok()
                .and_then(|i| timings.get(i))
                .map_or(String::new(), |(name, _)| name.to_string()),
            _ => String::new(),
        })
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style((FONT, canvas::LABEL_SIZE))
        .axis_desc_style((FONT, canvas::LABEL_SIZE))
        .draw()?;
    let text_style = TextStyle::from((FONT, canvas::LABEL_SIZE).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, (name, timing)) in timings.iter().enumerate() {
        let y = row(i);
        let Some(ms) = timing.ok_ms() else {
            let text = format!("no exact total ({})", timing.status());
            let at = (top * 0.01, SegmentValue::CenterOf(y));
            chart.draw_series([Text::new(text, at, text_style.clone())])?;
            continue;
        };
        let color = canvas::color(name, i);
        let mut rect = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(y)),
                (ms, SegmentValue::Exact(y + 1)),
            ],
            color.filled(),
        );
        rect.set_margin(6, 6, 0, 0);
        chart.draw_series([rect])?;
        let mut label = format!("{} ms", canvas::millis(ms));
        if let (Some(o), true) = (ours, i > 0) {
            label.push_str(&format!(" ({:.2}x our time)", ms / o));
        }
        let at = (ms + top * 0.01, SegmentValue::CenterOf(y));
        chart.draw_series([Text::new(label, at, text_style.clone())])?;
    }
    if let Some(f) = floor {
        chart.draw_series(DashedLineSeries::new(
            [(f, SegmentValue::Exact(0)), (f, SegmentValue::Last)],
            7,
            5,
            canvas::FLOOR.stroke_width(2),
        ))?;
    }
    Ok(())
}
