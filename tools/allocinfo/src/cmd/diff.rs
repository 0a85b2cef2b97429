//! `allocinfo diff`: what grew between two snapshots, per call site and per
//! group.

use super::group::{group_labels, group_title};
use crate::cli::{DiffArgs, Format};
use crate::input::load_file;
use crate::render::{
    limit, new_table, prom_gauge, site_labels, to_csv, to_json, write_stdout, RenderError,
};
use allocinfo::diff::{
    diff, Change, Diff, GroupDelta, MatchKind, MoveCounts, SiteDelta, StatusCounts,
};
use allocinfo::group::GroupBy;
use allocinfo::units::{format_iec, format_iec_signed};
use anyhow::Result;
use serde::Serialize;
use std::fmt::Write as _;

pub fn run(a: DiffArgs) -> Result<()> {
    let old = load_file(&a.old, &a.filter)?;
    let new = load_file(&a.new, &a.filter)?;
    let mut d = diff(&old, &new, a.by, a.depth, a.matching);
    if let Some(min) = a.filter.min_bytes {
        d.retain_min_bytes(min);
    }
    limit(&mut d.sites, a.n);
    limit(&mut d.groups, a.n);
    write_stdout(&render(&d, a.format)?)
}

#[derive(Serialize)]
struct DiffSiteJson<'a> {
    file: &'a str,
    line: u32,
    module: Option<&'a str>,
    func: &'a str,
    status: &'static str,
    #[serde(flatten)]
    change: Change,
    matched: Option<MatchKind>,
    old_line: Option<u32>,
    old_file: Option<&'a str>,
}

impl<'a> DiffSiteJson<'a> {
    fn from(s: &'a SiteDelta) -> Self {
        DiffSiteJson {
            file: &s.key.file,
            line: s.key.line,
            module: s.key.module.as_deref(),
            func: &s.key.func,
            status: s.status.as_str(),
            change: s.change,
            matched: s.matched(),
            old_line: s.old_line,
            old_file: s.old_file.as_deref(),
        }
    }
}

#[derive(Serialize)]
struct DiffJson<'a> {
    group_by: GroupBy,
    totals: &'a Change,
    counts: &'a StatusCounts,
    matching: &'a MoveCounts,
    sites: Vec<DiffSiteJson<'a>>,
    groups: &'a [GroupDelta],
}

/// A row of the CSV, a call site's or a group's. Its [`Change`] is not a
/// `#[serde(flatten)]` member as in JSON: the csv crate cannot write those.
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
    matched: &'static str,
    old_line: Option<u32>,
    old_file: &'a str,
}

impl DiffCsvRow<'_> {
    /// A row of `kind` with the figures of `c`, its other columns empty.
    fn new(kind: &'static str, c: &Change) -> Self {
        DiffCsvRow {
            kind,
            group: "",
            file: "",
            line: None,
            module: "",
            func: "",
            status: "",
            old_bytes: c.old_bytes,
            new_bytes: c.new_bytes,
            delta_bytes: c.delta_bytes,
            old_calls: c.old_calls,
            new_calls: c.new_calls,
            delta_calls: c.delta_calls,
            matched: "",
            old_line: None,
            old_file: "",
        }
    }
}

fn signed(n: i64) -> String {
    if n > 0 {
        format!("+{n}")
    } else {
        n.to_string()
    }
}

/// The first cells of a row of the tables: the change in bytes, the old
/// and new bytes, the change in calls.
fn change_cells(c: &Change) -> Vec<String> {
    vec![
        format_iec_signed(c.delta_bytes),
        format_iec(c.old_bytes),
        format_iec(c.new_bytes),
        signed(c.delta_calls),
    ]
}

/// The `Match` cell of a site: `moved OLD→NEW` for a site paired by
/// module, file and function, `path OLDFILE:OLDLINE` for one paired with
/// its file named another way, else empty.
fn match_cell(s: &SiteDelta) -> String {
    match (&s.old_file, s.old_line) {
        (Some(file), old) => format!("path {file}:{}", old.unwrap_or(s.key.line)),
        (None, Some(old)) => format!("moved {old}→{}", s.key.line),
        (None, None) => String::new(),
    }
}

/// Render a [`Diff`] (sites possibly truncated by the caller).
fn render(d: &Diff, fmt: Format) -> Result<String, RenderError> {
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
                // A column of how sites were paired when a row moved or
                // was paired with its file named another way.
                let moved = d
                    .sites
                    .iter()
                    .any(|s| s.old_line.is_some() || s.old_file.is_some());
                let header = [
                    "Change", "Old", "New", "Calls", "Status", "Location", "Module", "Function",
                    "Match",
                ];
                let mut t = new_table(&header[..header.len() - usize::from(!moved)], &[0, 1, 2, 3]);
                for s in &d.sites {
                    let mut row = change_cells(&s.change);
                    row.extend([
                        s.status.as_str().to_string(),
                        s.key.location(),
                        s.key.module_label().to_string(),
                        s.key.func.clone(),
                    ]);
                    if moved {
                        row.push(match_cell(s));
                    }
                    t.add_row(row);
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
                    let mut row = change_cells(&g.change);
                    row.push(g.group.clone());
                    t.add_row(row);
                }
                let _ = writeln!(out, "{t}");
            } else {
                let _ = writeln!(out, "no changes");
            }
            let tt = &d.totals;
            let _ = write!(
                out,
                "\nTotal: {} -> {} ({}), calls {} -> {} ({})",
                format_iec(tt.old_bytes),
                format_iec(tt.new_bytes),
                format_iec_signed(tt.delta_bytes),
                tt.old_calls,
                tt.new_calls,
                signed(tt.delta_calls)
            );
            let m = &d.moves;
            if m.moved > 0 {
                let _ = write!(
                    out,
                    "; {} call sites matched with a moved line ({} changed)",
                    m.moved, m.moved_changed
                );
            }
            if m.path > 0 {
                let _ = write!(
                    out,
                    "; {} call sites of a module matched with their file named another way \
                     ({} changed)",
                    m.path, m.path_changed
                );
            }
            out.push('\n');
            if m.ambiguous_funcs > 0 {
                let _ = writeln!(
                    out,
                    "Not matched by moved line or path: {} old and {} new call sites of {} function(s) \
                     with another number of sites on each side (counted as vanished and new)",
                    m.ambiguous_old, m.ambiguous_new, m.ambiguous_funcs
                );
            }
            Ok(out)
        }
        Format::Json => to_json(&DiffJson {
            group_by: d.group_by,
            totals: &d.totals,
            counts: &d.counts,
            matching: &d.moves,
            sites: d.sites.iter().map(DiffSiteJson::from).collect(),
            groups: &d.groups,
        }),
        Format::Csv => {
            let sites = d.sites.iter().map(|s| DiffCsvRow {
                file: &s.key.file,
                line: Some(s.key.line),
                module: s.key.module.as_deref().unwrap_or(""),
                func: &s.key.func,
                status: s.status.as_str(),
                matched: s.matched().map_or("", MatchKind::as_str),
                old_line: s.old_line,
                old_file: s.old_file.as_deref().unwrap_or(""),
                ..DiffCsvRow::new("site", &s.change)
            });
            let groups = d.groups.iter().map(|g| DiffCsvRow {
                group: &g.group,
                ..DiffCsvRow::new(d.group_by.as_str(), &g.change)
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
                    "matched",
                    "old_line",
                    "old_file",
                ],
            )
        }
        Format::Prometheus => {
            let mut out = String::new();
            prom_gauge(
                &mut out,
                "allocinfo_diff_bytes",
                "Change in bytes allocated from a call site between two /proc/allocinfo snapshots.",
                d.sites
                    .iter()
                    .map(|s| (site_labels(&s.key), s.change.delta_bytes)),
            );
            prom_gauge(
                &mut out,
                "allocinfo_diff_allocations",
                "Change in live allocations from a call site between two /proc/allocinfo snapshots.",
                d.sites.iter().map(|s| (site_labels(&s.key), s.change.delta_calls)),
            );
            let labels = |g: &GroupDelta| group_labels(d.group_by, &g.group);
            prom_gauge(
                &mut out,
                "allocinfo_group_diff_bytes",
                "Change in bytes allocated per group of call sites between two /proc/allocinfo snapshots.",
                d.groups.iter().map(|g| (labels(g), g.change.delta_bytes)),
            );
            prom_gauge(
                &mut out,
                "allocinfo_group_diff_allocations",
                "Change in live allocations per group of call sites between two /proc/allocinfo snapshots.",
                d.groups.iter().map(|g| (labels(g), g.change.delta_calls)),
            );
            Ok(out)
        }
    }
}
