//! `allocinfo top`: the call sites with the most memory allocated, or the
//! most live allocations.

use crate::cli::{FilterArgs, Format, SortKey, TopArgs, UsageError, DEFAULT_SOURCE};
use crate::input::{load, Input};
use crate::render::{
    limit, prom_gauge, site_labels, to_csv, to_json, write_stdout, RenderError, SiteJson,
    SiteTable, TopSummary,
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
    write_stdout(&render(&recs, summary, a.format)?)
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
    }
}
