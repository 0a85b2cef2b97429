//! `allocinfo nodes`: live pages per call site by the NUMA node of their
//! memory (allocprof's debugfs nodes file).

use super::parts::{PartOutput, PartsCmd};
use crate::cli::NodesArgs;
use allocinfo::nodes::Node;
use anyhow::Result;
use serde::Serialize;

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

#[derive(Serialize)]
pub struct NodeJson {
    node: u32,
}

impl PartOutput for Node {
    const COLUMNS: [&'static str; 3] = ["Node", "Node bytes", "Node calls"];
    const LAST_FIRST: bool = false;
    const JSON_LIST: &'static str = "nodes";
    const CSV_COLUMNS: &'static [&'static str] = &["node"];
    const METRIC: &'static str = "allocinfo_node";
    const HELP: &'static str = "on the NUMA node of the node label (allocprof debugfs nodes; \
                                pages of call sites with the n flag).";
    type Json = NodeJson;

    fn json(&self) -> NodeJson {
        NodeJson { node: self.0 }
    }

    fn csv(&self) -> Vec<String> {
        vec![self.0.to_string()]
    }

    fn labels(&self) -> String {
        format!("node=\"{}\"", self.0)
    }
}
