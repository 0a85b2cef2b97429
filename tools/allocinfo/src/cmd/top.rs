//! `allocinfo top`: the call sites with the most memory allocated, or the
//! most live allocations.

use crate::cli::{FilterArgs, SortKey, TopArgs};
use crate::input::{load, Input};
use crate::render::{limit, write_stdout};
use allocinfo::output::{self, TopSummary};
use allocinfo::record::Record;
use anyhow::Result;

pub fn run(a: TopArgs, verbose: bool) -> Result<()> {
    let input = Input::new(&a.live, &a.input, verbose)?;
    let (recs, summary) = top_sites(&input, &a.filter, a.by, a.n)?;
    write_stdout(&output::render_top(&recs, summary, a.format)?)
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
