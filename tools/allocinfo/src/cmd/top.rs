//! `allocinfo top`: the call sites with the most memory allocated, or the
//! most live allocations.

use crate::cli::{FilterArgs, Format, SortKey, TopArgs, UsageError, DEFAULT_SOURCE};
use crate::input::{load, Input};
use crate::render::{
    limit, prom_gauge, prom_metric, site_labels, to_csv, to_json, write_stdout, RenderError,
    SiteJson, SiteTable, TopSummary,
};
use allocinfo::record::Record;
use anyhow::Result;
use serde::Serialize;
use std::collections::BTreeMap;

pub fn run(a: TopArgs, verbose: bool) -> Result<()> {
    let Some(by) = a.by.live_key() else {
        return super::rate::run(a, verbose);
    };
    if a.interval.is_some() {
        return Err(UsageError("--interval needs --by rate and --live".into()).into());
    }
    let file = match a.input.as_slice() {
        [] => DEFAULT_SOURCE,
        [file] => file.as_str(),
        _ => {
            return Err(UsageError(
                "top reads one FILE; two captures, OLD NEW, are for --by rate".into(),
            )
            .into())
        }
    };
    let input = Input::new(&a.live, file, verbose)?;
    let (recs, summary) = top_sites(&input, &a.filter, by, a.n)?;
    if a.format == Format::Prometheus {
        for note in negative_frees(&recs) {
            eprintln!("allocinfo: note: {note}");
        }
    }
    write_stdout(&render(&recs, summary, a.format)?)
}

/// The churn counters of Prometheus: (name, help, the value of a site),
/// `None` for a site without the keys or whose value a counter cannot
/// take (negative frees).
type ChurnCounter = (&'static str, &'static str, fn(&Record) -> Option<u64>);

const CHURN_COUNTERS: [ChurnCounter; 4] = [
    (
        "allocinfo_churn_allocations_total",
        "Allocations from a call site since allocprof's c flag was set on it (/proc/allocinfo allocated:).",
        |r| Some(r.churn()?.allocs),
    ),
    (
        "allocinfo_churn_frees_total",
        "Frees of a call site's memory since allocprof's c flag was set on it (/proc/allocinfo freed:).",
        |r| u64::try_from(r.churn()?.frees).ok(),
    ),
    (
        "allocinfo_churn_allocated_bytes_total",
        "Bytes allocated from a call site since allocprof's c flag was set on it (/proc/allocinfo allocated:).",
        |r| Some(r.churn()?.alloc_bytes),
    ),
    (
        "allocinfo_churn_freed_bytes_total",
        "Bytes freed of a call site's memory since allocprof's c flag was set on it (/proc/allocinfo freed:).",
        |r| u64::try_from(r.churn()?.free_bytes).ok(),
    ),
];

/// The sites whose frees are negative, which the Prometheus counters leave out.
fn negative_frees(rows: &[Record]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            let c = r.churn()?;
            (c.frees < 0 || c.free_bytes < 0).then(|| {
                format!(
                    "{}: freed:{}/{} is negative (allocprof's frees can be one off beside a \
                     free under way): left out of the frees counters",
                    r.key(),
                    c.free_bytes,
                    c.frees
                )
            })
        })
        .collect()
}

/// Filtered, min-bytes-trimmed and sorted call sites, plus the pre-limit summary.
pub fn top_sites(
    input: &Input,
    f: &FilterArgs,
    by: SortKey,
    n: usize,
) -> Result<(Vec<Record>, TopSummary)> {
    let mut recs = load(input, f)?;
    if let Some(min) = f.min_bytes {
        recs.retain(|r| r.bytes >= min);
    }
    let summary = TopSummary::of(&recs);
    sort_sites(&mut recs, by);
    limit(&mut recs, n);
    Ok((recs, summary))
}

/// Biggest first by `by`, then by the sites' identities.
fn sort_sites(records: &mut [Record], by: SortKey) {
    records.sort_by(|a, b| by.biggest_first(a, b).then_with(|| a.key().cmp(&b.key())));
}

#[derive(Serialize)]
struct TopJsonRow<'a> {
    #[serde(flatten)]
    site: SiteJson<'a>,
    extra: BTreeMap<&'a str, &'a str>,
}

#[derive(Serialize)]
struct TopCsvRow<'a> {
    rank: usize,
    bytes: i64,
    calls: u64,
    file: &'a str,
    line: u32,
    module: &'a str,
    func: &'a str,
    extra: String,
}

const TOP_CSV_HEADER: [&str; 8] = [
    "rank", "bytes", "calls", "file", "line", "module", "func", "extra",
];

/// Render the rows of `top` (already sorted and truncated).
fn render(rows: &[Record], summary: TopSummary, fmt: Format) -> Result<String, RenderError> {
    match fmt {
        Format::Table => {
            let with_notes = rows.iter().any(|r| !r.extra.is_empty());
            let notes: &[&str] = if with_notes { &["Notes"] } else { &[] };
            let mut t = SiteTable::new(notes, &[0, 1, 2]);
            for (i, r) in rows.iter().enumerate() {
                t.add_site(i + 1, r, with_notes.then(|| r.extra_string()));
            }
            Ok(t.finish(summary, "call sites", ""))
        }
        Format::Json => {
            let v: Vec<TopJsonRow> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| TopJsonRow {
                    site: SiteJson::new(i + 1, r),
                    extra: r
                        .extra
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .collect(),
                })
                .collect();
            to_json(&v)
        }
        Format::Csv => to_csv(
            rows.iter().enumerate().map(|(i, r)| TopCsvRow {
                rank: i + 1,
                bytes: r.bytes,
                calls: r.calls,
                file: &r.file,
                line: r.line,
                module: r.module.as_deref().unwrap_or(""),
                func: &r.func,
                extra: r.extra_string(),
            }),
            &TOP_CSV_HEADER,
        ),
        Format::Prometheus => {
            let mut out = String::new();
            let labels = |r: &Record| site_labels(&r.key());
            prom_gauge(
                &mut out,
                "allocinfo_bytes",
                "Bytes currently allocated from a call site (/proc/allocinfo).",
                rows.iter().map(|r| (labels(r), r.bytes)),
            );
            prom_gauge(
                &mut out,
                "allocinfo_allocations",
                "Live allocations from a call site (/proc/allocinfo).",
                rows.iter().map(|r| (labels(r), r.calls)),
            );
            // The counters of allocprof's c flag, when a site has them.
            if rows.iter().any(|r| r.churn().is_some()) {
                for (name, help, value) in CHURN_COUNTERS {
                    prom_metric(
                        &mut out,
                        name,
                        "counter",
                        help,
                        rows.iter().filter_map(|r| Some((labels(r), value(r)?))),
                    );
                }
            }
            // allocprof's m flag on Linux 7.3, when a site has it.
            if rows.iter().any(|r| r.accounted().is_some()) {
                prom_gauge(
                    &mut out,
                    "allocinfo_accounted_bytes",
                    "Live bytes of a call site with allocprof's m flag that asked to be charged \
                     to a memory cgroup (__GFP_ACCOUNT, a cgroup other than the root; \
                     /proc/allocinfo accounted:, Linux 7.3).",
                    rows.iter()
                        .filter_map(|r| Some((labels(r), r.accounted()?))),
                );
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_lines_for_sites() {
        let r = Record {
            bytes: 8192,
            calls: 2,
            file: "drivers/foo/b\"ar.c".into(),
            line: 77,
            module: Some("foo_mod".into()),
            func: "foo_probe".into(),
            extra: vec![],
        };
        let s = render(
            &[r],
            TopSummary {
                sites: 1,
                bytes: 8192,
            },
            Format::Prometheus,
        )
        .unwrap();
        assert!(s.contains(
            "allocinfo_bytes{file=\"drivers/foo/b\\\"ar.c\",line=\"77\",function=\"foo_probe\",module=\"foo_mod\"} 8192\n"
        ));
        assert!(s.starts_with("# HELP allocinfo_bytes "));
        assert!(!s.contains("churn"), "{s}");
        assert!(!s.contains("accounted"), "{s}");
    }

    #[test]
    fn prometheus_accounted_gauge() {
        let site = |line, extra: &[(&str, &str)]| Record {
            bytes: 5120,
            calls: 40,
            file: "modules/allocprof_test.c".into(),
            line,
            module: Some("allocprof_test".into()),
            func: "aptest_kmalloc_account".into(),
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let s = render(
            &[site(385, &[("accounted", "5120")]), site(386, &[])],
            TopSummary {
                sites: 2,
                bytes: 10240,
            },
            Format::Prometheus,
        )
        .unwrap();
        let gauge = s.split_once("# HELP allocinfo_accounted_bytes ").unwrap().1;
        assert_eq!(
            gauge,
            "Live bytes of a call site with allocprof's m flag that asked to be charged to a \
             memory cgroup (__GFP_ACCOUNT, a cgroup other than the root; /proc/allocinfo \
             accounted:, Linux 7.3).\n\
             # TYPE allocinfo_accounted_bytes gauge\n\
             allocinfo_accounted_bytes{file=\"modules/allocprof_test.c\",line=\"385\",\
             function=\"aptest_kmalloc_account\",module=\"allocprof_test\"} 5120\n"
        );
    }

    #[test]
    fn prometheus_churn_counters() {
        let site = |func: &str, extra: &[(&str, &str)]| Record {
            bytes: 640,
            calls: 5,
            file: "a.c".into(),
            line: 1,
            module: None,
            func: func.into(),
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let rows = [
            site("f", &[("allocated", "77440/605"), ("freed", "69632/544")]),
            site("g", &[]),
            site("h", &[("allocated", "0/0"), ("freed", "-4096/-1")]),
        ];
        let s = render(&rows, TopSummary::of(&rows), Format::Prometheus).unwrap();
        let l = |f: &str| format!("{{file=\"a.c\",line=\"1\",function=\"{f}\",module=\"\"}}");
        let after_gauges = s.split_once("# HELP allocinfo_churn_").unwrap().1;
        assert_eq!(
            format!("# HELP allocinfo_churn_{after_gauges}"),
            format!(
                "# HELP allocinfo_churn_allocations_total Allocations from a call site since allocprof's c flag was set on it (/proc/allocinfo allocated:).\n\
                 # TYPE allocinfo_churn_allocations_total counter\n\
                 allocinfo_churn_allocations_total{f} 605\n\
                 allocinfo_churn_allocations_total{h} 0\n\
                 # HELP allocinfo_churn_frees_total Frees of a call site's memory since allocprof's c flag was set on it (/proc/allocinfo freed:).\n\
                 # TYPE allocinfo_churn_frees_total counter\n\
                 allocinfo_churn_frees_total{f} 544\n\
                 # HELP allocinfo_churn_allocated_bytes_total Bytes allocated from a call site since allocprof's c flag was set on it (/proc/allocinfo allocated:).\n\
                 # TYPE allocinfo_churn_allocated_bytes_total counter\n\
                 allocinfo_churn_allocated_bytes_total{f} 77440\n\
                 allocinfo_churn_allocated_bytes_total{h} 0\n\
                 # HELP allocinfo_churn_freed_bytes_total Bytes freed of a call site's memory since allocprof's c flag was set on it (/proc/allocinfo freed:).\n\
                 # TYPE allocinfo_churn_freed_bytes_total counter\n\
                 allocinfo_churn_freed_bytes_total{f} 69632\n",
                f = l("f"),
                h = l("h"),
            )
        );
        assert_eq!(
            negative_frees(&rows),
            [
                "a.c:1 h: freed:-4096/-1 is negative (allocprof's frees can be one off beside a \
              free under way): left out of the frees counters"
            ]
        );
    }
}
