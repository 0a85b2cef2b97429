//! `allocinfo leaks`: call sites ranked by steady growth over a series of
//! captures (files, a snapshot directory, or the running kernel sampled
//! with `--live`), with their oldest live age from allocprof's ages file.

use super::plot::{draw_series, expand_series_inputs, key_label};
use crate::cli::{LeaksArgs, LeaksFormat, UsageError};
use crate::input::{load, load_file, read_debugfs, report_issues, Input};
use crate::render::{limit, new_table, to_csv, to_json, write_stdout, RenderError};
use allocinfo::ages::{self, BucketCount};
use allocinfo::leaks::{self, Leaks, Rule, Trend};
use allocinfo::plot::{ChartOpts, Line};
use allocinfo::record::{Record, SiteKey};
use allocinfo::snap;
use allocinfo::units::{format_iec, format_iec_signed};
use anyhow::{bail, Result};
use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Fewest captures a trend is fitted on.
const MIN_CAPTURES: usize = 3;
/// Most lines `--plot` draws.
const MAX_PLOT_LINES: usize = 20;
/// `--live` defaults.
const DEFAULT_INTERVAL: f64 = 60.0;
const DEFAULT_COUNT: usize = 10;

/// One capture: what names it, when it was taken, its call sites.
struct Capture {
    name: String,
    time: Option<DateTime<Utc>>,
    records: Vec<Record>,
}

pub fn run(a: LeaksArgs, verbose: bool) -> Result<()> {
    if !a.live.live && (a.interval.is_some() || a.count.is_some()) {
        return Err(UsageError("--interval and --count need --live".into()).into());
    }
    if !a.live.live && a.input.is_empty() {
        return Err(UsageError(
            "leaks needs captures: FILE... (oldest first), a DIR of snapshots, or --live".into(),
        )
        .into());
    }
    let captures = if a.live.live {
        sample_live(&a, verbose)?
    } else {
        read_captures(&a)?
    };
    if captures.len() < MIN_CAPTURES {
        let names: Vec<&str> = captures.iter().map(|c| c.name.as_str()).collect();
        bail!(
            "leaks needs at least {MIN_CAPTURES} captures to fit a trend, got {} ({})",
            captures.len(),
            names.join(", ")
        );
    }
    let axis = Axis::of(&captures)?;
    let rule = Rule {
        min_r2: a.min_r2,
        min_grew: a.min_grew,
    };
    let mut captures = captures;
    let records: Vec<Vec<Record>> = captures
        .iter_mut()
        .map(|c| std::mem::take(&mut c.records))
        .collect();
    let Some(mut l) = leaks::rank(&records, &axis.xs, axis.per, &rule) else {
        bail!("the captures were all taken at the same time");
    };
    if let Some(min) = a.filter.min_bytes {
        l.sites.retain(|t| t.peak >= min);
        l.suspects = l.sites.iter().filter(|t| t.suspect).count();
    }
    let changed = l.sites.len();
    limit(&mut l.sites, a.n);
    let oldest = match &a.ages {
        Some(path) => Some(oldest_ages(path, a.filter.strict)?),
        None => None,
    };
    if let Some(out) = &a.plot {
        let lines: Vec<Line> = l
            .sites
            .iter()
            .take(MAX_PLOT_LINES)
            .map(|t| Line {
                name: key_label(&t.key),
                values: t.bytes.clone(),
            })
            .collect();
        let opts = ChartOpts {
            title: format!(
                "Leak suspects: {} call sites by steady growth over {} captures",
                lines.len(),
                captures.len()
            ),
            width: 1200,
            height: None,
        };
        let times: Vec<_> = captures.iter().map(|c| c.time).collect();
        let names: Vec<String> = captures.iter().map(|c| c.name.clone()).collect();
        draw_series(out, &opts, &times, &names, &lines)?;
    }
    let report = Report {
        leaks: &l,
        changed,
        rule,
        axis: &axis,
        captures: captures.len(),
        oldest: oldest.as_ref(),
    };
    write_stdout(&render(&report, a.format)?)
}

/// The files, or the snapshots in the directories, in the order given.
fn read_captures(a: &LeaksArgs) -> Result<Vec<Capture>> {
    let files = expand_series_inputs(&a.input)?;
    files
        .iter()
        .map(|f| {
            Ok(Capture {
                name: f.display().to_string(),
                time: snap::snapshot_time(f),
                records: load_file(&f.to_string_lossy(), &a.filter)?,
            })
        })
        .collect()
}

/// `--live`: `--count` captures of the running kernel, `--interval`
/// seconds apart (measured from the first, so they do not drift).
fn sample_live(a: &LeaksArgs, verbose: bool) -> Result<Vec<Capture>> {
    let input = Input::new(&a.live, "", verbose)?;
    let count = a.count.unwrap_or(DEFAULT_COUNT);
    let interval = Duration::from_secs_f64(a.interval.unwrap_or(DEFAULT_INTERVAL));
    let start = Instant::now();
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        if let Some(wait) = interval.mul_f64(i as f64).checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
        let time = Utc::now();
        let records = load(&input, &a.filter)?;
        if verbose {
            eprintln!(
                "allocinfo: capture {} of {count} at {}",
                i + 1,
                time.format("%H:%M:%S%.3f")
            );
        }
        out.push(Capture {
            name: format!("capture {}", i + 1),
            time: Some(time),
            records,
        });
    }
    Ok(out)
}

/// The x of each capture: milliseconds since the first when every capture
/// has a time (slopes per second), else its number (slopes per capture).
struct Axis {
    xs: Vec<i64>,
    per: i64,
    /// The first and last capture's times, when every capture has one.
    span: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

impl Axis {
    fn of(captures: &[Capture]) -> Result<Axis> {
        let times: Option<Vec<DateTime<Utc>>> = captures.iter().map(|c| c.time).collect();
        let Some(times) = times else {
            return Ok(Axis {
                xs: (0..captures.len() as i64).collect(),
                per: 1,
                span: None,
            });
        };
        for (w, c) in times.windows(2).zip(captures.windows(2)) {
            if w[1] <= w[0] {
                bail!(
                    "{} is not later than {}: captures must be given oldest first, each at \
                     another time",
                    c[1].name,
                    c[0].name
                );
            }
        }
        let t0 = times[0];
        Ok(Axis {
            xs: times.iter().map(|t| (*t - t0).num_milliseconds()).collect(),
            per: 1000,
            span: Some((t0, times[times.len() - 1])),
        })
    }

    fn per_second(&self) -> bool {
        self.span.is_some()
    }
}

/// The oldest bucket of each call site of an ages file.
fn oldest_ages(path: &str, strict: bool) -> Result<HashMap<SiteKey, BucketCount>> {
    let parsed = ages::parse_ages_bytes(&read_debugfs(path)?);
    report_issues(&parsed.issues, &format!("ages: {path}"), strict)?;
    Ok(ages::sites(&parsed.lines)
        .iter()
        .filter_map(|s| Some((s.site.key(), *s.oldest()?)))
        .collect())
}

/// What is printed.
struct Report<'a> {
    leaks: &'a Leaks,
    /// Sites whose bytes changed (after `--min-bytes`, before `-n`).
    changed: usize,
    rule: Rule,
    axis: &'a Axis,
    captures: usize,
    oldest: Option<&'a HashMap<SiteKey, BucketCount>>,
}

impl Report<'_> {
    fn oldest(&self, t: &Trend) -> Option<&BucketCount> {
        self.oldest?.get(&t.key)
    }

    fn unit(&self) -> &'static str {
        if self.axis.per_second() {
            "bytes_per_second"
        } else {
            "bytes_per_capture"
        }
    }
}

/// A slope for the table: IEC bytes per second or per capture, two
/// decimals below 10 bytes.
fn slope_cell(slope: f64, per_second: bool) -> String {
    let unit = if per_second { "/s" } else { "/capture" };
    if slope.abs() < 10.0 {
        if slope == 0.0 {
            format!("0 B{unit}")
        } else {
            format!("{slope:+.2} B{unit}")
        }
    } else {
        format!("{}{unit}", format_iec_signed(slope.round() as i64))
    }
}

#[derive(Serialize)]
struct AgeJson {
    lo_s: u64,
    hi_s: Option<u64>,
    bytes: i64,
    calls: u64,
}

#[derive(Serialize)]
struct SiteJson<'a> {
    rank: usize,
    suspect: bool,
    slope: f64,
    r2: f64,
    growth: i64,
    grew: usize,
    steps: usize,
    first_bytes: i64,
    last_bytes: i64,
    peak_bytes: i64,
    file: &'a str,
    line: u32,
    module: Option<&'a str>,
    func: &'a str,
    oldest_age: Option<AgeJson>,
    bytes: &'a [i64],
}

#[derive(Serialize)]
struct RuleJson {
    min_r2: f64,
    min_grew: String,
    min_grew_steps: usize,
}

#[derive(Serialize)]
struct LeaksJson<'a> {
    captures: usize,
    unit: &'static str,
    first: Option<String>,
    last: Option<String>,
    span_s: Option<f64>,
    rule: RuleJson,
    changed: usize,
    unchanged: usize,
    suspects: usize,
    sites: Vec<SiteJson<'a>>,
}

#[derive(Serialize)]
struct CsvRow<'a> {
    rank: usize,
    suspect: bool,
    slope: f64,
    r2: f64,
    growth: i64,
    grew: usize,
    steps: usize,
    first_bytes: i64,
    last_bytes: i64,
    peak_bytes: i64,
    file: &'a str,
    line: u32,
    module: &'a str,
    func: &'a str,
    oldest_age_lo_s: Option<u64>,
    oldest_age_hi_s: Option<u64>,
}

const CSV_HEADER: [&str; 16] = [
    "rank",
    "suspect",
    "slope",
    "r2",
    "growth",
    "grew",
    "steps",
    "first_bytes",
    "last_bytes",
    "peak_bytes",
    "file",
    "line",
    "module",
    "func",
    "oldest_age_lo_s",
    "oldest_age_hi_s",
];

fn first(t: &Trend) -> i64 {
    t.bytes.first().copied().unwrap_or(0)
}

fn last(t: &Trend) -> i64 {
    t.bytes.last().copied().unwrap_or(0)
}

fn render(r: &Report, fmt: LeaksFormat) -> Result<String, RenderError> {
    let l = r.leaks;
    let steps = r.captures - 1;
    let need = r.rule.min_grew.of(steps);
    match fmt {
        LeaksFormat::Table => {
            let mut out = String::new();
            match r.axis.span {
                Some((t0, t1)) => {
                    let _ = writeln!(
                        out,
                        "{} captures from {} to {} UTC ({} s); slopes in bytes per second",
                        r.captures,
                        t0.format("%Y-%m-%d %H:%M:%S"),
                        t1.format(if t0.date_naive() == t1.date_naive() {
                            "%H:%M:%S"
                        } else {
                            "%Y-%m-%d %H:%M:%S"
                        }),
                        (t1 - t0).num_milliseconds() as f64 / 1000.0
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "{} captures (not all named allocinfo-<timestamp>); slopes in bytes per \
                         capture",
                        r.captures
                    );
                }
            }
            let _ = writeln!(
                out,
                "Leak suspects: slope > 0, R² ≥ {}, grew in ≥ {} of the {steps} steps (at least {need})",
                r.rule.min_r2, r.rule.min_grew
            );
            if !l.sites.is_empty() {
                let with_ages = r.oldest.is_some();
                let mut header = vec![
                    "#", "Suspect", "Slope", "R²", "Growth", "Grew", "Last", "Location", "Module",
                    "Function",
                ];
                if with_ages {
                    header.push("Oldest age");
                }
                let mut t = new_table(&header, &[0, 2, 3, 4, 5, 6]);
                for (i, s) in l.sites.iter().enumerate() {
                    let mut row = vec![
                        (i + 1).to_string(),
                        if s.suspect { "yes" } else { "" }.to_string(),
                        slope_cell(s.slope, r.axis.per_second()),
                        format!("{:.3}", s.r2),
                        format_iec_signed(s.growth),
                        format!("{}/{}", s.grew, s.steps),
                        format_iec(last(s)),
                        s.key.location(),
                        s.key.module_label().to_string(),
                        s.key.func.clone(),
                    ];
                    if with_ages {
                        row.push(match r.oldest(s) {
                            Some(b) => format!("{} ({} calls)", b.part, b.calls),
                            None => "-".to_string(),
                        });
                    }
                    t.add_row(row);
                }
                let _ = writeln!(out, "{t}");
            }
            let _ = writeln!(
                out,
                "{} of {} call sites that changed, {} leak suspect(s); {} call sites unchanged",
                l.sites.len(),
                r.changed,
                l.suspects,
                l.unchanged
            );
            Ok(out)
        }
        LeaksFormat::Json => {
            let span = r.axis.span;
            to_json(&LeaksJson {
                captures: r.captures,
                unit: r.unit(),
                first: span.map(|s| s.0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                last: span.map(|s| s.1.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
                span_s: span.map(|(t0, t1)| (t1 - t0).num_milliseconds() as f64 / 1000.0),
                rule: RuleJson {
                    min_r2: r.rule.min_r2,
                    min_grew: r.rule.min_grew.to_string(),
                    min_grew_steps: need,
                },
                changed: r.changed,
                unchanged: l.unchanged,
                suspects: l.suspects,
                sites: l
                    .sites
                    .iter()
                    .enumerate()
                    .map(|(i, t)| SiteJson {
                        rank: i + 1,
                        suspect: t.suspect,
                        slope: t.slope,
                        r2: t.r2,
                        growth: t.growth,
                        grew: t.grew,
                        steps: t.steps,
                        first_bytes: first(t),
                        last_bytes: last(t),
                        peak_bytes: t.peak,
                        file: &t.key.file,
                        line: t.key.line,
                        module: t.key.module.as_deref(),
                        func: &t.key.func,
                        oldest_age: r.oldest(t).map(|b| AgeJson {
                            lo_s: b.part.lo,
                            hi_s: b.part.hi,
                            bytes: b.bytes,
                            calls: b.calls,
                        }),
                        bytes: &t.bytes,
                    })
                    .collect(),
            })
        }
        LeaksFormat::Csv => to_csv(
            l.sites.iter().enumerate().map(|(i, t)| {
                let age = r.oldest(t);
                CsvRow {
                    rank: i + 1,
                    suspect: t.suspect,
                    slope: t.slope,
                    r2: t.r2,
                    growth: t.growth,
                    grew: t.grew,
                    steps: t.steps,
                    first_bytes: first(t),
                    last_bytes: last(t),
                    peak_bytes: t.peak,
                    file: &t.key.file,
                    line: t.key.line,
                    module: t.key.module.as_deref().unwrap_or(""),
                    func: &t.key.func,
                    oldest_age_lo_s: age.map(|b| b.part.lo),
                    oldest_age_hi_s: age.and_then(|b| b.part.hi),
                }
            }),
            &CSV_HEADER,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_cells() {
        assert_eq!(slope_cell(64.0, true), "+64 B/s");
        assert_eq!(slope_cell(2048.0, true), "+2.0 KiB/s");
        assert_eq!(slope_cell(-34.0 / 3.0, true), "-11 B/s");
        assert_eq!(slope_cell(25.0 / 7.0, true), "+3.57 B/s");
        assert_eq!(slope_cell(0.0, false), "0 B/capture");
        assert_eq!(slope_cell(122880.0, false), "+120.0 KiB/capture");
    }
}
