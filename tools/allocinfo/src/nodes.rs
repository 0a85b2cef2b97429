//! Parser for allocprof's `/sys/kernel/debug/allocprof/nodes`: the live
//! pages of call sites with the `n` flag, by the NUMA node of their memory.
//!
//! ```text
//! # allocprof nodes: live pages of call sites with the n flag, by the node of their memory
//! # tracked: 19 allocations in 3 chains; table: ...
//!        12288        3 /root/allocprof/selftests/modules/allocprof_test.c:188 [allocprof_test] func:aptest_pages_node node:0
//!         8192        2 /root/allocprof/selftests/modules/allocprof_test.c:188 [allocprof_test] func:aptest_pages_node node:1
//! ```
//!
//! One line per call site and node with live watched pages: a call-site
//! line in `/proc/allocinfo`'s grammar followed by ` node:N`, the node as
//! the kernel numbers it. The grammar and the gathering per call site are
//! [`crate::split`]'s (`split::parse::<Node>`, `split::sites`), which the
//! ages file shares.

use crate::debugfs::Expected;
use crate::split::Part;
use std::fmt;

/// A NUMA node's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node(pub u32);

impl fmt::Display for Node {
    /// The kernel's number, without `node:`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Part for Node {
    const KEY: &'static str = "node:";
    const EXPECTED: Expected = Expected::Node;

    /// Decimal digits only, as the kernel prints them.
    fn parse(value: &str) -> Option<Self> {
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        value.parse().ok().map(Node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugfs::Found;
    use crate::split::{parse, sites, PartLine};

    #[test]
    fn parses_gathers_and_reports() {
        let text = "\
# allocprof nodes: x
# tracked: 5 allocations in 0 chains
        8192        2 a/t.c:7 [t] func:p node:1
       12288        3 a/t.c:7 [t] func:p node:0
        4096        1 mm/memory.c:1063 func:folio_prealloc node:1
        4096        1 a/t.c:7 [t] func:p node:x
        4096        1 a/t.c:7 [t] func:p node:0 age:0-1s
        4096        1 a/t.c:7 [t] func:p
";
        let p = parse::<Node>(text);
        assert_eq!(
            p.stats.as_deref(),
            Some("# tracked: 5 allocations in 0 chains")
        );
        let found = |l: usize| (p.issues[l].expected, &p.issues[l].found);
        assert_eq!(p.issues.len(), 3);
        assert_eq!(found(0), (Expected::Node, &Found::Field("node:x".into())));
        assert_eq!(
            found(1),
            (Expected::EndOfLine, &Found::Field("age:0-1s".into()))
        );
        assert_eq!(found(2), (Expected::Node, &Found::EndOfLine));
        assert_eq!(
            p.issues.iter().map(|i| i.line_no).collect::<Vec<_>>(),
            [6, 7, 8]
        );
        let again: String = p.lines.iter().map(PartLine::to_line).collect();
        assert_eq!(
            again,
            text.lines()
                .skip(2)
                .take(3)
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        );
        let got: Vec<_> = sites(&p.lines)
            .iter()
            .map(|s| {
                let parts: Vec<_> = s
                    .parts
                    .iter()
                    .map(|c| (c.part.0, c.bytes, c.calls))
                    .collect();
                (s.site.func.clone(), s.site.bytes, s.site.calls, parts)
            })
            .collect();
        assert_eq!(
            got,
            [
                ("p".into(), 20480, 5, vec![(0, 12288, 3), (1, 8192, 2)]),
                ("folio_prealloc".into(), 4096, 1, vec![(1, 4096, 1)]),
            ]
        );
        for bad in ["", "-1", "+1", "1 ", "0x1", "4294967296"] {
            assert_eq!(<Node as Part>::parse(bad), None, "{bad:?}");
        }
    }
}
