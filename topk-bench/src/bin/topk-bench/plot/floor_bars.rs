//! Time over the one-read floor as horizontal bars: a panel per profile, a group of bars per
//! policy or shape, one bar per series (a shape or a variant) in the same colour everywhere.

use super::canvas::{self, Area, DrawResult, Key, FONT};
use super::jsonl::{self, Measurement};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const PANEL_WIDTH: u32 = 620;
/// Bar height in pixels.
const BAR: u32 = 13;
/// The panel's vertical axis counts in tenths of a bar (plotters formats only integer axes
/// with key points); a bar is `STEP` long, the space between two groups `GAP`.
const STEP: i32 = 10;
const GAP: i32 = 8;
/// Caption, margins and the value axis of a panel, in pixels.
const PANEL_BASE: u32 = 120;
/// Room right of the longest bar (as a share of it) for its value.
const HEADROOM: f64 = 1.2;
const REFERENCE: &str = "1.0: one read of the valid scores";

/// What a bar chart draws: `group` and `series` name the group and the bar of a measurement.
pub struct FloorBars<'a> {
    pub title: String,
    /// What a group is, for the axis (`policy`, `shape M x N`).
    pub group_desc: &'a str,
    pub group: fn(&Measurement) -> String,
    pub series: fn(&Measurement) -> String,
    /// The file(s) the measurements come from, for the note.
    pub from: &'a str,
}

struct Panel {
    profile: String,
    groups: Vec<String>,
    /// `[group][series]`: time over floor, when there is an exact one.
    cells: Vec<Vec<Option<f64>>>,
}

pub fn floor_bars(chart: &FloorBars, runs: &[&Measurement]) -> Result<String, String> {
    let series = jsonl::distinct(runs, |m| (chart.series)(m));
    let mut skipped = Vec::new();
    let mut panels = Vec::new();
    for profile in jsonl::distinct(runs, |m| m.profile.clone()) {
        let mine: Vec<&Measurement> = runs
            .iter()
            .copied()
            .filter(|m| m.profile == profile)
            .collect();
        let groups = jsonl::distinct(&mine, |m| (chart.group)(m));
        let mut cells = Vec::new();
        for group in &groups {
            let mut row = Vec::new();
            for name in &series {
                // A rerun appends its lines, so the last one counts.
                let found = mine
                    .iter()
                    .rev()
                    .find(|m| (chart.group)(m) == *group && (chart.series)(m) == *name);
                let value = found.ok_or("not measured").and_then(|m| m.x_floor());
                if let Err(why) = value {
                    skipped.push(format!("{profile} {group} {name} ({why})"));
                }
                row.push(value.ok());
            }
            cells.push(row);
        }
        panels.push(Panel {
            profile,
            groups,
            cells,
        });
    }
    let notes = [
        format!(
            "From {}. Bars: median time over the one-read floor of the shape; only outputs \
             verified exact are drawn.",
            chart.from
        ),
        canvas::not_drawn(&skipped),
    ];
    let cols = panels.len().clamp(1, 2);
    let rows = panels.len().div_ceil(cols).max(1);
    // One value axis for every panel, so that profiles compare at a glance.
    let top = panels
        .iter()
        .flat_map(|p| p.cells.iter().flatten().flatten())
        .fold(1.0f64, |a, &b| a.max(b))
        * HEADROOM;
    let most_groups = panels.iter().map(|p| p.groups.len()).max().unwrap_or(0);
    let panel_height =
        PANEL_BASE + most_groups as u32 * group_pitch(&series) as u32 * BAR / STEP as u32;
    let footer = 30 + 22 * notes.len() as u32 + 12;
    let mut legend: Vec<(String, RGBColor, Key)> = (0..)
        .zip(&series)
        .map(|(i, name)| (name.clone(), canvas::series_color(i), Key::Bar))
        .collect();
    legend.push((REFERENCE.into(), canvas::FLOOR, Key::Dashed));
    let page_width = canvas::fit_width(
        PANEL_WIDTH * cols as u32,
        &[
            (&chart.title, canvas::TITLE_SIZE),
            (&notes[0], canvas::NOTE_SIZE),
            (&notes[1], canvas::NOTE_SIZE),
        ],
    )
    .max(canvas::legend_width(&legend));
    let size = (page_width, 50 + panel_height * rows as u32 + footer);
    canvas::svg(size, |root| {
        let body = root.titled(&chart.title, (FONT, canvas::TITLE_SIZE))?;
        let height = body.dim_in_pixel().1;
        let (grid, footer_area) = body.split_vertically(height - footer);
        if panels.is_empty() {
            let text = "no measurements of this kind in the file";
            grid.draw_text(text, &(FONT, canvas::CAPTION_SIZE).into(), (40, 40))?;
        }
        for (area, p) in grid.split_evenly((rows, cols)).iter().zip(&panels) {
            panel(area, p, &series, chart.group_desc, top)?;
        }
        canvas::legend_row(&footer_area, 6, &legend)?;
        canvas::notes(&footer_area, 36, &notes)
    })
}

/// Height of one group in axis units.
fn group_pitch(series: &[String]) -> i32 {
    series.len() as i32 * STEP + GAP
}

/// One profile on a value axis up to `top`: groups from top to bottom, bars in series order inside a group, the value at
/// the end of each bar, the floor dashed at 1.0.
fn panel(area: &Area, p: &Panel, series: &[String], group_desc: &str, top: f64) -> DrawResult {
    let pitch = group_pitch(series);
    let total = p.groups.len() as i32 * pitch;
    // Group g spans [total - (g + 1) * pitch, total - g * pitch], so the first is on top.
    let center = |g: i32| total - g * pitch - pitch / 2;
    let label_area = p
        .groups
        .iter()
        .map(|g| canvas::fit_width(0, &[(g, canvas::LABEL_SIZE)]))
        .max()
        .unwrap_or(0)
        .max(60);
    let centers: Vec<i32> = (0..p.groups.len() as i32).map(center).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("profile {}", p.profile),
            (FONT, canvas::CAPTION_SIZE),
        )
        .margin(10)
        .margin_right(24)
        .x_label_area_size(44)
        .y_label_area_size(label_area)
        .build_cartesian_2d(0.0..top, (0..total.max(1)).with_key_points(centers))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .bold_line_style(canvas::GRID)
        .light_line_style(TRANSPARENT)
        .x_desc("median time / one-read floor")
        .y_desc(group_desc)
        .x_label_formatter(&|x| format!("{x:.1}"))
        .y_label_formatter(&|y| {
            let g = usize::try_from((total - y) / pitch).unwrap_or(usize::MAX);
            p.groups.get(g).cloned().unwrap_or_default()
        })
        .label_style((FONT, canvas::LABEL_SIZE))
        .axis_desc_style((FONT, canvas::LABEL_SIZE))
        .draw()?;
    let value_style = TextStyle::from((FONT, canvas::LABEL_SIZE - 4).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (g, row) in (0..).zip(&p.cells) {
        let group_top = total - g * pitch - GAP / 2;
        for (s, value) in (0..).zip(row) {
            let Some(v) = *value else { continue };
            let upper = group_top - s * STEP;
            let lower = upper - STEP;
            let mut rect = Rectangle::new(
                [(0.0, lower), (v, upper)],
                canvas::series_color(s as usize).filled(),
            );
            rect.set_margin(1, 1, 0, 0);
            chart.draw_series([rect])?;
            let at = (v + top * 0.01, (upper + lower) / 2);
            chart.draw_series([Text::new(format!("{v:.2}"), at, value_style.clone())])?;
        }
    }
    chart.draw_series(DashedLineSeries::new(
        [(1.0, 0), (1.0, total)],
        7,
        5,
        canvas::FLOOR.stroke_width(2),
    ))?;
    Ok(())
}
