//! What the commands share in printing their results: the table style,
//! JSON and CSV text, Prometheus labels and headers, the call-site columns
//! and summary line of `top`, `stacks`, `ages` and `nodes`, `-n`'s cut, and
//! the writing to standard output.

use allocinfo::record::{Record, SiteKey};
use allocinfo::units::format_iec;
use anyhow::Result;
use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use serde::Serialize;
use std::fmt::{Display, Write as _};
use std::io::{self, Write};

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

pub fn site_labels(k: &SiteKey) -> String {
    format!(
        "file=\"{}\",line=\"{}\",function=\"{}\",module=\"{}\"",
        escape_label_value(&k.file),
        k.line,
        escape_label_value(&k.func),
        escape_label_value(prom_module(&k.module))
    )
}

/// A gauge in Prometheus text: see [`prom_metric`].
pub fn prom_gauge<V: Display>(
    out: &mut String,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (String, V)>,
) {
    prom_metric(out, name, "gauge", help, samples);
}

/// A metric of type `kind` (`gauge`, `counter`) in Prometheus text: its
/// `# HELP` and `# TYPE` lines, then a line `name{LABELS} VALUE` for each
/// of `samples`, `(LABELS, VALUE)`.
pub fn prom_metric<V: Display>(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    samples: impl IntoIterator<Item = (String, V)>,
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, value) in samples {
        let _ = writeln!(out, "{name}{{{labels}}} {value}");
    }
}

pub fn new_table(header: &[&str], right_align: &[usize]) -> Table {
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

pub fn to_csv<T: Serialize>(
    rows: impl IntoIterator<Item = T>,
    header_if_empty: &[&str],
) -> Result<String, RenderError> {
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
pub fn csv_text(w: csv::Writer<Vec<u8>>) -> Result<String, RenderError> {
    let bytes = w
        .into_inner()
        .map_err(|e| RenderError::CsvInner(e.to_string()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn to_json<T: Serialize + ?Sized>(v: &T) -> Result<String, RenderError> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    Ok(s)
}

/// The first columns of the tables of `top`, `stacks`, `ages` and `nodes`,
/// whose cells [`site_cells`] gives.
const SITE_COLUMNS: [&str; 6] = ["#", "Bytes", "Calls", "Location", "Module", "Function"];

/// The first cells of a row of `top`, `stacks`, `ages` or `nodes`: the
/// rank and the site.
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
pub struct SiteJson<'a> {
    rank: usize,
    bytes: i64,
    calls: u64,
    file: &'a str,
    line: u32,
    module: Option<&'a str>,
    func: &'a str,
}

impl<'a> SiteJson<'a> {
    pub fn new(rank: usize, r: &'a Record) -> Self {
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

/// What the last line of the tables of `top`, `stacks`, `ages` and `nodes`
/// counts: the rows before `-n`, or those shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
            .fold(TopSummary::default(), TopSummary::and)
    }

    /// These sites and `r`.
    fn and(self, r: &Record) -> TopSummary {
        TopSummary {
            sites: self.sites + 1,
            bytes: self.bytes.saturating_add(r.bytes),
        }
    }
}

/// The last line of the tables of `top`, `stacks`, `ages` and `nodes`,
/// without its newline: the `shown` rows out of `summary`'s (those before
/// `-n`).
fn shown_of_total(shown: TopSummary, summary: TopSummary, what: &str) -> String {
    format!(
        "{} of {} {what}, {} of {} total",
        shown.sites,
        summary.sites,
        format_iec(shown.bytes),
        format_iec(summary.bytes)
    )
}

/// The table of `top`, `stacks`, `ages` or `nodes`: a row per call site,
/// [`SITE_COLUMNS`] and the command's own columns, maybe with rows of its
/// own columns only under it; then a line of how many sites it shows.
pub struct SiteTable {
    table: Table,
    shown: TopSummary,
}

impl SiteTable {
    /// A table of [`SITE_COLUMNS`] and `more` columns, those at (0-based)
    /// `right_align` aligned right.
    pub fn new(more: &[&str], right_align: &[usize]) -> SiteTable {
        SiteTable {
            table: new_table(&[&SITE_COLUMNS[..], more].concat(), right_align),
            shown: TopSummary::default(),
        }
    }

    /// A row of the call site ranked `rank`: its cells, then `more`.
    pub fn add_site(&mut self, rank: usize, site: &Record, more: impl IntoIterator<Item = String>) {
        let mut row = site_cells(rank, site);
        row.extend(more);
        self.table.add_row(row);
        self.shown = self.shown.and(site);
    }

    /// A row under the last site's: empty site cells, then `more`.
    pub fn add_more(&mut self, more: impl IntoIterator<Item = String>) {
        let mut row = vec![String::new(); SITE_COLUMNS.len()];
        row.extend(more);
        self.table.add_row(row);
    }

    /// The table and its last line: the sites shown out of `summary`'s
    /// (those before `-n`), which are `what`, then `note`.
    pub fn finish(self, summary: TopSummary, what: &str, note: &str) -> String {
        let last = shown_of_total(self.shown, summary, what);
        format!("{}\n{last}{note}\n", self.table)
    }
}

/// Write `s` to standard output (a closed pipe is an `io::Error` that
/// `main` takes for success).
pub fn write_stdout(s: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// With `-v`: the statistics line of a debugfs file, under the table or on stderr.
pub fn append_stats(out: &mut String, stats: Option<&str>, table: bool, verbose: bool) {
    match stats {
        Some(line) if verbose => {
            if table {
                out.push_str(line);
                out.push('\n');
            } else {
                eprintln!("{line}");
            }
        }
        _ => {}
    }
}

/// `-n N`: keep the first N rows, all of them for 0.
pub fn limit<T>(v: &mut Vec<T>, n: usize) {
    if n > 0 {
        v.truncate(n);
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
}
