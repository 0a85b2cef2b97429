//! `allocinfo stacks`: live allocations per call site and call chain, with
//! the task of the latest allocation (allocprof's debugfs stacks file).

use crate::cli::StacksArgs;
use crate::input::{display_name, read_debugfs, report_issues};
use crate::render::{append_stats, limit, write_stdout};
use allocinfo::output::{self, StacksFormat, TopSummary};
use allocinfo::stacks::{self, StackRecord};
use anyhow::Result;

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
    let mut out = output::render_stacks(&rows, summary, a.frames, a.format)?;
    append_stats(
        &mut out,
        parsed.stats.as_deref(),
        a.format == StacksFormat::Table,
        verbose,
    );
    write_stdout(&out)
}
