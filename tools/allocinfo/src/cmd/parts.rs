//! What `ages` and `nodes` share: the live allocations of a call site in
//! parts (age buckets, NUMA nodes), ranked, cut and printed alike.

use crate::cli::{Format, PartsArgs};
use crate::input::{display_name, read_debugfs, report_issues};
use crate::render::{
    append_stats, csv_text, limit, prom_gauge, site_labels, to_json, write_stdout, RenderError,
    SiteJson, SiteTable, TopSummary,
};
use allocinfo::split::{self, Part, PartCount, PartSite};
use allocinfo::units::format_iec;
use anyhow::Result;
use serde::Serialize;
use std::cmp::Ordering;

/// A run of `ages` or `nodes`: their shared options, the file, the end of
/// the table's last line, `-v`.
pub struct PartsCmd<'a> {
    pub args: &'a PartsArgs,
    pub input: &'a str,
    pub note: &'a str,
    pub verbose: bool,
}

impl PartsCmd<'_> {
    /// Reads and parses the file, keeps the lines of the selected call
    /// sites, gathers them per call site, lets `keep` drop parts (a site
    /// left with none goes), drops the sites under `--min-bytes`, sorts
    /// them by `order` (then by identity), cuts to `-n` and prints them.
    pub fn run<P: PartOutput>(
        &self,
        keep: impl FnOnce(&mut Vec<PartSite<P>>),
        order: impl Fn(&PartSite<P>, &PartSite<P>) -> Ordering,
    ) -> Result<()> {
        let (args, filter) = (self.args, &self.args.filter);
        let filter_sites = filter.site.filter()?;
        let name = display_name(self.input);
        let parsed = split::parse_bytes::<P>(&read_debugfs(self.input)?);
        report_issues(&parsed.issues, &name, filter.strict)?;
        let lines: Vec<_> = parsed
            .lines
            .into_iter()
            .filter(|l| filter_sites.matches(&l.site))
            .collect();
        let mut sites = split::sites(&lines);
        keep(&mut sites);
        sites.retain(|s| !s.parts.is_empty());
        if let Some(min) = filter.min_bytes {
            sites.retain(|s| s.site.bytes >= min);
        }
        let summary = TopSummary::of(sites.iter().map(|s| &s.site));
        sites.sort_by(|x, y| order(x, y).then_with(|| x.site.key().cmp(&y.site.key())));
        limit(&mut sites, args.n);
        let mut out = render(&sites, summary, self.note, args.format)?;
        append_stats(
            &mut out,
            parsed.stats.as_deref(),
            args.format == Format::Table,
            self.verbose,
        );
        write_stdout(&out)
    }
}

/// How `ages` and `nodes` show the parts of a call site's live
/// allocations (an age bucket, a node), for [`render`].
pub trait PartOutput: Part {
    /// The table's columns after the site's: the part, its bytes, its calls.
    const COLUMNS: [&'static str; 3];
    /// Whether the table lists a site's parts last first (oldest bucket first).
    const LAST_FIRST: bool;
    /// The name of a site's list of parts in JSON.
    const JSON_LIST: &'static str;
    /// The part's own CSV columns (between the site's and bytes, calls).
    const CSV_COLUMNS: &'static [&'static str];
    /// The Prometheus metrics' prefix: `PREFIX_bytes`, `PREFIX_allocations`.
    const METRIC: &'static str;
    /// What a sample is, for the metrics' help: "... of a call site WHAT".
    const HELP: &'static str;
    /// The part's own JSON fields (before bytes and calls).
    type Json: Serialize;
    fn json(&self) -> Self::Json;
    /// The part's own CSV cells, for [`PartOutput::CSV_COLUMNS`].
    fn csv(&self) -> Vec<String>;
    /// The part's own Prometheus labels, `name="value",...`.
    fn labels(&self) -> String;
}

#[derive(Serialize)]
struct PartJson<J> {
    #[serde(flatten)]
    part: J,
    bytes: i64,
    calls: u64,
}

/// A site's list of parts under its name ([`PartOutput::JSON_LIST`]).
struct NamedList<T> {
    name: &'static str,
    items: Vec<T>,
}

impl<T: Serialize> Serialize for NamedList<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(self.name, &self.items)?;
        m.end()
    }
}

#[derive(Serialize)]
struct PartSiteJson<'a, J> {
    #[serde(flatten)]
    site: SiteJson<'a>,
    #[serde(flatten)]
    parts: NamedList<PartJson<J>>,
}

/// Render the sites of `ages` or `nodes` (already sorted and truncated);
/// `summary` counts the sites before `-n`, `note` ends the table's last
/// line (e.g. `--min-age`'s).
///
/// The table has a row per site and part (the oldest bucket first, the
/// lowest node first): the site's columns on its first row, then the part
/// with its bytes and calls. JSON has one object per site with its list of
/// parts, CSV one row per site and part, Prometheus two gauges per site and
/// part (bytes, allocations).
fn render<P: PartOutput>(
    sites: &[PartSite<P>],
    summary: TopSummary,
    note: &str,
    fmt: Format,
) -> Result<String, RenderError> {
    match fmt {
        Format::Table => {
            let mut t = SiteTable::new(&P::COLUMNS, &[0, 1, 2, 7, 8]);
            for (i, s) in sites.iter().enumerate() {
                let mut parts: Vec<_> = s.parts.iter().collect();
                if P::LAST_FIRST {
                    parts.reverse();
                }
                for (j, c) in parts.into_iter().enumerate() {
                    let more = [c.part.to_string(), format_iec(c.bytes), c.calls.to_string()];
                    if j == 0 {
                        t.add_site(i + 1, &s.site, more);
                    } else {
                        t.add_more(more);
                    }
                }
            }
            Ok(t.finish(summary, "call sites", note))
        }
        Format::Json => {
            let v: Vec<_> = sites
                .iter()
                .enumerate()
                .map(|(i, s)| PartSiteJson {
                    site: SiteJson::new(i + 1, &s.site),
                    parts: NamedList {
                        name: P::JSON_LIST,
                        items: s.parts.iter().map(|c| part_json(c)).collect(),
                    },
                })
                .collect();
            to_json(&v)
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let header = [
                &["rank", "file", "line", "module", "func"][..],
                P::CSV_COLUMNS,
                &["bytes", "calls"],
            ];
            w.write_record(header.concat())?;
            for (i, s) in sites.iter().enumerate() {
                for c in &s.parts {
                    let mut row = vec![
                        (i + 1).to_string(),
                        s.site.file.clone(),
                        s.site.line.to_string(),
                        s.site.module.clone().unwrap_or_default(),
                        s.site.func.clone(),
                    ];
                    row.extend(c.part.csv());
                    row.extend([c.bytes.to_string(), c.calls.to_string()]);
                    w.write_record(row)?;
                }
            }
            csv_text(w)
        }
        Format::Prometheus => {
            let mut out = String::new();
            for (what, unit, value) in [
                (
                    "Bytes of the live allocations",
                    "bytes",
                    (|c| c.bytes.to_string()) as fn(&PartCount<P>) -> String,
                ),
                ("Live allocations", "allocations", |c| c.calls.to_string()),
            ] {
                let samples = sites.iter().flat_map(|s| {
                    let labels = site_labels(&s.site.key());
                    s.parts
                        .iter()
                        .map(move |c| (format!("{labels},{}", c.part.labels()), value(c)))
                });
                prom_gauge(
                    &mut out,
                    &format!("{}_{unit}", P::METRIC),
                    &format!("{what} of a call site {}", P::HELP),
                    samples,
                );
            }
            Ok(out)
        }
    }
}

fn part_json<P: PartOutput>(c: &PartCount<P>) -> PartJson<P::Json> {
    PartJson {
        part: c.part.json(),
        bytes: c.bytes,
        calls: c.calls,
    }
}
