//! `allocinfo faults`: the call sites whose allocations allocprof fails on
//! purpose, their failures and knobs (allocprof's debugfs faults file).

use crate::cli::{FaultsArgs, FaultsSortKey, Format};
use crate::input::{display_name, read_debugfs, report_issues};
use crate::render::{
    limit, new_table, prom_metric, site_labels, to_csv, to_json, write_stdout, RenderError,
};
use allocinfo::faults::{self, FaultSite};
use allocinfo::units::format_iec;
use anyhow::Result;
use serde::Serialize;

pub fn run(a: FaultsArgs) -> Result<()> {
    let filter = a.site.filter()?;
    let name = display_name(&a.input);
    let parsed = faults::parse_faults_bytes(&read_debugfs(&a.input)?);
    report_issues(&parsed.issues, &name, a.strict)?;
    let lines: Vec<FaultSite> = parsed
        .sites
        .into_iter()
        .filter(|s| filter.matches_key(&s.site))
        .collect();
    let mut sites = faults::merge_sites(&lines);
    let summary = FaultSummary::of(&sites);
    let key = |s: &FaultSite| match a.by {
        FaultsSortKey::Failures => (s.failed, s.asked),
        FaultsSortKey::Asked => (s.asked, s.failed),
    };
    sites.sort_by(|x, y| key(y).cmp(&key(x)).then_with(|| x.site.cmp(&y.site)));
    limit(&mut sites, a.n);
    write_stdout(&render(&sites, summary, a.format)?)
}

/// The footer data of `faults`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSummary {
    /// Call sites after filtering (before `-n`).
    pub sites: usize,
    /// Their failures.
    pub failed: u64,
}

impl FaultSummary {
    /// The number of `sites` and their failures.
    pub fn of<'a>(sites: impl IntoIterator<Item = &'a FaultSite>) -> FaultSummary {
        sites.into_iter().fold(
            FaultSummary {
                sites: 0,
                failed: 0,
            },
            |t, s| FaultSummary {
                sites: t.sites + 1,
                failed: t.failed.saturating_add(s.failed),
            },
        )
    }
}

#[derive(Serialize)]
struct FaultRow<'a> {
    rank: usize,
    failed: u64,
    asked: u64,
    file: &'a str,
    line: u32,
    /// `None` (JSON `null`, CSV empty) for built-in code.
    module: Option<&'a str>,
    func: &'a str,
    probability: u32,
    interval: u32,
    times_left: i32,
    space_left: u32,
    verbose: u32,
}

impl<'a> FaultRow<'a> {
    fn new(rank: usize, s: &'a FaultSite) -> Self {
        FaultRow {
            rank,
            failed: s.failed,
            asked: s.asked,
            file: &s.site.file,
            line: s.site.line,
            module: s.site.module.as_deref(),
            func: &s.site.func,
            probability: s.probability,
            interval: s.interval,
            times_left: s.times,
            space_left: s.space,
            verbose: s.verbose,
        }
    }
}

const FAULTS_CSV_HEADER: [&str; 12] = [
    "rank",
    "failed",
    "asked",
    "file",
    "line",
    "module",
    "func",
    "probability",
    "interval",
    "times_left",
    "space_left",
    "verbose",
];

/// A percentage as a ratio, exactly: 50 is `0.5`, 7 is `0.07`, 100 is `1`.
fn percent_ratio(p: u32) -> String {
    let (whole, frac) = (p / 100, p % 100);
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:02}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// Render the call sites of `faults` (already sorted and truncated);
/// `summary` counts the sites before `-n`.
///
/// The table shows the knobs as the control file takes them, `times` and
/// `space` as what is left (`no limit` for -1, `space` in IEC units). JSON
/// and CSV give the kernel's numbers (`times_left` -1: no limit).
/// Prometheus: the failures and the allocations asked as counters, the
/// knobs as gauges (`probability` as a ratio, `times` left +Inf for no
/// limit).
fn render(sites: &[FaultSite], summary: FaultSummary, fmt: Format) -> Result<String, RenderError> {
    match fmt {
        Format::Table => {
            let mut t = new_table(
                &[
                    "#",
                    "Failed",
                    "Asked",
                    "Location",
                    "Module",
                    "Function",
                    "Probability",
                    "Interval",
                    "Times left",
                    "Space left",
                    "Verbose",
                ],
                &[0, 1, 2, 6, 7, 8, 9, 10],
            );
            for (i, s) in sites.iter().enumerate() {
                t.add_row(vec![
                    (i + 1).to_string(),
                    s.failed.to_string(),
                    s.asked.to_string(),
                    s.site.location(),
                    s.site.module_label().to_string(),
                    s.site.func.clone(),
                    format!("{}%", s.probability),
                    s.interval.to_string(),
                    if s.times < 0 {
                        "no limit".to_string()
                    } else {
                        s.times.to_string()
                    },
                    format_iec(i64::from(s.space)),
                    s.verbose.to_string(),
                ]);
            }
            let shown = FaultSummary::of(sites);
            Ok(format!(
                "{t}\n{} of {} call sites, {} of {} failures\n",
                shown.sites, summary.sites, shown.failed, summary.failed
            ))
        }
        Format::Json => {
            let v: Vec<_> = sites
                .iter()
                .enumerate()
                .map(|(i, s)| FaultRow::new(i + 1, s))
                .collect();
            to_json(&v)
        }
        Format::Csv => to_csv(
            sites
                .iter()
                .enumerate()
                .map(|(i, s)| FaultRow::new(i + 1, s)),
            &FAULTS_CSV_HEADER,
        ),
        Format::Prometheus => {
            const FROM: &str = "(allocprof debugfs faults)";
            type Value = fn(&FaultSite) -> String;
            let metrics: [(&str, &str, String, Value); 7] = [
                (
                    "allocinfo_fault_failures_total",
                    "counter",
                    format!(
                        "Allocations of a call site with the f flag that were made to fail, \
                         since the flag was given {FROM}."
                    ),
                    |s| s.failed.to_string(),
                ),
                (
                    "allocinfo_fault_asked_total",
                    "counter",
                    format!(
                        "Allocations of a call site with the f flag that asked whether to fail \
                         (all but __GFP_NOFAIL ones), since the flag was given {FROM}."
                    ),
                    |s| s.asked.to_string(),
                ),
                (
                    "allocinfo_fault_probability_ratio",
                    "gauge",
                    format!(
                        "The probability knob of a call site with the f flag, as a ratio \
                         (probability=50 is 0.5) {FROM}."
                    ),
                    |s| percent_ratio(s.probability),
                ),
                (
                    "allocinfo_fault_interval",
                    "gauge",
                    format!(
                        "The interval knob of a call site with the f flag: only every \
                         interval-th allocation asked may fail {FROM}."
                    ),
                    |s| s.interval.to_string(),
                ),
                (
                    "allocinfo_fault_times_left",
                    "gauge",
                    format!(
                        "Failures left of the times knob of a call site with the f flag, \
                         +Inf for no limit (times=-1) {FROM}."
                    ),
                    |s| {
                        if s.times < 0 {
                            "+Inf".to_string()
                        } else {
                            s.times.to_string()
                        }
                    },
                ),
                (
                    "allocinfo_fault_space_left_bytes",
                    "gauge",
                    format!(
                        "Bytes left to spare of the space knob of a call site with the f flag \
                         {FROM}."
                    ),
                    |s| s.space.to_string(),
                ),
                (
                    "allocinfo_fault_verbose",
                    "gauge",
                    format!(
                        "The verbose knob of a call site with the f flag: 0 no report, 1 a \
                         report in the kernel log, 2 with the call chain {FROM}."
                    ),
                    |s| s.verbose.to_string(),
                ),
            ];
            let mut out = String::new();
            for (name, kind, help, value) in metrics {
                let samples = sites.iter().map(|s| (site_labels(&s.site), value(s)));
                prom_metric(&mut out, name, kind, &help, samples);
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_ratios_are_exact() {
        let got: Vec<_> = [0, 1, 7, 10, 50, 99, 100]
            .into_iter()
            .map(percent_ratio)
            .collect();
        assert_eq!(got, ["0", "0.01", "0.07", "0.1", "0.5", "0.99", "1"]);
    }
}
