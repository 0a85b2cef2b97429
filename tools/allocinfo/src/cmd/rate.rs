//! `allocinfo top --by rate`: the call sites that allocate the most per
//! second between two captures (two timestamped snapshots, or the running
//! kernel read twice `--interval` apart), from the churn keys of
//! allocprof's `c` flag (`allocated:`, `freed:`), with their frees per
//! second beside them.

use crate::cli::{Format, TopArgs, UsageError};
use crate::input::{display_name, load, load_file, Input};
use crate::render::{
    limit, to_csv, to_json, write_stdout, RenderError, SiteJson, SiteTable, TopSummary,
};
use allocinfo::live::Via;
use allocinfo::rate::{per_second, rates, Rates, SiteRate};
use allocinfo::record::Record;
use allocinfo::snap;
use allocinfo::units::format_iec;
use anyhow::{bail, Result};
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};

/// `--interval`'s default, as `leaks --live`'s.
const DEFAULT_INTERVAL: f64 = 60.0;

/// What a call site without the keys needs, for the notes and errors.
const KEYS_HINT: &str = "allocprof's c flag gives a call site the keys allocated: and freed: \
                         in /proc/allocinfo format 2.0";

/// The two captures: their names, their sites, and the milliseconds
/// between them.
struct Pair {
    old: String,
    new: String,
    ms: i64,
    old_records: Vec<Record>,
    new_records: Vec<Record>,
}

pub fn run(a: TopArgs, verbose: bool) -> Result<()> {
    if a.format == Format::Prometheus {
        return Err(UsageError(
            "--by rate has no Prometheus output: --format prometheus without --by rate exports \
             the churn counters (allocinfo_churn_*_total), of which Prometheus takes rates"
                .into(),
        )
        .into());
    }
    // The checks of --live's options (--proc and --via need it).
    Input::new(&a.live, "", verbose)?;
    let pair = if a.live.live {
        sample_live(&a, verbose)?
    } else {
        if a.interval.is_some() {
            return Err(UsageError("--interval needs --live".into()).into());
        }
        read_pair(&a)?
    };
    let r = rates(&pair.old_records, &pair.new_records);
    say_left_out(&r, &pair);
    if r.sites.is_empty() {
        bail!(
            "no call site has the keys allocated: and freed: in both {} and {}: no rate ({KEYS_HINT})",
            pair.old,
            pair.new
        );
    }
    let mut sites = r.sites;
    if let Some(min) = a.filter.min_bytes {
        sites.retain(|s| s.record.bytes >= min);
    }
    let summary = TopSummary::of(sites.iter().map(|s| &s.record));
    limit(&mut sites, a.n);
    write_stdout(&render(&sites, summary, &pair, a.format)?)
}

/// OLD and NEW, whose snapshot names give their times.
fn read_pair(a: &TopArgs) -> Result<Pair> {
    let [old, new] = a.input.as_slice() else {
        return Err(UsageError(format!(
            "--by rate needs two captures, OLD NEW (got {}), or --live",
            a.input.len()
        ))
        .into());
    };
    // The times first, so that nothing is read for nothing.
    let time = |path: &str| {
        let name = display_name(path);
        match snap::snapshot_time(Path::new(path)) {
            Some(t) => Ok(t),
            None => Err(anyhow::anyhow!(
                "rates need each capture's time: {name} has none in its name (a snapshot \
                 named allocinfo-YYYYmmddTHHMMSSZ.txt or .compact, as `allocinfo snap` writes; \
                 or --live)"
            )),
        }
    };
    let (t0, t1) = (time(old)?, time(new)?);
    if t1 <= t0 {
        bail!(
            "{} is not later than {}: give the older capture first",
            display_name(new),
            display_name(old)
        );
    }
    Ok(Pair {
        old: display_name(old),
        new: display_name(new),
        ms: (t1 - t0).num_milliseconds(),
        old_records: load_file(old, &a.filter)?,
        new_records: load_file(new, &a.filter)?,
    })
}

/// `--live`: the kernel read twice, `--interval` seconds apart. As text:
/// the ioctl's records have no churn keys.
fn sample_live(a: &TopArgs, verbose: bool) -> Result<Pair> {
    if !a.input.is_empty() {
        return Err(UsageError("--live takes no FILE".into()).into());
    }
    let input = match Input::new(&a.live, "", verbose)? {
        Input::Live {
            via: Via::Ioctl, ..
        } => {
            return Err(UsageError(
                "--by rate reads the text of /proc/allocinfo: the ioctl's records have no \
                 allocated: and freed: keys (--via auto or text)"
                    .into(),
            )
            .into())
        }
        Input::Live { proc, verbose, .. } => Input::Live {
            proc,
            via: Via::Text,
            verbose,
        },
        file => file,
    };
    if verbose {
        eprintln!(
            "allocinfo: --by rate reads the text: the ioctl's records have no allocated: and \
             freed: keys"
        );
    }
    let interval = Duration::from_secs_f64(a.interval.unwrap_or(DEFAULT_INTERVAL));
    let t0 = Instant::now();
    let old_records = load(&input, &a.filter)?;
    if let Some(wait) = interval.checked_sub(t0.elapsed()) {
        std::thread::sleep(wait);
    }
    let t1 = Instant::now();
    let new_records = load(&input, &a.filter)?;
    let ms = i64::try_from((t1 - t0).as_millis()).unwrap_or(i64::MAX);
    if verbose {
        eprintln!("allocinfo: the second capture {ms} ms after the first");
    }
    Ok(Pair {
        old: "capture 1".into(),
        new: "capture 2".into(),
        ms,
        old_records,
        new_records,
    })
}

/// The notes on stderr of the call sites without a rate.
fn say_left_out(r: &Rates, p: &Pair) {
    for k in &r.old_only {
        eprintln!(
            "allocinfo: note: {k}: allocated: and freed: in {} only, not in {}: no rate",
            p.old, p.new
        );
    }
    for k in &r.new_only {
        eprintln!(
            "allocinfo: note: {k}: allocated: and freed: in {} only, not in {}: no rate",
            p.new, p.old
        );
    }
    for (k, old, new) in &r.restarted {
        eprintln!(
            "allocinfo: note: {k}: allocations went down ({old} in {}, {new} in {}): its counts \
             started again (c set again in between): no rate",
            p.old, p.new
        );
    }
    if r.without > 0 {
        eprintln!(
            "allocinfo: note: {} call sites without allocated: and freed: left out ({KEYS_HINT})",
            r.without
        );
    }
}

/// The seconds between the captures: whole, or to the millisecond.
fn seconds(ms: i64) -> String {
    if ms % 1000 == 0 {
        format!("{}", ms / 1000)
    } else {
        format!("{:.3}", ms as f64 / 1000.0)
    }
}

/// Calls per second in the table: two decimals.
fn calls_cell(v: f64) -> String {
    format!("{v:.2}")
}

/// Bytes per second in the table: IEC units.
fn bytes_cell(v: f64) -> String {
    format!("{}/s", format_iec(v.round() as i64))
}

/// A site's figures per second: allocations, frees, their bytes.
fn per_s(s: &SiteRate, ms: i64) -> [f64; 4] {
    let d = &s.delta;
    [
        per_second(d.allocs as f64, ms),
        per_second(d.frees as f64, ms),
        per_second(d.alloc_bytes as f64, ms),
        per_second(d.free_bytes as f64, ms),
    ]
}

#[derive(Serialize)]
struct RateJsonRow<'a> {
    #[serde(flatten)]
    site: SiteJson<'a>,
    allocs: u64,
    frees: i64,
    alloc_bytes: u64,
    free_bytes: i64,
    allocs_per_second: f64,
    frees_per_second: f64,
    alloc_bytes_per_second: f64,
    free_bytes_per_second: f64,
}

#[derive(Serialize)]
struct RateJson<'a> {
    old: &'a str,
    new: &'a str,
    seconds: f64,
    sites: Vec<RateJsonRow<'a>>,
}

#[derive(Serialize)]
struct RateCsvRow<'a> {
    rank: usize,
    bytes: i64,
    calls: u64,
    file: &'a str,
    line: u32,
    module: &'a str,
    func: &'a str,
    seconds: f64,
    allocs: u64,
    frees: i64,
    alloc_bytes: u64,
    free_bytes: i64,
    allocs_per_second: f64,
    frees_per_second: f64,
    alloc_bytes_per_second: f64,
    free_bytes_per_second: f64,
}

const RATE_CSV_HEADER: [&str; 16] = [
    "rank",
    "bytes",
    "calls",
    "file",
    "line",
    "module",
    "func",
    "seconds",
    "allocs",
    "frees",
    "alloc_bytes",
    "free_bytes",
    "allocs_per_second",
    "frees_per_second",
    "alloc_bytes_per_second",
    "free_bytes_per_second",
];

/// Render the rows of `top --by rate` (already sorted and cut).
fn render(
    rows: &[SiteRate],
    summary: TopSummary,
    p: &Pair,
    fmt: Format,
) -> Result<String, RenderError> {
    let secs = p.ms as f64 / 1000.0;
    match fmt {
        Format::Table => {
            let mut t = SiteTable::new(
                &["Allocs/s", "Frees/s", "Alloc B/s", "Free B/s"],
                &[0, 1, 2, 6, 7, 8, 9],
            );
            for (i, s) in rows.iter().enumerate() {
                let [a, f, ab, fb] = per_s(s, p.ms);
                t.add_site(
                    i + 1,
                    &s.record,
                    [calls_cell(a), calls_cell(f), bytes_cell(ab), bytes_cell(fb)],
                );
            }
            let note = format!(", {} s from {} to {}", seconds(p.ms), p.old, p.new);
            Ok(t.finish(summary, "call sites with a rate", &note))
        }
        Format::Json => to_json(&RateJson {
            old: &p.old,
            new: &p.new,
            seconds: secs,
            sites: rows
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let [a, f, ab, fb] = per_s(s, p.ms);
                    RateJsonRow {
                        site: SiteJson::new(i + 1, &s.record),
                        allocs: s.delta.allocs,
                        frees: s.delta.frees,
                        alloc_bytes: s.delta.alloc_bytes,
                        free_bytes: s.delta.free_bytes,
                        allocs_per_second: a,
                        frees_per_second: f,
                        alloc_bytes_per_second: ab,
                        free_bytes_per_second: fb,
                    }
                })
                .collect(),
        }),
        Format::Csv => to_csv(
            rows.iter().enumerate().map(|(i, s)| {
                let r = &s.record;
                let [a, f, ab, fb] = per_s(s, p.ms);
                RateCsvRow {
                    rank: i + 1,
                    bytes: r.bytes,
                    calls: r.calls,
                    file: &r.file,
                    line: r.line,
                    module: r.module.as_deref().unwrap_or(""),
                    func: &r.func,
                    seconds: secs,
                    allocs: s.delta.allocs,
                    frees: s.delta.frees,
                    alloc_bytes: s.delta.alloc_bytes,
                    free_bytes: s.delta.free_bytes,
                    allocs_per_second: a,
                    frees_per_second: f,
                    alloc_bytes_per_second: ab,
                    free_bytes_per_second: fb,
                }
            }),
            &RATE_CSV_HEADER,
        ),
        // Refused in `run`.
        Format::Prometheus => Ok(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells() {
        assert_eq!(seconds(60_000), "60");
        assert_eq!(seconds(1_002), "1.002");
        assert_eq!(calls_cell(1.5), "1.50");
        assert_eq!(calls_cell(-0.25), "-0.25");
        assert_eq!(bytes_cell(1280.0), "1.3 KiB/s");
        assert_eq!(bytes_cell(1152.0), "1.1 KiB/s");
        assert_eq!(bytes_cell(65536.0), "64.0 KiB/s");
        assert_eq!(bytes_cell(2.4), "2 B/s");
    }
}
