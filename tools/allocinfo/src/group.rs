//! Aggregation of call sites by subsystem, directory, module or function.

use crate::record::Record;
use serde::Serialize;
use std::collections::HashMap;

/// How call sites are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// First path component (`mm`, `fs`, `kernel`, …); two for `drivers/`
    /// and `arch/` (`drivers/net`, `arch/x86`). `--depth N` takes N components.
    Subsystem,
    /// Directory of the source file, truncated to `--depth N` components.
    Dir,
    /// Loadable module name, or `(built-in)`.
    Module,
    /// Function name.
    Func,
}

impl GroupBy {
    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Subsystem => "subsystem",
            GroupBy::Dir => "dir",
            GroupBy::Module => "module",
            GroupBy::Func => "func",
        }
    }
}

/// Top-level directories that are split one level deeper in subsystem mode.
pub const DEEP_TREES: [&str; 2] = ["drivers", "arch"];

/// Group name for files without a directory.
pub const ROOT_GROUP: &str = ".";

/// Directory components of a source path (file name and empty parts dropped).
fn dir_components(file: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = file
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    parts.pop();
    parts
}

fn join_prefix(parts: &[&str], n: usize) -> String {
    if parts.is_empty() || n == 0 {
        return ROOT_GROUP.to_string();
    }
    parts[..n.min(parts.len())].join("/")
}

/// The group a record belongs to. `depth` overrides the number of directory
/// components used in `subsystem` and `dir` mode (ignored otherwise).
pub fn group_key(r: &Record, by: GroupBy, depth: Option<usize>) -> String {
    match by {
        GroupBy::Subsystem => {
            let parts = dir_components(&r.file);
            let n = depth.unwrap_or_else(|| match parts.first() {
                Some(first) if DEEP_TREES.contains(first) => 2,
                _ => 1,
            });
            join_prefix(&parts, n)
        }
        GroupBy::Dir => {
            let parts = dir_components(&r.file);
            join_prefix(&parts, depth.unwrap_or(usize::MAX))
        }
        GroupBy::Module => r.module_label().to_string(),
        GroupBy::Func => r.func.clone(),
    }
}

/// Totals of one group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupRow {
    pub group: String,
    pub bytes: i64,
    pub calls: u64,
    /// Number of call-site lines in the group.
    pub sites: usize,
}

/// Sum records per group; sorted by bytes descending, then name.
pub fn group(records: &[Record], by: GroupBy, depth: Option<usize>) -> Vec<GroupRow> {
    let mut map: HashMap<String, GroupRow> = HashMap::new();
    for r in records {
        let key = group_key(r, by, depth);
        let row = map.entry(key.clone()).or_insert_with(|| GroupRow {
            group: key,
            bytes: 0,
            calls: 0,
            sites: 0,
        });
        row.bytes = row.bytes.saturating_add(r.bytes);
        row.calls = row.calls.saturating_add(r.calls);
        row.sites += 1;
    }
    let mut rows: Vec<GroupRow> = map.into_values().collect();
    rows.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.group.cmp(&b.group)));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(file: &str, module: Option<&str>) -> Record {
        Record {
            bytes: 10,
            calls: 1,
            file: file.into(),
            line: 1,
            module: module.map(Into::into),
            func: "f".into(),
            extra: vec![],
        }
    }

    #[test]
    fn keys() {
        use GroupBy::*;
        let k = |f: &str, by, d| group_key(&rec(f, None), by, d);
        assert_eq!(k("mm/slub.c", Subsystem, None), "mm");
        assert_eq!(k("fs/ext4/super.c", Subsystem, None), "fs");
        assert_eq!(
            k("drivers/net/virtio_net.c", Subsystem, None),
            "drivers/net"
        );
        assert_eq!(k("arch/x86/kernel/setup.c", Subsystem, None), "arch/x86");
        assert_eq!(k("drivers/base.c", Subsystem, None), "drivers");
        assert_eq!(k("fs/ext4/super.c", Subsystem, Some(2)), "fs/ext4");
        assert_eq!(k("arch/x86/kernel/setup.c", Subsystem, Some(1)), "arch");
        assert_eq!(k("arch/x86/kernel/setup.c", Dir, None), "arch/x86/kernel");
        assert_eq!(k("arch/x86/kernel/setup.c", Dir, Some(2)), "arch/x86");
        assert_eq!(k("main.c", Dir, None), ".");
        assert_eq!(k("main.c", Subsystem, None), ".");
        assert_eq!(k("./mm//slub.c", Subsystem, None), "mm");
        assert_eq!(k("mm/slub.c", Dir, Some(0)), ".");
        assert_eq!(k("mm/slub.c", Func, None), "f");
        assert_eq!(group_key(&rec("a/b.c", Some("m")), Module, None), "m");
        assert_eq!(group_key(&rec("a/b.c", None), Module, None), "(built-in)");
    }

    #[test]
    fn sums_and_sorts() {
        let mut recs = vec![
            rec("mm/a.c", None),
            rec("fs/b.c", None),
            rec("mm/c.c", None),
        ];
        recs[1].bytes = 15;
        let rows = group(&recs, GroupBy::Subsystem, None);
        assert_eq!(
            rows,
            vec![
                GroupRow {
                    group: "mm".into(),
                    bytes: 20,
                    calls: 2,
                    sites: 2
                },
                GroupRow {
                    group: "fs".into(),
                    bytes: 15,
                    calls: 1,
                    sites: 1
                },
            ]
        );
    }
}
