//! `allocinfo diff`: what grew between two snapshots, per call site and per
//! group.

use crate::cli::DiffArgs;
use crate::input::load_file;
use crate::render::{limit, write_stdout};
use allocinfo::diff::diff;
use allocinfo::output;
use anyhow::Result;

pub fn run(a: DiffArgs) -> Result<()> {
    let old = load_file(&a.old, &a.filter)?;
    let new = load_file(&a.new, &a.filter)?;
    let mut d = diff(&old, &new, a.by, a.depth);
    if let Some(min) = a.filter.min_bytes {
        d.retain_min_bytes(min);
    }
    limit(&mut d.sites, a.n);
    limit(&mut d.groups, a.n);
    write_stdout(&output::render_diff(&d, a.format)?)
}
