//! `allocinfo nodes`: live pages per call site by the NUMA node of their
//! memory (allocprof's debugfs nodes file).

use super::parts::PartsCmd;
use crate::cli::NodesArgs;
use allocinfo::nodes::Node;
use anyhow::Result;

pub fn run(a: NodesArgs, verbose: bool) -> Result<()> {
    let note = match a.node {
        Some(n) => format!(", only node {n}"),
        None => String::new(),
    };
    let cmd = PartsCmd {
        args: &a.parts,
        input: &a.input,
        note: &note,
        verbose,
    };
    cmd.run::<Node>(
        |sites| {
            if let Some(node) = a.node {
                for s in sites.iter_mut() {
                    s.retain_parts(|n| n.0 == node);
                }
            }
        },
        |x, y| a.by.biggest_first(&x.site, &y.site),
    )
}
