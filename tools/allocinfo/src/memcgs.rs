//! Parser for allocprof's `/sys/kernel/debug/allocprof/memcgs`: the live
//! allocations of call sites with the `m` flag, by the memory cgroup of the
//! context that made them.
//!
//! ```text
//! # allocprof memcgs: live allocations of call sites with the m flag, by the memory cgroup of the context that made them
//! # tracked: 465 allocations in 0 chains; table: ...
//! # memcgs: 3/64 held; kept without their memcg: 0 (table full)
//!      1228800      300 modules/allocprof_test.c:390 [allocprof_test] func:aptest_pages_account memcg:/web accounted:1228800
//!        20480        5 modules/allocprof_test.c:390 [allocprof_test] func:aptest_pages_account memcg:/ accounted:0
//! ```
//!
//! One line per call site and cgroup with live watched allocations: a
//! call-site line in `/proc/allocinfo`'s grammar followed by ` memcg:PATH`
//! ([`Memcg`]) and, on Linux 7.3 only, ` accounted:BYTES`: the bytes of
//! those allocations that asked to be charged (`__GFP_ACCOUNT`) to a cgroup
//! other than the root. The third header line says how many of the
//! module's cgroup slots are held and how many allocations were kept
//! without their cgroup because the table was full ([`MemcgTable`]). The
//! grammar and the gathering per call site are [`crate::split`]'s, which the
//! ages and nodes files share.

use crate::debugfs::{escape_octal, unescape_octal, Bad, Expected, Found};
use crate::split::{self, ParsedParts, Part, PartLine, PartSite};
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::fmt;

/// The bytes of a path the kernel writes as they are: 0x21 to 0x7e, but
/// the backslash. Every other byte is `\` and three octal digits, so a
/// path with a space is one field.
const PLAIN: std::ops::Range<u8> = 0x21..0x7f;

/// The memory cgroup of the context that made allocations, as the memcgs
/// file names it after `memcg:`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Memcg {
    /// The cgroup's path in its hierarchy (`/` the root), as the kernel
    /// escaped it (see [`escape_path`]); [`Memcg::path_bytes`] gives the
    /// path itself.
    Path(String),
    /// `-`: a context that charges no cgroup (a kernel thread, an interrupt
    /// without one).
    NoCgroup,
    /// `?`: the module's cgroup table was full (or the path could not be
    /// had).
    Unknown,
}

impl Memcg {
    /// The path itself, its escapes undone; `None` for `-` and `?`.
    pub fn path_bytes(&self) -> Option<Vec<u8>> {
        match self {
            Memcg::Path(p) => unescape_path(p),
            _ => None,
        }
    }
}

impl fmt::Display for Memcg {
    /// The kernel's text without `memcg:`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Memcg::Path(p) => f.write_str(p),
            Memcg::NoCgroup => f.write_str("-"),
            Memcg::Unknown => f.write_str("?"),
        }
    }
}

/// A cgroup path as the kernel writes it into the memcgs file: each byte
/// below 0x21 (the space too), from 0x7f on, and the backslash as a
/// backslash and three octal digits (`/my app` is `/my\040app`).
pub fn escape_path(path: &[u8]) -> String {
    escape_octal(path, PLAIN)
}

/// The path [`escape_path`] escaped, or `None` if `text` is not in that
/// form.
pub fn unescape_path(text: &str) -> Option<Vec<u8>> {
    unescape_octal(text, PLAIN)
}

impl Part for Memcg {
    const KEY: &'static str = "memcg:";
    const EXPECTED: Expected = Expected::Memcg;
    const ACCOUNTED: bool = true;
    const HEADER: &'static str = MemcgTable::PREFIX;

    /// `-`, `?`, or a path from the root (`/...`) in the escaped form.
    fn parse(value: &str) -> Option<Self> {
        match value {
            "-" => Some(Memcg::NoCgroup),
            "?" => Some(Memcg::Unknown),
            p if p.starts_with('/') && unescape_path(p).is_some() => {
                Some(Memcg::Path(p.to_string()))
            }
            _ => None,
        }
    }

    fn check_header(line: &str) -> Result<(), Bad> {
        MemcgTable::parse(line)
            .map(|_| ())
            .ok_or((Expected::MemcgHeader, Found::Line))
    }
}

/// The figures of the third header line, `# memcgs: 3/64 held; kept
/// without their memcg: 0 (table full)`: the module holds each cgroup its
/// watched allocations name in a table of a fixed size; an allocation made
/// while it was full is kept as `memcg:?`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemcgTable {
    /// Slots held.
    pub held: u64,
    /// Slots in the table.
    pub slots: u64,
    /// Allocations kept without their cgroup (the table was full): a count
    /// that only grows while the module profiles, not those live now.
    pub kept_without: u64,
}

impl MemcgTable {
    /// The start of the line.
    pub const PREFIX: &'static str = "# memcgs:";

    /// Read the line (without its newline); `None` if it is not exactly
    /// the kernel's form.
    pub fn parse(line: &str) -> Option<MemcgTable> {
        fn num(s: &str) -> Option<u64> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            s.parse().ok()
        }
        let rest = line.strip_prefix("# memcgs: ")?;
        let (held, rest) = rest.split_once('/')?;
        let (slots, rest) = rest.split_once(" held; kept without their memcg: ")?;
        let kept = rest.strip_suffix(" (table full)")?;
        let t = MemcgTable {
            held: num(held)?,
            slots: num(slots)?,
            kept_without: num(kept)?,
        };
        (t.held <= t.slots).then_some(t)
    }
}

impl fmt::Display for MemcgTable {
    /// The kernel's line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "# memcgs: {}/{} held; kept without their memcg: {} (table full)",
            self.held, self.slots, self.kept_without
        )
    }
}

/// One line: the live allocations of a call site made in one cgroup.
pub type MemcgLine = PartLine<Memcg>;
/// The result of parsing a memcgs file; its `header` is the
/// [`MemcgTable`] line.
pub type ParsedMemcgs = ParsedParts<Memcg>;
/// A call site with its cgroups.
pub type MemcgSite = PartSite<Memcg>;

/// Parse the text of a memcgs file.
pub fn parse_memcgs(input: &str) -> ParsedMemcgs {
    split::parse(input)
}

/// Parse raw bytes (invalid UTF-8 is replaced, never an error).
pub fn parse_memcgs_bytes(input: &[u8]) -> ParsedMemcgs {
    split::parse_bytes(input)
}

/// The figures of a parsed file's [`MemcgTable`] line, if it has one.
pub fn table(parsed: &ParsedMemcgs) -> Option<MemcgTable> {
    parsed.header.as_deref().and_then(MemcgTable::parse)
}

/// Gather the lines per call site, in the order of first appearance; the
/// cgroups of a site in the order of [`Memcg`] (paths, then `-`, then `?`).
/// Lines of one identity are summed per cgroup, as in the ages file.
pub fn sites(lines: &[MemcgLine]) -> Vec<MemcgSite> {
    split::sites(lines)
}

/// Selects cgroups (`--memcg`): a cgroup matches if any pattern does. A
/// pattern `-` or `?` selects exactly that; any other selects the paths
/// equal to it or that it matches as a glob (`*` also matches `/`), as the
/// kernel's escaped text (`/my\040app`, which as a glob would read `\0`
/// as an escaped `0`) or as the path itself (`/my app`).
#[derive(Debug, Clone)]
pub struct MemcgFilter {
    no_cgroup: bool,
    unknown: bool,
    literal: Vec<String>,
    paths: Option<GlobSet>,
}

impl MemcgFilter {
    /// The filter of `patterns`; fails on an invalid glob.
    pub fn new(patterns: &[String]) -> Result<MemcgFilter, globset::Error> {
        let mut b = GlobSetBuilder::new();
        let mut literal = vec![];
        let (mut no_cgroup, mut unknown) = (false, false);
        for p in patterns {
            match p.as_str() {
                "-" => no_cgroup = true,
                "?" => unknown = true,
                _ => {
                    b.add(Glob::new(p)?);
                    literal.push(p.clone());
                }
            }
        }
        Ok(MemcgFilter {
            no_cgroup,
            unknown,
            paths: if literal.is_empty() {
                None
            } else {
                Some(b.build()?)
            },
            literal,
        })
    }

    /// Whether `m` is selected.
    pub fn matches(&self, m: &Memcg) -> bool {
        match m {
            Memcg::NoCgroup => self.no_cgroup,
            Memcg::Unknown => self.unknown,
            Memcg::Path(text) => {
                let path = m
                    .path_bytes()
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
                let selects = |form: &str| {
                    self.literal.iter().any(|l| l == form)
                        || self.paths.as_ref().is_some_and(|g| g.is_match(form))
                };
                selects(text) || path.as_deref().is_some_and(selects)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcg_values() {
        let p = |s: &str| <Memcg as Part>::parse(s);
        assert_eq!(p("/"), Some(Memcg::Path("/".into())));
        assert_eq!(p("/web"), Some(Memcg::Path("/web".into())));
        assert_eq!(p("-"), Some(Memcg::NoCgroup));
        assert_eq!(p("?"), Some(Memcg::Unknown));
        let spaced = p("/my\\040app/a\\134b").unwrap();
        assert_eq!(spaced.path_bytes().unwrap(), b"/my app/a\\b");
        assert_eq!(spaced.to_string(), "/my\\040app/a\\134b");
        assert_eq!(
            escape_path(b"/my app/a\\b\n\x7f"),
            "/my\\040app/a\\134b\\012\\177"
        );
        for bad in [
            "", "web", "--", "??", "/a\\", "/a\\04", "/a\\400", "/a\\08x", "/é",
        ] {
            assert_eq!(p(bad), None, "{bad:?}");
        }
        assert_eq!(Memcg::NoCgroup.path_bytes(), None);
    }

    #[test]
    fn header_line() {
        let line = "# memcgs: 3/64 held; kept without their memcg: 7 (table full)";
        let t = MemcgTable::parse(line).unwrap();
        assert_eq!((t.held, t.slots, t.kept_without), (3, 64, 7));
        assert_eq!(t.to_string(), line);
        for bad in [
            "# memcgs: 3/64 held",
            "# memcgs: 65/64 held; kept without their memcg: 0 (table full)",
            "# memcgs: x/64 held; kept without their memcg: 0 (table full)",
            "# memcgs: 3/64 held; kept without their memcg: -1 (table full)",
            "# memcgs:  3/64 held; kept without their memcg: 0 (table full)",
        ] {
            assert_eq!(MemcgTable::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn parses_gathers_and_reports() {
        let text = "\
# allocprof memcgs: x
# tracked: 9 allocations in 0 chains
# memcgs: 2/64 held; kept without their memcg: 1 (table full)
        4096        1 a/t.c:7 [t] func:p memcg:/my\\040app accounted:4096
        8192        2 a/t.c:7 [t] func:p memcg:- accounted:0
        4096        1 a/t.c:7 [t] func:p memcg:? accounted:0
        1024        2 a/t.c:7 [t] func:p memcg:/my\\040app accounted:1024
          64        3 mm/x.c:1 func:k memcg:/
        4096        1 a/t.c:7 [t] func:p memcg:/my app
        4096        1 a/t.c:7 [t] func:p memcg:web
        4096        1 a/t.c:7 [t] func:p memcg:/ accounted:-1
        4096        1 a/t.c:7 [t] func:p memcg:/ accounted:1 x
        4096        1 a/t.c:7 [t] func:p
";
        let p = parse_memcgs(text);
        assert_eq!(
            p.stats.as_deref(),
            Some("# tracked: 9 allocations in 0 chains")
        );
        assert_eq!(
            table(&p),
            Some(MemcgTable {
                held: 2,
                slots: 64,
                kept_without: 1
            })
        );
        let issues: Vec<_> = p
            .issues
            .iter()
            .map(|i| (i.line_no, i.expected, i.found.clone()))
            .collect();
        let f = |s: &str| Found::Field(s.into());
        assert_eq!(
            issues,
            [
                (9, Expected::AccountedOrEnd, f("app")),
                (10, Expected::Memcg, f("memcg:web")),
                (11, Expected::AccountedOrEnd, f("accounted:-1")),
                (12, Expected::EndOfMemcgLine, f("x")),
                (13, Expected::Memcg, Found::EndOfLine),
            ]
        );
        assert_eq!(
            p.issues[1].to_string(),
            "line 10: malformed line (expected memcg:PATH (the cgroup's path, escaped), \
             memcg:- or memcg:? after func:NAME, found \"memcg:web\"): \
             \"        4096        1 a/t.c:7 [t] func:p memcg:web\""
        );
        let again: String = p.lines.iter().map(MemcgLine::to_line).collect();
        assert_eq!(
            again,
            text.lines()
                .skip(3)
                .take(5)
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        );
        let got: Vec<_> = sites(&p.lines)
            .iter()
            .map(|s| {
                let parts: Vec<_> = s
                    .parts
                    .iter()
                    .map(|c| (c.part.to_string(), c.bytes, c.calls, c.accounted))
                    .collect();
                (s.site.func.clone(), s.site.bytes, s.site.calls, parts)
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "p".into(),
                    17408,
                    6,
                    vec![
                        ("/my\\040app".into(), 5120, 3, Some(5120)),
                        ("-".into(), 8192, 2, Some(0)),
                        ("?".into(), 4096, 1, Some(0)),
                    ]
                ),
                ("k".into(), 64, 3, vec![("/".into(), 64, 3, None)]),
            ]
        );
    }

    #[test]
    fn a_bad_header_line_is_malformed() {
        let p = parse_memcgs(
            "# memcgs: 3 held\n# memcgs: 1/64 held; kept without their memcg: 0 (table full)\n",
        );
        assert_eq!(p.issues.len(), 1);
        assert_eq!(p.issues[0].line_no, 1);
        assert_eq!(
            p.issues[0].to_string(),
            "line 1: malformed line (expected # memcgs: H/N held; kept without their memcg: K \
             (table full)): \"# memcgs: 3 held\""
        );
        // The first well-formed one is kept.
        assert_eq!(table(&p).map(|t| t.held), Some(1));
        // Other files' headers are comments.
        let n = split::parse::<crate::nodes::Node>("# memcgs: 3 held\n");
        assert!(n.issues.is_empty() && n.header.is_none());
    }

    #[test]
    fn memcg_filter() {
        let f = |pats: &[&str]| {
            MemcgFilter::new(&pats.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
        };
        let all = [
            Memcg::Path("/".into()),
            Memcg::Path("/web".into()),
            Memcg::Path("/web/a".into()),
            Memcg::Path("/my\\040app".into()),
            Memcg::NoCgroup,
            Memcg::Unknown,
        ];
        let picked = |filter: MemcgFilter| {
            all.iter()
                .filter(|m| filter.matches(m))
                .map(|m| m.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(picked(f(&["/web"])), ["/web"]);
        assert_eq!(picked(f(&["/web*"])), ["/web", "/web/a"]);
        assert_eq!(picked(f(&["/my app"])), ["/my\\040app"]);
        assert_eq!(picked(f(&["/my\\\\040app"])), ["/my\\040app"]);
        assert_eq!(picked(f(&["/my\\040app"])), ["/my\\040app"]);
        assert_eq!(picked(f(&["?"])), ["?"]);
        assert_eq!(picked(f(&["-", "/"])), ["/", "-"]);
        assert!(MemcgFilter::new(&["/a[".to_string()]).is_err());
    }

    #[test]
    fn accounted_is_dropped_unless_each_line_has_it() {
        let p = parse_memcgs(
            "1 1 a.c:1 func:f memcg:/a accounted:1\n2 1 a.c:1 func:f memcg:/a\n\
             4 1 a.c:1 func:f memcg:/b accounted:4\n8 1 a.c:1 func:f memcg:/b accounted:8\n",
        );
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        let s = sites(&p.lines);
        let got: Vec<_> = s[0].parts.iter().map(|c| (c.bytes, c.accounted)).collect();
        assert_eq!(got, [(3, None), (12, Some(12))]);
    }
}
