//! What `ages` and `nodes` share: the live allocations of a call site in
//! parts (age buckets, NUMA nodes), ranked, cut and printed alike.

use crate::cli::PartsArgs;
use crate::input::{display_name, read_debugfs, report_issues};
use crate::render::{append_stats, limit, write_stdout};
use allocinfo::output::{self, Format, PartOutput, TopSummary};
use allocinfo::split::{self, PartSite};
use anyhow::Result;
use std::cmp::Ordering;

/// A run of `ages` or `nodes`: their shared options, the file, the end of
/// the table's last line, `-v`.
pub struct PartsCmd<'a> {
    pub args: &'a PartsArgs,
    pub input: &'a str,
    pub note: &'a str,
    pub verbose: bool,
}

impl PartsCmd<'_> {
    /// Reads and parses the file, keeps the lines of the selected call
    /// sites, gathers them per call site, lets `keep` drop parts (a site
    /// left with none goes), drops the sites under `--min-bytes`, sorts
    /// them by `order` (then by identity), cuts to `-n` and prints them.
    pub fn run<P: PartOutput>(
        &self,
        keep: impl FnOnce(&mut Vec<PartSite<P>>),
        order: impl Fn(&PartSite<P>, &PartSite<P>) -> Ordering,
    ) -> Result<()> {
        let (args, filter) = (self.args, &self.args.filter);
        let filter_sites = filter.site.filter()?;
        let name = display_name(self.input);
        let parsed = split::parse_bytes::<P>(&read_debugfs(self.input)?);
        report_issues(&parsed.issues, &name, filter.strict)?;
        let lines: Vec<_> = parsed
            .lines
            .into_iter()
            .filter(|l| filter_sites.matches(&l.site))
            .collect();
        let mut sites = split::sites(&lines);
        keep(&mut sites);
        sites.retain(|s| !s.parts.is_empty());
        if let Some(min) = filter.min_bytes {
            sites.retain(|s| s.site.bytes >= min);
        }
        let summary = TopSummary::of(sites.iter().map(|s| &s.site));
        sites.sort_by(|x, y| order(x, y).then_with(|| x.site.key().cmp(&y.site.key())));
        limit(&mut sites, args.n);
        let mut out = output::render_parts(&sites, summary, self.note, args.format)?;
        append_stats(
            &mut out,
            parsed.stats.as_deref(),
            args.format == Format::Table,
            self.verbose,
        );
        write_stdout(&out)
    }
}
