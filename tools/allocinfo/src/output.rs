//! Rendering of command results as table, JSON, CSV or Prometheus text.

use crate::ages::AgeBucket;
use crate::diff::{Diff, SiteDelta};
use crate::faults::FaultSite;
use crate::group::{GroupBy, GroupRow};
use crate::nodes::Node;
use crate::record::{Record, SiteKey};
use crate::split::{Part, PartCount, PartSite};
use crate::stacks::StackRecord;
use crate::units::{format_iec, format_iec_signed};
use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Output format of the read commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Human-readable table with IEC sizes.
    Table,
    /// JSON (exact integers).
    Json,
    /// CSV with a header row (exact integers).
    Csv,
    /// Prometheus text exposition format (gauges; counters for faults), for
    /// node_exporter's textfile collector.
    Prometheus,
}

/// Output format of `stacks`: no Prometheus, whose series cannot be told
/// apart by call chain without a label per frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StacksFormat {
    /// Human-readable table with IEC sizes and the innermost frames.
    Table,
    /// JSON (exact integers, every frame).
    Json,
    /// CSV with a header row (exact integers, every frame in one column).
    Csv,
}

/// Errors while rendering (serialization failures).
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("JSON output: {0}")]
    Json(#[from] serde_json::Error),
    #[error("CSV output: {0}")]
    Csv(#[from] csv::Error),
    #[error("CSV output: {0}")]
    CsvInner(String),
}

type Result<T> = std::result::Result<T, RenderError>;

/// Escape a Prometheus label value: backslash, double quote and newline.
pub fn escape_label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Prometheus label value for a module: the name, or the empty string for
/// built-in code (equivalent to the label being absent).
fn prom_module(m: &Option<String>) -> &str {
    m.as_deref().unwrap_or("")
}

fn site_labels(k: &SiteKey) -> String {
    format!(
        "file=\"{}\",line=\"{}\",function=\"{}\",module=\"{}\"",
        escape_label_value(&k.file),
        k.line,
        escape_label_value(&k.func),
        escape_label_value(prom_module(&k.module))
    )
}

fn prom_header(out: &mut String, name: &str, help: &str) {
    prom_header_of(out, name, help, "gauge");
}

/// `# HELP` and `# TYPE` lines of a metric of type `kind` (`gauge`, `counter`).
fn prom_header_of(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn new_table(header: &[&str], right_align: &[usize]) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    for &i in right_align {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    t
}

fn to_csv<T: Serialize>(
    rows: impl IntoIterator<Item = T>,
    header_if_empty: &[&str],
) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut any = false;
    for r in rows {
        w.serialize(r)?;
        any = true;
    }
    if !any {
        w.write_record(header_if_empty)?;
    }
    csv_text(w)
}

/// The text a CSV writer wrote.
fn csv_text(w: csv::Writer<Vec<u8>>) -> Result<String> {
    let bytes = w
        .into_inner()
        .map_err(|e| RenderError::CsvInner(e.to_string()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn to_json<T: Serialize + ?Sized>(v: &T) -> Result<String> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    Ok(s)
}

/// The first columns of the tables of `top`, `stacks` and `ages`, whose
/// cells [`site_cells`] gives.
const SITE_COLUMNS: [&str; 6] = ["#", "Bytes", "Calls", "Location", "Module", "Function"];

/// The first cells of a row of `top`, `stacks` or `ages`: the rank and the site.
fn site_cells(rank: usize, r: &Record) -> Vec<String> {
    vec![
        rank.to_string(),
        format_iec(r.bytes),
        r.calls.to_string(),
        format!("{}:{}", r.file, r.line),
        r.module_label().to_string(),
        r.func.clone(),
    ]
}

/// The first members of a JSON object of `top`, `stacks` or `ages`: the
/// rank and the site.
#[derive(Serialize)]
struct SiteJson<'a> {
    rank: usize,
    bytes: i64,
    calls: u64,
    file: &'a str,
    line: u32,
    module: Option<&'a str>,
    func: &'a str,
}

impl<'a> SiteJson<'a> {
    fn new(rank: usize, r: &'a Record) -> Self {
        SiteJson {
            rank,
            bytes: r.bytes,
            calls: r.calls,
            file: &r.file,
            line: r.line,
            module: r.module.as_deref(),
            func: &r.func,
        }
    }
}

// ---------------------------------------------------------------- top

/// Summary line data for `top`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopSummary {
    /// Call sites after filtering (before `-n`).
    pub sites: usize,
    /// Their total bytes.
    pub bytes: i64,
}

impl TopSummary {
    /// The number of `sites` and their total bytes.
    pub fn of<'a>(sites: impl IntoIterator<Item = &'a Record>) -> TopSummary {
        sites
            .into_iter()
            .fold(TopSummary { sites: 0, bytes: 0 }, |t, r| TopSummary {
                sites: t.sites + 1,
                bytes: t.bytes.saturating_add(r.bytes),
            })
    }
}

/// The last line of the tables of `top`, `stacks` and `ages`, without its
/// newline: the `shown` rows out of `summary`'s (those before `-n`).
fn shown_of_total(shown: TopSummary, summary: TopSummary, what: &str) -> String {
    format!(
        "{} of {} {what}, {} of {} total",
        shown.sites,
        summary.sites,
        format_iec(shown.bytes),
        format_iec(summary.bytes)
    )
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
pub fn render_top(rows: &[Record], summary: TopSummary, fmt: Format) -> Result<String> {
    match fmt {
        Format::Table => {
            let with_notes = rows.iter().any(|r| !r.extra.is_empty());
            let mut header = SITE_COLUMNS.to_vec();
            if with_notes {
                header.push("Notes");
            }
            let mut t = new_table(&header, &[0, 1, 2]);
            for (i, r) in rows.iter().enumerate() {
                let mut row = site_cells(i + 1, r);
                if with_notes {
                    row.push(r.extra_string());
                }
                t.add_row(row);
            }
            let shown = TopSummary::of(rows);
            Ok(format!(
                "{t}\n{}\n",
                shown_of_total(shown, summary, "call sites")
            ))
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
            prom_header(
                &mut out,
                "allocinfo_bytes",
                "Bytes currently allocated from a call site (/proc/allocinfo).",
            );
            for r in rows {
                let _ = writeln!(
                    out,
                    "allocinfo_bytes{{{}}} {}",
                    site_labels(&r.key()),
                    r.bytes
                );
            }
            prom_header(
                &mut out,
                "allocinfo_allocations",
                "Live allocations from a call site (/proc/allocinfo).",
            );
            for r in rows {
                let _ = writeln!(
                    out,
                    "allocinfo_allocations{{{}}} {}",
                    site_labels(&r.key()),
                    r.calls
                );
            }
            Ok(out)
        }
    }
}

// ---------------------------------------------------------------- group

fn group_title(by: GroupBy) -> &'static str {
    match by {
        GroupBy::Subsystem => "Subsystem",
        GroupBy::Dir => "Directory",
        GroupBy::Module => "Module",
        GroupBy::Func => "Function",
    }
}

/// Render the rows of `group`.
pub fn render_group(rows: &[GroupRow], by: GroupBy, fmt: Format) -> Result<String> {
    match fmt {
        Format::Table => {
            let mut t = new_table(&["Bytes", "Calls", "Sites", group_title(by)], &[0, 1, 2]);
            for r in rows {
                t.add_row(vec![
                    format_iec(r.bytes),
                    r.calls.to_string(),
                    r.sites.to_string(),
                    r.group.clone(),
                ]);
            }
            let total = rows.iter().fold(0i64, |a, r| a.saturating_add(r.bytes));
            Ok(format!(
                "{t}\n{} groups, {} total\n",
                rows.len(),
                format_iec(total)
            ))
        }
        Format::Json => to_json(rows),
        Format::Csv => to_csv(rows, &["group", "bytes", "calls", "sites"]),
        Format::Prometheus => {
            let mut out = String::new();
            let by_s = by.as_str();
            prom_header(
                &mut out,
                "allocinfo_group_bytes",
                "Bytes currently allocated, summed per group of call sites (/proc/allocinfo).",
            );
            for r in rows {
                let _ = writeln!(
                    out,
                    "allocinfo_group_bytes{{by=\"{by_s}\",group=\"{}\"}} {}",
                    escape_label_value(&r.group),
                    r.bytes
                );
            }
            prom_header(
                &mut out,
                "allocinfo_group_allocations",
                "Live allocations, summed per group of call sites (/proc/allocinfo).",
            );
            for r in rows {
                let _ = writeln!(
                    out,
                    "allocinfo_group_allocations{{by=\"{by_s}\",group=\"{}\"}} {}",
                    escape_label_value(&r.group),
                    r.calls
                );
            }
            Ok(out)
        }
    }
}

// ---------------------------------------------------------------- diff

#[derive(Serialize)]
struct DiffSiteJson<'a> {
    file: &'a str,
    line: u32,
    module: Option<&'a str>,
    func: &'a str,
    status: &'static str,
    old_bytes: i64,
    new_bytes: i64,
    delta_bytes: i64,
    old_calls: u64,
    new_calls: u64,
    delta_calls: i64,
}

impl<'a> DiffSiteJson<'a> {
    fn from(s: &'a SiteDelta) -> Self {
        DiffSiteJson {
            file: &s.key.file,
            line: s.key.line,
            module: s.key.module.as_deref(),
            func: &s.key.func,
            status: s.status.as_str(),
            old_bytes: s.old_bytes,
            new_bytes: s.new_bytes,
            delta_bytes: s.delta_bytes(),
            old_calls: s.old_calls,
            new_calls: s.new_calls,
            delta_calls: s.delta_calls(),
        }
    }
}

#[derive(Serialize)]
struct DiffJson<'a> {
    group_by: GroupBy,
    totals: &'a crate::diff::Totals,
    counts: &'a crate::diff::StatusCounts,
    sites: Vec<DiffSiteJson<'a>>,
    groups: &'a [crate::diff::GroupDelta],
}

#[derive(Serialize)]
struct DiffCsvRow<'a> {
    kind: &'static str,
    group: &'a str,
    file: &'a str,
    line: Option<u32>,
    module: &'a str,
    func: &'a str,
    status: &'static str,
    old_bytes: i64,
    new_bytes: i64,
    delta_bytes: i64,
    old_calls: u64,
    new_calls: u64,
    delta_calls: i64,
}

fn signed(n: i64) -> String {
    if n > 0 {
        format!("+{n}")
    } else {
        n.to_string()
    }
}

/// Render a [`Diff`] (sites possibly truncated by the caller).
pub fn render_diff(d: &Diff, fmt: Format) -> Result<String> {
    match fmt {
        Format::Table => {
            let mut out = String::new();
            let c = &d.counts;
            let _ = write!(
                out,
                "Call sites: {} grown, {} shrunk, {} new, {} vanished, {} with only call-count changes",
                c.grown, c.shrunk, c.new, c.vanished, c.same
            );
            if d.sites.len() < c.total() {
                let _ = write!(out, " (showing {})", d.sites.len());
            }
            out.push('\n');
            if !d.sites.is_empty() {
                let mut t = new_table(
                    &[
                        "Change", "Old", "New", "Calls", "Status", "Location", "Module", "Function",
                    ],
                    &[0, 1, 2, 3],
                );
                for s in &d.sites {
                    t.add_row(vec![
                        format_iec_signed(s.delta_bytes()),
                        format_iec(s.old_bytes),
                        format_iec(s.new_bytes),
                        signed(s.delta_calls()),
                        s.status.as_str().to_string(),
                        s.key.location(),
                        s.key.module_label().to_string(),
                        s.key.func.clone(),
                    ]);
                }
                let _ = writeln!(out, "{t}");
            }
            let _ = writeln!(out, "\nBy {}:", d.group_by.as_str());
            if !d.groups.is_empty() {
                let mut t = new_table(
                    &["Change", "Old", "New", "Calls", group_title(d.group_by)],
                    &[0, 1, 2, 3],
                );
                for g in &d.groups {
                    t.add_row(vec![
                        format_iec_signed(g.delta_bytes),
                        format_iec(g.old_bytes),
                        format_iec(g.new_bytes),
                        signed(g.delta_calls),
                        g.group.clone(),
                    ]);
                }
                let _ = writeln!(out, "{t}");
            } else {
                let _ = writeln!(out, "no changes");
            }
            let tt = &d.totals;
            let _ = writeln!(
                out,
                "\nTotal: {} -> {} ({}), calls {} -> {} ({})",
                format_iec(tt.old_bytes),
                format_iec(tt.new_bytes),
                format_iec_signed(tt.delta_bytes),
                tt.old_calls,
                tt.new_calls,
                signed(tt.delta_calls)
            );
            Ok(out)
        }
        Format::Json => to_json(&DiffJson {
            group_by: d.group_by,
            totals: &d.totals,
            counts: &d.counts,
            sites: d.sites.iter().map(DiffSiteJson::from).collect(),
            groups: &d.groups,
        }),
        Format::Csv => {
            let sites = d.sites.iter().map(|s| DiffCsvRow {
                kind: "site",
                group: "",
                file: &s.key.file,
                line: Some(s.key.line),
                module: s.key.module.as_deref().unwrap_or(""),
                func: &s.key.func,
                status: s.status.as_str(),
                old_bytes: s.old_bytes,
                new_bytes: s.new_bytes,
                delta_bytes: s.delta_bytes(),
                old_calls: s.old_calls,
                new_calls: s.new_calls,
                delta_calls: s.delta_calls(),
            });
            let groups = d.groups.iter().map(|g| DiffCsvRow {
                kind: d.group_by.as_str(),
                group: &g.group,
                file: "",
                line: None,
                module: "",
                func: "",
                status: "",
                old_bytes: g.old_bytes,
                new_bytes: g.new_bytes,
                delta_bytes: g.delta_bytes,
                old_calls: g.old_calls,
                new_calls: g.new_calls,
                delta_calls: g.delta_calls,
            });
            to_csv(
                sites.chain(groups),
                &[
                    "kind",
                    "group",
                    "file",
                    "line",
                    "module",
                    "func",
                    "status",
                    "old_bytes",
                    "new_bytes",
                    "delta_bytes",
                    "old_calls",
                    "new_calls",
                    "delta_calls",
                ],
            )
        }
        Format::Prometheus => {
            let mut out = String::new();
            prom_header(
                &mut out,
                "allocinfo_diff_bytes",
                "Change in bytes allocated from a call site between two /proc/allocinfo snapshots.",
            );
            for s in &d.sites {
                let _ = writeln!(
                    out,
                    "allocinfo_diff_bytes{{{}}} {}",
                    site_labels(&s.key),
                    s.delta_bytes()
                );
            }
            prom_header(
                &mut out,
                "allocinfo_diff_allocations",
                "Change in live allocations from a call site between two /proc/allocinfo snapshots.",
            );
            for s in &d.sites {
                let _ = writeln!(
                    out,
                    "allocinfo_diff_allocations{{{}}} {}",
                    site_labels(&s.key),
                    s.delta_calls()
                );
            }
            let by_s = d.group_by.as_str();
            prom_header(
                &mut out,
                "allocinfo_group_diff_bytes",
                "Change in bytes allocated per group of call sites between two /proc/allocinfo snapshots.",
            );
            for g in &d.groups {
                let _ = writeln!(
                    out,
                    "allocinfo_group_diff_bytes{{by=\"{by_s}\",group=\"{}\"}} {}",
                    escape_label_value(&g.group),
                    g.delta_bytes
                );
            }
            prom_header(
                &mut out,
                "allocinfo_group_diff_allocations",
                "Change in live allocations per group of call sites between two /proc/allocinfo snapshots.",
            );
            for g in &d.groups {
                let _ = writeln!(
                    out,
                    "allocinfo_group_diff_allocations{{by=\"{by_s}\",group=\"{}\"}} {}",
                    escape_label_value(&g.group),
                    g.delta_calls
                );
            }
            Ok(out)
        }
    }
}

// ---------------------------------------------------------------- stacks

#[derive(Serialize)]
struct StackJsonRow<'a> {
    #[serde(flatten)]
    site: SiteJson<'a>,
    pid: u32,
    comm: &'a str,
    frames: &'a [String],
}

#[derive(Serialize)]
struct StackCsvRow<'a> {
    rank: usize,
    bytes: i64,
    calls: u64,
    file: &'a str,
    line: u32,
    module: &'a str,
    func: &'a str,
    pid: u32,
    comm: &'a str,
    frames: String,
}

const STACKS_CSV_HEADER: [&str; 10] = [
    "rank", "bytes", "calls", "file", "line", "module", "func", "pid", "comm", "frames",
];

/// The frames cell of the `stacks` table: the `max` innermost frames (0 =
/// all), one a line, and how many more there are.
fn frames_cell(frames: &[String], max: usize) -> String {
    if frames.is_empty() {
        return "(none)".to_string();
    }
    let shown = if max == 0 {
        frames.len()
    } else {
        max.min(frames.len())
    };
    let mut s = frames[..shown].join("\n");
    if shown < frames.len() {
        let _ = write!(s, "\n… {} more", frames.len() - shown);
    }
    s
}

/// Render the rows of `stacks` (already sorted and truncated); `summary`
/// counts the chains before `-n`. The table shows the `frames` innermost
/// frames of each chain (0 = all); JSON and CSV have every frame.
pub fn render_stacks(
    rows: &[StackRecord],
    summary: TopSummary,
    frames: usize,
    fmt: StacksFormat,
) -> Result<String> {
    match fmt {
        StacksFormat::Table => {
            let mut t = new_table(
                &[&SITE_COLUMNS[..], &["PID", "Comm", "Frames"]].concat(),
                &[0, 1, 2, 6],
            );
            for (i, r) in rows.iter().enumerate() {
                let mut row = site_cells(i + 1, &r.site);
                row.extend([
                    r.pid.to_string(),
                    r.comm.clone(),
                    frames_cell(&r.frames, frames),
                ]);
                t.add_row(row);
            }
            let shown = TopSummary::of(rows.iter().map(|r| &r.site));
            Ok(format!(
                "{t}\n{}\n",
                shown_of_total(shown, summary, "call chains")
            ))
        }
        StacksFormat::Json => {
            let v: Vec<StackJsonRow> = rows
                .iter()
                .enumerate()
                .map(|(i, r)| StackJsonRow {
                    site: SiteJson::new(i + 1, &r.site),
                    pid: r.pid,
                    comm: &r.comm,
                    frames: &r.frames,
                })
                .collect();
            to_json(&v)
        }
        StacksFormat::Csv => to_csv(
            rows.iter().enumerate().map(|(i, r)| StackCsvRow {
                rank: i + 1,
                bytes: r.site.bytes,
                calls: r.site.calls,
                file: &r.site.file,
                line: r.site.line,
                module: r.site.module.as_deref().unwrap_or(""),
                func: &r.site.func,
                pid: r.pid,
                comm: &r.comm,
                frames: r.chain_string(),
            }),
            &STACKS_CSV_HEADER,
        ),
    }
}

// ---------------------------------------------------------- ages, nodes

/// How `ages` and `nodes` show the parts of a call site's live
/// allocations (an age bucket, a node), for [`render_parts`].
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
pub struct AgeBucketJson {
    lo_s: u64,
    hi_s: Option<u64>,
}

impl PartOutput for AgeBucket {
    const COLUMNS: [&'static str; 3] = ["Age", "Age bytes", "Age calls"];
    const LAST_FIRST: bool = true;
    const JSON_LIST: &'static str = "buckets";
    const CSV_COLUMNS: &'static [&'static str] = &["lo_s", "hi_s"];
    const METRIC: &'static str = "allocinfo_age";
    const HELP: &'static str = "whose age in seconds is in [age_lo_seconds, age_hi_seconds) \
                                (allocprof debugfs ages).";
    type Json = AgeBucketJson;

    fn json(&self) -> AgeBucketJson {
        AgeBucketJson {
            lo_s: self.lo,
            hi_s: self.hi,
        }
    }

    fn csv(&self) -> Vec<String> {
        vec![
            self.lo.to_string(),
            self.hi.map_or(String::new(), |h| h.to_string()),
        ]
    }

    /// The open bucket's `age_hi_seconds` is `+Inf`.
    fn labels(&self) -> String {
        let hi = self.hi.map_or("+Inf".to_string(), |h| h.to_string());
        format!("age_lo_seconds=\"{}\",age_hi_seconds=\"{hi}\"", self.lo)
    }
}

#[derive(Serialize)]
pub struct NodeJson {
    node: u32,
}

impl PartOutput for Node {
    const COLUMNS: [&'static str; 3] = ["Node", "Node bytes", "Node calls"];
    const LAST_FIRST: bool = false;
    const JSON_LIST: &'static str = "nodes";
    const CSV_COLUMNS: &'static [&'static str] = &["node"];
    const METRIC: &'static str = "allocinfo_node";
    const HELP: &'static str = "on the NUMA node of the node label (allocprof debugfs nodes; \
                                pages of call sites with the n flag).";
    type Json = NodeJson;

    fn json(&self) -> NodeJson {
        NodeJson { node: self.0 }
    }

    fn csv(&self) -> Vec<String> {
        vec![self.0.to_string()]
    }

    fn labels(&self) -> String {
        format!("node=\"{}\"", self.0)
    }
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
pub fn render_parts<P: PartOutput>(
    sites: &[PartSite<P>],
    summary: TopSummary,
    note: &str,
    fmt: Format,
) -> Result<String> {
    match fmt {
        Format::Table => {
            let mut t = new_table(
                &[&SITE_COLUMNS[..], &P::COLUMNS[..]].concat(),
                &[0, 1, 2, 7, 8],
            );
            for (i, s) in sites.iter().enumerate() {
                let mut parts: Vec<_> = s.parts.iter().collect();
                if P::LAST_FIRST {
                    parts.reverse();
                }
                for (j, c) in parts.into_iter().enumerate() {
                    let mut row = if j == 0 {
                        site_cells(i + 1, &s.site)
                    } else {
                        vec![String::new(); SITE_COLUMNS.len()]
                    };
                    row.extend([c.part.to_string(), format_iec(c.bytes), c.calls.to_string()]);
                    t.add_row(row);
                }
            }
            let shown = TopSummary::of(sites.iter().map(|s| &s.site));
            Ok(format!(
                "{t}\n{}{note}\n",
                shown_of_total(shown, summary, "call sites")
            ))
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
                let metric = format!("{}_{unit}", P::METRIC);
                prom_header(
                    &mut out,
                    &metric,
                    &format!("{what} of a call site {}", P::HELP),
                );
                for s in sites {
                    let labels = site_labels(&s.site.key());
                    for c in &s.parts {
                        let _ =
                            writeln!(out, "{metric}{{{labels},{}}} {}", c.part.labels(), value(c));
                    }
                }
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

// ---------------------------------------------------------------- faults

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
pub fn render_faults(sites: &[FaultSite], summary: FaultSummary, fmt: Format) -> Result<String> {
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
                prom_header_of(&mut out, name, &help, kind);
                for s in sites {
                    let _ = writeln!(out, "{name}{{{}}} {}", site_labels(&s.site), value(s));
                }
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_label_values() {
        assert_eq!(escape_label_value(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(escape_label_value("x\ny"), "x\\ny");
        assert_eq!(escape_label_value("plain/ok.c"), "plain/ok.c");
    }

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
        let s = render_top(
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

    #[test]
    fn stacks_frames_cell() {
        let f: Vec<String> = ["a+0x1/0x2", "b+0x1/0x2", "c+0x1/0x2"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(frames_cell(&f, 2), "a+0x1/0x2\nb+0x1/0x2\n… 1 more");
        assert_eq!(frames_cell(&f, 3), "a+0x1/0x2\nb+0x1/0x2\nc+0x1/0x2");
        assert_eq!(frames_cell(&f, 0), frames_cell(&f, 9));
        assert_eq!(frames_cell(&[], 2), "(none)");
        let s =
            render_stacks(&[], TopSummary { sites: 0, bytes: 0 }, 2, StacksFormat::Csv).unwrap();
        assert_eq!(
            s,
            "rank,bytes,calls,file,line,module,func,pid,comm,frames\n"
        );
    }

    #[test]
    fn percent_ratios_are_exact() {
        let got: Vec<_> = [0, 1, 7, 10, 50, 99, 100]
            .into_iter()
            .map(percent_ratio)
            .collect();
        assert_eq!(got, ["0", "0.01", "0.07", "0.1", "0.5", "0.99", "1"]);
    }

    #[test]
    fn empty_csv_still_has_header() {
        let s = render_group(&[], GroupBy::Module, Format::Csv).unwrap();
        assert_eq!(s, "group,bytes,calls,sites\n");
    }
}
