//! `allocinfo group`: totals per subsystem, directory, module or function.

use crate::cli::{FilterArgs, Format, GroupArgs};
use crate::input::{load, Input};
use crate::render::{
    escape_label_value, limit, new_table, prom_gauge, to_csv, to_json, write_stdout, RenderError,
};
use allocinfo::group::{group, GroupBy, GroupRow};
use allocinfo::units::format_iec;
use anyhow::Result;

pub fn run(a: GroupArgs, verbose: bool) -> Result<()> {
    let input = Input::new(&a.live, &a.input, verbose)?;
    let rows = group_rows(&input, &a.filter, a.by, a.depth, a.n)?;
    write_stdout(&render(&rows, a.by, a.format)?)
}

/// The group totals of the filtered call sites, biggest first, without
/// those under `--min-bytes`, cut to `n`.
pub fn group_rows(
    input: &Input,
    f: &FilterArgs,
    by: GroupBy,
    depth: Option<usize>,
    n: usize,
) -> Result<Vec<GroupRow>> {
    let recs = load(input, f)?;
    let mut rows = group(&recs, by, depth);
    if let Some(min) = f.min_bytes {
        rows.retain(|r| r.bytes >= min);
    }
    limit(&mut rows, n);
    Ok(rows)
}

/// The header of the group column, in `group`'s table and `diff`'s table
/// per group.
pub fn group_title(by: GroupBy) -> &'static str {
    match by {
        GroupBy::Subsystem => "Subsystem",
        GroupBy::Dir => "Directory",
        GroupBy::Module => "Module",
        GroupBy::Func => "Function",
    }
}

/// The Prometheus labels of a group, in `group`'s metrics and `diff`'s per
/// group: `by="subsystem",group="mm"`.
pub fn group_labels(by: GroupBy, group: &str) -> String {
    format!(
        "by=\"{}\",group=\"{}\"",
        by.as_str(),
        escape_label_value(group)
    )
}

/// Render the rows of `group`.
fn render(rows: &[GroupRow], by: GroupBy, fmt: Format) -> Result<String, RenderError> {
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
            prom_gauge(
                &mut out,
                "allocinfo_group_bytes",
                "Bytes currently allocated, summed per group of call sites (/proc/allocinfo).",
                rows.iter().map(|r| (group_labels(by, &r.group), r.bytes)),
            );
            prom_gauge(
                &mut out,
                "allocinfo_group_allocations",
                "Live allocations, summed per group of call sites (/proc/allocinfo).",
                rows.iter().map(|r| (group_labels(by, &r.group), r.calls)),
            );
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_csv_still_has_header() {
        let s = render(&[], GroupBy::Module, Format::Csv).unwrap();
        assert_eq!(s, "group,bytes,calls,sites\n");
    }
}
