//! SVG charts (plotters, SVG backend): horizontal bar charts and line charts.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Drawing failure.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw {path}: {msg}")]
pub struct PlotError {
    pub path: String,
    pub msg: String,
}

fn err<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> PlotError + '_ {
    move |e| PlotError {
        path: path.display().to_string(),
        msg: e.to_string(),
    }
}

/// What the plotted values are; decides axis units and value labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Byte counts: IEC units (KiB, MiB, ...).
    Bytes,
    /// Plain counts (e.g. live allocations).
    Count,
}

impl ValueKind {
    /// Label for one exact value.
    pub fn label(self, v: i64) -> String {
        match self {
            ValueKind::Bytes => crate::units::format_iec(v),
            ValueKind::Count => v.to_string(),
        }
    }

    /// Divisor and unit name for an axis whose largest absolute value is `max_abs`,
    /// so that tick marks fall on round numbers of that unit.
    fn axis_unit(self, max_abs: u64) -> (f64, &'static str) {
        const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
        match self {
            ValueKind::Count => (1.0, ""),
            ValueKind::Bytes => {
                let mut p = 0;
                while p + 1 < UNITS.len() && max_abs >= 1u64 << (10 * (p + 1)) {
                    p += 1;
                }
                ((1u64 << (10 * p)) as f64, UNITS[p])
            }
        }
    }
}

/// Tick label: number in `unit`, without trailing zeros.
fn tick(v: f64, unit: &str) -> String {
    let mut s = format!("{v:.2}");
    while s.contains('.') && (s.ends_with('0') || s.ends_with('.')) {
        s.pop();
    }
    if s == "-0" {
        s = "0".into();
    }
    if unit.is_empty() {
        s
    } else {
        format!("{s} {unit}")
    }
}

/// Approximate width in pixels of `text` at the label font size.
fn text_width(text: &str) -> u32 {
    (text.chars().count() as u32).saturating_mul(7)
}

/// Size and title of a chart.
#[derive(Debug, Clone)]
pub struct ChartOpts {
    pub title: String,
    pub width: u32,
    /// Default: derived from the number of bars (bar chart) or 600 (lines).
    pub height: Option<u32>,
}

/// One bar: label and value.
pub type Bar = (String, i64);

/// Horizontal bar chart, first bar at the top. `fmt` formats values
/// (axis ticks and the value printed next to each bar).
pub fn bar_chart(
    path: &Path,
    opts: &ChartOpts,
    bars: &[Bar],
    kind: ValueKind,
) -> Result<(), PlotError> {
    let n = bars.len().max(1) as u32;
    let height = opts.height.unwrap_or(110 + 24 * n);
    let root = SVGBackend::new(path, (opts.width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(err(path))?;

    let max = bars.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    let min = bars.iter().map(|b| b.1).min().unwrap_or(0).min(0);
    // Room for the value text right of the longest bar.
    let (div, unit) = kind.axis_unit(max.unsigned_abs().max(min.unsigned_abs()));
    let (max, min) = (max as f64 / div, min as f64 / div);
    let span = max - min;
    let x_hi = max + span / 6.0;
    let x_lo = if min < 0.0 { min - span / 20.0 } else { 0.0 };
    let label_area = bars
        .iter()
        .map(|b| text_width(&b.0))
        .max()
        .unwrap_or(0)
        .clamp(40, opts.width / 2)
        + 10;

    let mut chart = ChartBuilder::on(&root)
        .caption(&opts.title, ("sans-serif", 20))
        .margin(12)
        .margin_right(40)
        .x_label_area_size(36)
        .y_label_area_size(label_area)
        // A segmented range a..b has b - a + 1 bands; a single bar needs a
        // non-empty range, and gets an empty band above it.
        .build_cartesian_2d(x_lo..x_hi, (0u32..(n - 1).max(1)).into_segmented())
        .map_err(err(path))?;

    let labels: Vec<&str> = bars.iter().map(|b| b.0.as_str()).collect();
    let y_fmt = |v: &SegmentValue<u32>| -> String {
        match v {
            SegmentValue::CenterOf(i) if (*i as usize) < labels.len() => {
                labels[labels.len() - 1 - *i as usize].to_string()
            }
            _ => String::new(),
        }
    };
    let x_fmt = |v: &f64| tick(*v, unit);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n as usize)
        .y_label_formatter(&y_fmt)
        .x_labels(8)
        .x_label_formatter(&x_fmt)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err(path))?;

    let count = bars.len() as u32;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
            let y = count - 1 - i as u32;
            let mut r = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(y)),
                    (*v as f64 / div, SegmentValue::Exact(y + 1)),
                ],
                Palette99::pick(0).mix(0.75).filled(),
            );
            r.set_margin(3, 3, 0, 0);
            r
        }))
        .map_err(err(path))?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
            let y = count - 1 - i as u32;
            EmptyElement::at(((*v).max(0) as f64 / div, SegmentValue::CenterOf(y)))
                + Text::new(
                    kind.label(*v),
                    (6, 0),
                    TextStyle::from(("sans-serif", 12).into_font())
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                )
        }))
        .map_err(err(path))?;
    root.present().map_err(err(path))?;
    Ok(())
}

/// One line of a line chart: name and one value per x position.
#[derive(Debug, Clone)]
pub struct Line {
    pub name: String,
    pub values: Vec<i64>,
}

/// X axis of a line chart.
pub struct XAxis<'a> {
    /// Positions, ascending (e.g. seconds since the first snapshot).
    pub xs: Vec<f64>,
    /// Axis description.
    pub desc: String,
    /// Tick label formatter.
    pub fmt: &'a dyn Fn(f64) -> String,
}

/// Line chart of several series over the same x positions, with a legend.
pub fn line_chart(
    path: &Path,
    opts: &ChartOpts,
    x: &XAxis,
    lines: &[Line],
    kind: ValueKind,
) -> Result<(), PlotError> {
    let height = opts.height.unwrap_or(600);
    let root = SVGBackend::new(path, (opts.width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(err(path))?;

    let x_lo = x.xs.first().copied().unwrap_or(0.0);
    let mut x_hi = x.xs.last().copied().unwrap_or(1.0);
    if x_hi <= x_lo {
        x_hi = x_lo + 1.0;
    }
    let vals = lines.iter().flat_map(|l| l.values.iter().copied());
    let (lo, hi) = vals.fold((0i64, 1i64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (div, unit) = kind.axis_unit(hi.unsigned_abs().max(lo.unsigned_abs()));
    let (mut y_lo, mut y_hi) = (lo as f64 / div, hi as f64 / div);
    let pad = (y_hi - y_lo) / 10.0;
    y_hi += pad;
    if y_lo < 0.0 {
        y_lo -= pad;
    }

    let mut chart = ChartBuilder::on(&root)
        .caption(&opts.title, ("sans-serif", 20))
        .margin(12)
        .margin_right(40)
        .x_label_area_size(50)
        .y_label_area_size(90)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)
        .map_err(err(path))?;
    let x_fmt = |v: &f64| (x.fmt)(*v);
    let y_fmt = |v: &f64| tick(*v, unit);
    chart
        .configure_mesh()
        .x_labels(8)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc(x.desc.as_str())
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err(path))?;

    for (i, l) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> =
            x.xs.iter()
                .copied()
                .zip(l.values.iter().map(|v| *v as f64 / div))
                .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(err(path))?
            .label(l.name.as_str())
            .legend(move |(lx, ly)| {
                PathElement::new(vec![(lx, ly), (lx + 20, ly)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(err(path))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err(path))?;
    root.present().map_err(err(path))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_units_and_ticks() {
        assert_eq!(ValueKind::Bytes.axis_unit(1000), (1.0, "B"));
        assert_eq!(ValueKind::Bytes.axis_unit(200 << 20), (1048576.0, "MiB"));
        assert_eq!(ValueKind::Count.axis_unit(1 << 40), (1.0, ""));
        assert_eq!(tick(50.0, "MiB"), "50 MiB");
        assert_eq!(tick(2.5, "GiB"), "2.5 GiB");
        assert_eq!(tick(-0.0001, ""), "0");
    }
}
