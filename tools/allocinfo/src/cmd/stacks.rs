//! `allocinfo stacks`: live allocations per call site and call chain, with
//! the task of the latest allocation (allocprof's debugfs stacks file).

use crate::cli::{StacksArgs, StacksFormat};
use crate::input::{display_name, read_debugfs, report_issues};
use crate::render::{
    append_stats, limit, to_csv, to_json, write_stdout, RenderError, SiteJson, SiteTable,
    TopSummary,
};
use allocinfo::stacks::{self, StackRecord};
use anyhow::Result;
use serde::Serialize;
use std::fmt::Write as _;

pub fn run(a: StacksArgs, verbose: bool) -> Result<()> {
    let filter = a.filter.site.filter()?;
    let name = display_name(&a.input);
    let parsed = stacks::parse_stacks_bytes(&read_debugfs(&a.input)?);
    report_issues(&parsed.issues, &name, a.filter.strict)?;
    let mut rows: Vec<StackRecord> = parsed
        .records
        .into_iter()
        .filter(|r| filter.matches(&r.site))
        .filter(|r| a.filter.min_bytes.is_none_or(|m| r.site.bytes >= m))
        .collect();
    let summary = TopSummary::of(rows.iter().map(|r| &r.site));
    // Stable: chains that tie keep the kernel's order.
    rows.sort_by(|x, y| a.by.biggest_first(&x.site, &y.site));
    limit(&mut rows, a.n);
    let mut out = render(&rows, summary, a.frames, a.format)?;
    append_stats(
        &mut out,
        parsed.stats.as_deref(),
        a.format == StacksFormat::Table,
        verbose,
    );
    write_stdout(&out)
}

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
fn render(
    rows: &[StackRecord],
    summary: TopSummary,
    frames: usize,
    fmt: StacksFormat,
) -> Result<String, RenderError> {
    match fmt {
        StacksFormat::Table => {
            let mut t = SiteTable::new(&["PID", "Comm", "Frames"], &[0, 1, 2, 6]);
            for (i, r) in rows.iter().enumerate() {
                let more = [
                    r.pid.to_string(),
                    r.comm.clone(),
                    frames_cell(&r.frames, frames),
                ];
                t.add_site(i + 1, &r.site, more);
            }
            Ok(t.finish(summary, "call chains", ""))
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let s = render(&[], TopSummary { sites: 0, bytes: 0 }, 2, StacksFormat::Csv).unwrap();
        assert_eq!(
            s,
            "rank,bytes,calls,file,line,module,func,pid,comm,frames\n"
        );
    }
}
