//! `allocinfo plot`: SVG charts of the top call sites, of group totals, or of
//! a series of snapshots.

use super::group::group_rows;
use super::top::top_sites;
use crate::cli::{
    ChartArgs, PlotArgs, PlotGroupArgs, PlotKind, PlotSeriesArgs, PlotTopArgs, SeriesBy, SortKey,
};
use crate::input::{load_file, Input};
use allocinfo::group::{group_key, GroupBy};
use allocinfo::plot::{self, ChartOpts, Line, ValueKind, XAxis};
use allocinfo::record::{Record, SiteKey};
use allocinfo::snap;
use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub fn run(a: PlotArgs, verbose: bool) -> Result<()> {
    match a.kind {
        PlotKind::Top(a) => plot_top(a, verbose),
        PlotKind::Group(a) => plot_group(a, verbose),
        PlotKind::Series(a) => plot_series(a),
    }
}

fn plot_top(a: PlotTopArgs, verbose: bool) -> Result<()> {
    let n = if a.n == 0 { 20 } else { a.n };
    let input = Input::new(&a.live, &a.input, verbose)?;
    let (recs, _) = top_sites(&input, &a.filter, a.by, n)?;
    let (bars, what, kind): (Vec<_>, _, _) = match a.by {
        SortKey::Bytes => (
            recs.iter().map(|r| (site_label(r), r.bytes)).collect(),
            "bytes",
            ValueKind::Bytes,
        ),
        SortKey::Calls => (
            recs.iter()
                .map(|r| (site_label(r), i64::try_from(r.calls).unwrap_or(i64::MAX)))
                .collect(),
            "live allocations",
            ValueKind::Count,
        ),
    };
    let title = format!("Top {} call sites by {what} ({})", bars.len(), input.name());
    plot::bar_chart(&a.chart.out, &chart_opts(&a.chart, title), &bars, kind)?;
    Ok(())
}

fn plot_group(a: PlotGroupArgs, verbose: bool) -> Result<()> {
    let n = if a.n == 0 { 20 } else { a.n };
    let input = Input::new(&a.live, &a.input, verbose)?;
    let rows = group_rows(&input, &a.filter, a.by, a.depth, n)?;
    let bars: Vec<_> = rows.iter().map(|r| (r.group.clone(), r.bytes)).collect();
    let title = format!("Allocated bytes by {} ({})", a.by.as_str(), input.name());
    plot::bar_chart(
        &a.chart.out,
        &chart_opts(&a.chart, title),
        &bars,
        ValueKind::Bytes,
    )?;
    Ok(())
}

fn plot_series(a: PlotSeriesArgs) -> Result<()> {
    let files = expand_series_inputs(&a.files)?;
    let n = if a.n == 0 { 5 } else { a.n };
    // Per snapshot: key -> bytes.
    let mut names: HashMap<String, String> = HashMap::new();
    let mut columns: Vec<HashMap<String, i64>> = Vec::new();
    for f in &files {
        let recs = load_file(&f.to_string_lossy(), &a.filter)?;
        let mut col: HashMap<String, i64> = HashMap::new();
        for r in &recs {
            let (key, label) = match a.by {
                SeriesBy::Site => (r.key().to_string(), site_label(r)),
                other => {
                    let by = match other {
                        SeriesBy::Subsystem => GroupBy::Subsystem,
                        SeriesBy::Dir => GroupBy::Dir,
                        SeriesBy::Module => GroupBy::Module,
                        _ => GroupBy::Func,
                    };
                    let k = group_key(r, by, a.depth);
                    (k.clone(), k)
                }
            };
            let e = col.entry(key.clone()).or_insert(0);
            *e = e.saturating_add(r.bytes);
            names.entry(key).or_insert(label);
        }
        columns.push(col);
    }
    let mut peaks: Vec<(String, i64)> = names
        .keys()
        .map(|k| {
            let peak = columns
                .iter()
                .map(|c| c.get(k).copied().unwrap_or(0))
                .max()
                .unwrap_or(0);
            (k.clone(), peak)
        })
        .filter(|(_, p)| a.filter.min_bytes.is_none_or(|m| *p >= m))
        .collect();
    peaks.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    peaks.truncate(n);
    let lines: Vec<Line> = peaks
        .iter()
        .map(|(k, _)| Line {
            name: names[k].clone(),
            values: columns
                .iter()
                .map(|c| c.get(k).copied().unwrap_or(0))
                .collect(),
        })
        .collect();

    let times: Vec<Option<DateTime<Utc>>> = files.iter().map(|f| snap::snapshot_time(f)).collect();
    let opts = chart_opts(
        &a.chart,
        format!(
            "Top {} {} over {} snapshots",
            lines.len(),
            series_what(a.by),
            files.len()
        ),
    );
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            f.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    draw_series(&a.chart.out, &opts, &times, &names, &lines)
}

/// A line chart of `lines` over the captures `names` taken at `times`:
/// when every capture has a time, the x axis is UTC time; otherwise it has
/// one tick per capture, labelled with its name.
pub fn draw_series(
    out: &Path,
    opts: &ChartOpts,
    times: &[Option<DateTime<Utc>>],
    names: &[String],
    lines: &[Line],
) -> Result<()> {
    let t0_fmt;
    // Without timestamps: one tick per snapshot, labelled with its file name.
    let file_names: Vec<String> = names
        .iter()
        .map(|n| {
            if n.chars().count() > 24 {
                format!("{}…", n.chars().take(23).collect::<String>())
            } else {
                n.clone()
            }
        })
        .collect();
    let idx_fmt = |x: f64| {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        file_names.get(i as usize).cloned().unwrap_or_default()
    };
    let x_axis = if let (Some(Some(t0)), true) = (times.first(), times.iter().all(Option::is_some))
    {
        let t0 = *t0;
        let xs: Vec<f64> = times
            .iter()
            .map(|t| (t.unwrap_or(t0) - t0).num_seconds() as f64)
            .collect();
        let span = xs.iter().copied().fold(0.0, f64::max);
        t0_fmt = move |x: f64| {
            let t = t0 + chrono::Duration::seconds(x.round() as i64);
            if span >= 86400.0 {
                t.format("%m-%d %H:%M").to_string()
            } else {
                t.format("%H:%M:%S").to_string()
            }
        };
        XAxis {
            xs,
            desc: format!(
                "time (UTC), first snapshot {}",
                t0.format("%Y-%m-%d %H:%M:%S")
            ),
            fmt: &t0_fmt,
        }
    } else {
        XAxis {
            xs: (0..names.len()).map(|i| i as f64).collect(),
            desc: "snapshot".to_string(),
            fmt: &idx_fmt,
        }
    };
    plot::line_chart(out, opts, &x_axis, lines, ValueKind::Bytes)?;
    Ok(())
}

pub fn chart_opts(c: &ChartArgs, default_title: String) -> ChartOpts {
    ChartOpts {
        title: c.title.clone().unwrap_or(default_title),
        width: c.width.max(200),
        height: c.height,
    }
}

fn site_label(r: &Record) -> String {
    key_label(&r.key())
}

/// A call site as a chart names it: `func (file:line) [module]`.
pub fn key_label(k: &SiteKey) -> String {
    match &k.module {
        Some(m) => format!("{} ({}:{}) [{m}]", k.func, k.file, k.line),
        None => format!("{} ({}:{})", k.func, k.file, k.line),
    }
}

/// Expand directories into their snapshot files.
pub fn expand_series_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let snaps =
                snap::list_snapshots(p).with_context(|| format!("cannot list {}", p.display()))?;
            if snaps.is_empty() {
                bail!("no allocinfo-<timestamp>.txt snapshots in {}", p.display());
            }
            files.extend(snaps);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

fn series_what(by: SeriesBy) -> &'static str {
    match by {
        SeriesBy::Site => "call sites",
        SeriesBy::Subsystem => "subsystems",
        SeriesBy::Dir => "directories",
        SeriesBy::Module => "modules",
        SeriesBy::Func => "functions",
    }
}
