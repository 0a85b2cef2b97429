//! `allocinfo group`: totals per subsystem, directory, module or function.

use crate::cli::{FilterArgs, GroupArgs};
use crate::input::{load, Input};
use crate::render::{limit, write_stdout};
use allocinfo::group::{group, GroupBy, GroupRow};
use allocinfo::output;
use anyhow::Result;

pub fn run(a: GroupArgs, verbose: bool) -> Result<()> {
    let input = Input::new(&a.live, &a.input, verbose)?;
    let rows = group_rows(&input, &a.filter, a.by, a.depth, a.n)?;
    write_stdout(&output::render_group(&rows, a.by, a.format)?)
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
