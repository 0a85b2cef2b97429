//! What `ages`, `nodes` and `memcgs` share: the live allocations of a call
//! site in parts (age buckets, NUMA nodes, memory cgroups), ranked, cut and
//! printed alike.

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

/// A run of `ages`, `nodes` or `memcgs`: their shared options, the file,
/// the end of the table's last line, `-v`.
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
        let header = parsed.header.as_deref();
        let mut out = render(&sites, summary, self.note, header, args.format)?;
        let table = args.format == Format::Table;
        append_stats(&mut out, parsed.stats.as_deref(), table, self.verbose);
        if !table {
            // The table has it under its last line, Prometheus as metrics.
            append_stats(&mut out, header, false, self.verbose);
        }
        write_stdout(&out)
    }
}

/// How `ages`, `nodes` and `memcgs` show the parts of a call site's live
/// allocations (an age bucket, a node, a cgroup), for [`render`].
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
    /// The line under the table's last one that the file's [`Part::HEADER`]
    /// line gives (`header`, as the parser checked it).
    fn header_note(_header: &str) -> Option<String> {
        None
    }
    /// The Prometheus metrics of the file's [`Part::HEADER`] line.
    fn header_metrics(_out: &mut String, _header: &str) {}
}

#[derive(Serialize)]
struct PartJson<J> {
    #[serde(flatten)]
    part: J,
    bytes: i64,
    calls: u64,
    /// Where [`Part::ACCOUNTED`]: `accounted`, null without it.
    #[serde(flatten)]
    accounted: Option<AccountedJson>,
}

#[derive(Serialize)]
struct AccountedJson {
    accounted: Option<u64>,
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

/// Render the sites of `ages`, `nodes` or `memcgs` (already sorted and
/// truncated); `summary` counts the sites before `-n`, `note` ends the
/// table's last line (e.g. `--min-age`'s), `header` is the file's
/// [`Part::HEADER`] line.
///
/// The table has a row per site and part (the oldest bucket first, the
/// lowest node first): the site's columns on its first row, then the part
/// with its bytes and calls (and its accounted bytes where a shown part has
/// them). JSON has one object per site with its list of parts, CSV one row
/// per site and part, Prometheus two gauges per site and part (bytes,
/// allocations; a third with the accounted bytes).
fn render<P: PartOutput>(
    sites: &[PartSite<P>],
    summary: TopSummary,
    note: &str,
    header: Option<&str>,
    fmt: Format,
) -> Result<String, RenderError> {
    match fmt {
        Format::Table => {
            let accounted = any_accounted(sites);
            let mut columns = P::COLUMNS.to_vec();
            let mut right = vec![0, 1, 2, 7, 8];
            if accounted {
                columns.push("Accounted");
                right.push(9);
            }
            let mut t = SiteTable::new(&columns, &right);
            for (i, s) in sites.iter().enumerate() {
                let mut parts: Vec<_> = s.parts.iter().collect();
                if P::LAST_FIRST {
                    parts.reverse();
                }
                for (j, c) in parts.into_iter().enumerate() {
                    let mut more =
                        vec![c.part.to_string(), format_iec(c.bytes), c.calls.to_string()];
                    if accounted {
                        more.push(c.accounted.map_or(String::new(), |a| {
                            format_iec(i64::try_from(a).unwrap_or(i64::MAX))
                        }));
                    }
                    if j == 0 {
                        t.add_site(i + 1, &s.site, more);
                    } else {
                        t.add_more(more);
                    }
                }
            }
            let mut out = t.finish(summary, "call sites", note);
            if let Some(line) = header.and_then(P::header_note) {
                out.push_str(&line);
                out.push('\n');
            }
            Ok(out)
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
            let accounted: &[&str] = if P::ACCOUNTED { &["accounted"] } else { &[] };
            let columns = [
                &["rank", "file", "line", "module", "func"][..],
                P::CSV_COLUMNS,
                &["bytes", "calls"],
                accounted,
            ];
            w.write_record(columns.concat())?;
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
                    if P::ACCOUNTED {
                        row.push(c.accounted.map_or(String::new(), |a| a.to_string()));
                    }
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
            if any_accounted(sites) {
                let samples = sites.iter().flat_map(|s| {
                    let labels = site_labels(&s.site.key());
                    s.parts.iter().filter_map(move |c| {
                        Some((format!("{labels},{}", c.part.labels()), c.accounted?))
                    })
                });
                prom_gauge(
                    &mut out,
                    &format!("{}_accounted_bytes", P::METRIC),
                    &format!(
                        "Bytes of the live allocations that asked to be charged \
                         (__GFP_ACCOUNT, a cgroup other than the root; Linux 7.3) of a call site {}",
                        P::HELP
                    ),
                    samples,
                );
            }
            if let Some(h) = header {
                P::header_metrics(&mut out, h);
            }
            Ok(out)
        }
    }
}

/// Whether a part of `sites` has accounted bytes (only memcgs' can, on 7.3).
fn any_accounted<P: Part>(sites: &[PartSite<P>]) -> bool {
    P::ACCOUNTED
        && sites
            .iter()
            .any(|s| s.parts.iter().any(|c| c.accounted.is_some()))
}

fn part_json<P: PartOutput>(c: &PartCount<P>) -> PartJson<P::Json> {
    PartJson {
        part: c.part.json(),
        bytes: c.bytes,
        calls: c.calls,
        accounted: P::ACCOUNTED.then_some(AccountedJson {
            accounted: c.accounted,
        }),
    }
}
