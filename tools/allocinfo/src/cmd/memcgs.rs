//! `allocinfo memcgs`: live allocations per call site by the memory cgroup
//! of the context that made them (allocprof's debugfs memcgs file).

use super::parts::{PartOutput, PartsCmd};
use crate::cli::{MemcgsArgs, SortKey};
use crate::render::escape_label_value;
use allocinfo::memcgs::{Memcg, MemcgFilter, MemcgTable};
use anyhow::{Context, Result};
use serde::Serialize;
use std::fmt::Write as _;

pub fn run(a: MemcgsArgs, verbose: bool) -> Result<()> {
    let filter = MemcgFilter::new(&a.memcg).context("invalid --memcg")?;
    let note = if a.memcg.is_empty() {
        String::new()
    } else {
        format!(", only memcg {}", a.memcg.join(", "))
    };
    let cmd = PartsCmd {
        args: &a.parts,
        input: &a.input,
        note: &note,
        verbose,
    };
    cmd.run::<Memcg>(
        |sites| {
            for s in sites.iter_mut() {
                if !a.memcg.is_empty() {
                    s.retain_parts(|m| filter.matches(m));
                }
                // A site's biggest cgroup first (then by the order of Memcg).
                s.parts.sort_by(|x, y| {
                    let (xf, yf) = ((x.bytes, x.calls), (y.bytes, y.calls));
                    match a.by {
                        SortKey::Bytes => yf.cmp(&xf),
                        SortKey::Calls => (yf.1, yf.0).cmp(&(xf.1, xf.0)),
                    }
                    .then_with(|| x.part.cmp(&y.part))
                });
            }
        },
        |x, y| a.by.biggest_first(&x.site, &y.site),
    )
}

#[derive(Serialize)]
pub struct MemcgJson {
    /// The kernel's text: the escaped path, `-` or `?`.
    memcg: String,
}

impl PartOutput for Memcg {
    const COLUMNS: [&'static str; 3] = ["Memcg", "Memcg bytes", "Memcg calls"];
    const LAST_FIRST: bool = false;
    const JSON_LIST: &'static str = "memcgs";
    const CSV_COLUMNS: &'static [&'static str] = &["memcg"];
    const METRIC: &'static str = "allocinfo_memcg";
    const HELP: &'static str = "made in the memory cgroup of the memcg label (its path; - for \
                                none, ? for one the table had no room for) (allocprof debugfs \
                                memcgs; call sites with the m flag).";
    type Json = MemcgJson;

    fn json(&self) -> MemcgJson {
        MemcgJson {
            memcg: self.to_string(),
        }
    }

    fn csv(&self) -> Vec<String> {
        vec![self.to_string()]
    }

    fn labels(&self) -> String {
        format!("memcg=\"{}\"", escape_label_value(&self.to_string()))
    }

    /// `memcg table: 3 of 64 held; 0 allocations kept without their memcg (table full)`.
    fn header_note(header: &str) -> Option<String> {
        let t = MemcgTable::parse(header)?;
        Some(format!(
            "memcg table: {} of {} held; {} allocations kept without their memcg (table full)",
            t.held, t.slots, t.kept_without
        ))
    }

    fn header_metrics(out: &mut String, header: &str) {
        let Some(t) = MemcgTable::parse(header) else {
            return;
        };
        for (name, kind, help, value) in [
            (
                "allocinfo_memcg_table_held",
                "gauge",
                "Slots of allocprof's memory cgroup table held (allocprof debugfs memcgs).",
                t.held,
            ),
            (
                "allocinfo_memcg_table_slots",
                "gauge",
                "Slots in allocprof's memory cgroup table (allocprof debugfs memcgs).",
                t.slots,
            ),
            (
                "allocinfo_memcg_kept_without_total",
                "counter",
                "Allocations allocprof kept without their memory cgroup, as memcg \"?\", because \
                 its table was full (a count that only grows; allocprof debugfs memcgs).",
                t.kept_without,
            ),
        ] {
            let _ = write!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"
            );
        }
    }
}
