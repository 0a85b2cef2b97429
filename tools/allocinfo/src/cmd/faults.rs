//! `allocinfo faults`: the call sites whose allocations allocprof fails on
//! purpose, their failures and knobs (allocprof's debugfs faults file).

use crate::cli::{FaultsArgs, FaultsSortKey};
use crate::input::{display_name, read_debugfs, report_issues};
use crate::render::{limit, write_stdout};
use allocinfo::faults::{self, FaultSite};
use allocinfo::output::{self, FaultSummary};
use anyhow::Result;

pub fn run(a: FaultsArgs) -> Result<()> {
    let filter = a.site.filter()?;
    let name = display_name(&a.input);
    let parsed = faults::parse_faults_bytes(&read_debugfs(&a.input)?);
    report_issues(&parsed.issues, &name, a.strict)?;
    let lines: Vec<FaultSite> = parsed
        .sites
        .into_iter()
        .filter(|s| filter.matches_key(&s.site))
        .collect();
    let mut sites = faults::merge_sites(&lines);
    let summary = FaultSummary::of(&sites);
    let key = |s: &FaultSite| match a.by {
        FaultsSortKey::Failures => (s.failed, s.asked),
        FaultsSortKey::Asked => (s.asked, s.failed),
    };
    sites.sort_by(|x, y| key(y).cmp(&key(x)).then_with(|| x.site.cmp(&y.site)));
    limit(&mut sites, a.n);
    write_stdout(&output::render_faults(&sites, summary, a.format)?)
}
