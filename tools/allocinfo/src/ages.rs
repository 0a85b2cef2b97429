//! Parser for allocprof's `/sys/kernel/debug/allocprof/ages`: the live
//! allocations of call sites with the `a` flag, by age.
//!
//! ```text
//! # allocprof ages: live allocations of call sites with the a flag, by age in power-of-two buckets of seconds
//! # tracked: 5 allocations in 0 chains; table: ...
//!          256        2 /root/allocprof/selftests/modules/allocprof_test.c:99 [allocprof_test] func:aptest_kmalloc_100 age:0-1s
//!          768        3 /root/allocprof/selftests/modules/allocprof_test.c:99 [allocprof_test] func:aptest_kmalloc_100 age:2-4s
//!        40960       10 mm/slub.c:2425 func:alloc_slab_page age:8-16s
//! ```
//!
//! One line per call site and non-empty age bucket: a call-site line in
//! `/proc/allocinfo`'s grammar followed by ` age:LO-HIs` (ages in [LO, HI)
//! seconds: `0-1s`, then HI = 2 × LO with LO a power of two) or, for the
//! last, open bucket, ` age:>=LOs`. `#` lines are comments. Malformed lines
//! are reported with their number and what was expected, and skipped
//! ([`crate::split`], which the nodes file shares).

use crate::debugfs::Expected;
use crate::split::{self, ParsedParts, Part, PartCount, PartLine, PartSite};
use std::fmt;

/// An age bucket: ages in [lo, hi) seconds; `hi` is `None` for the open last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgeBucket {
    pub lo: u64,
    pub hi: Option<u64>,
}

impl AgeBucket {
    /// Parse the kernel's label without `age:` (`0-1s`, `8-16s`, `>=2147483648s`).
    pub fn parse(label: &str) -> Option<AgeBucket> {
        fn num(s: &str) -> Option<u64> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            s.parse().ok()
        }
        let s = label.strip_suffix('s')?;
        if let Some(lo) = s.strip_prefix(">=") {
            let lo = num(lo)?;
            return lo.is_power_of_two().then_some(AgeBucket { lo, hi: None });
        }
        let (lo, hi) = s.split_once('-')?;
        let (lo, hi) = (num(lo)?, num(hi)?);
        let valid = (lo == 0 && hi == 1) || (lo.is_power_of_two() && lo.checked_mul(2) == Some(hi));
        valid.then_some(AgeBucket { lo, hi: Some(hi) })
    }
}

impl fmt::Display for AgeBucket {
    /// The kernel's label without `age:`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.hi {
            Some(hi) => write!(f, "{}-{}s", self.lo, hi),
            None => write!(f, ">={}s", self.lo),
        }
    }
}

impl Part for AgeBucket {
    const KEY: &'static str = "age:";
    const EXPECTED: Expected = Expected::Age;

    fn parse(value: &str) -> Option<Self> {
        AgeBucket::parse(value)
    }
}

/// One line: the live allocations of a call site in one age bucket.
pub type AgeLine = PartLine<AgeBucket>;
/// The result of parsing an ages file.
pub type ParsedAges = ParsedParts<AgeBucket>;
/// The live allocations of one bucket of a site.
pub type BucketCount = PartCount<AgeBucket>;
/// A call site with its age buckets, youngest first.
pub type AgeSite = PartSite<AgeBucket>;

/// Parse the text of an ages file.
pub fn parse_ages(input: &str) -> ParsedAges {
    split::parse(input)
}

/// Parse raw bytes (invalid UTF-8 is replaced, never an error).
pub fn parse_ages_bytes(input: &[u8]) -> ParsedAges {
    split::parse_bytes(input)
}

impl AgeSite {
    /// The oldest bucket.
    pub fn oldest(&self) -> Option<&BucketCount> {
        self.parts.last()
    }

    /// Keep only the buckets whose ages are all at least `secs` seconds
    /// (lower bound ≥ `secs`), and update the totals.
    pub fn retain_min_age(&mut self, secs: u64) {
        self.retain_parts(|b| b.lo >= secs);
    }
}

/// Gather the lines per call site, in the order of first appearance. Lines
/// of one identity (file, line, module, function), as the kernel prints for
/// inline helpers compiled into several units, are summed per bucket.
pub fn sites(lines: &[AgeLine]) -> Vec<AgeSite> {
    split::sites(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugfs::Found;

    #[test]
    fn bucket_labels() {
        let b = |lo, hi| Some(AgeBucket { lo, hi });
        assert_eq!(AgeBucket::parse("0-1s"), b(0, Some(1)));
        assert_eq!(AgeBucket::parse("1-2s"), b(1, Some(2)));
        assert_eq!(AgeBucket::parse("1024-2048s"), b(1024, Some(2048)));
        assert_eq!(AgeBucket::parse(">=2147483648s"), b(2147483648, None));
        for bad in [
            "",
            "s",
            "0-1",
            "0-2s",
            "2-3s",
            "3-6s",
            "1-2",
            "-1s",
            "+1-2s",
            "1--2s",
            ">=3s",
            ">=s",
            "1-2ss",
            "0-1 s",
            "9223372036854775808-18446744073709551616s",
        ] {
            assert_eq!(AgeBucket::parse(bad), None, "{bad:?}");
        }
        for l in ["0-1s", "2-4s", ">=2147483648s"] {
            assert_eq!(AgeBucket::parse(l).unwrap().to_string(), l);
        }
    }

    #[test]
    fn parses_and_gathers_sites() {
        let text = "\
# allocprof ages: x
# tracked: 15 allocations in 0 chains
         768        3 a/t.c:99 [t] func:k age:2-4s
         256        2 a/t.c:99 [t] func:k age:0-1s
       40960       10 mm/slub.c:2425 func:alloc_slab_page age:>=2147483648s
         128        1 a/t.c:99 [t] func:k age:2-4s
        1024        2 a/t.c:99 func:k age:2-4s
";
        let p = parse_ages(text);
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        assert_eq!(
            p.stats.as_deref(),
            Some("# tracked: 15 allocations in 0 chains")
        );
        assert_eq!(p.lines.len(), 5);
        let again: String = p.lines.iter().map(AgeLine::to_line).collect();
        assert!(text.ends_with(&again));
        let s = sites(&p.lines);
        let got: Vec<_> = s
            .iter()
            .map(|s| {
                (
                    s.site.module.clone(),
                    s.site.bytes,
                    s.site.calls,
                    s.parts
                        .iter()
                        .map(|b| (b.part.to_string(), b.bytes, b.calls))
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let t = Some("t".to_string());
        assert_eq!(
            got,
            [
                (
                    t,
                    1152,
                    6,
                    vec![("0-1s".into(), 256, 2), ("2-4s".into(), 896, 4)]
                ),
                (None, 40960, 10, vec![(">=2147483648s".into(), 40960, 10)]),
                (None, 1024, 2, vec![("2-4s".into(), 1024, 2)]),
            ]
        );
        let mut k = s[0].clone();
        assert_eq!(k.oldest().unwrap().part.lo, 2);
        k.retain_min_age(1);
        assert_eq!((k.site.bytes, k.site.calls, k.parts.len()), (896, 4, 1));
    }

    #[test]
    fn reports_what_was_expected() {
        let p = parse_ages(
            "1 1 a.c:1 func:f\n1 1 a.c:1 func:f age:3-4s\n1 1 a.c:1 func:f age:0-1s x\n\
             1 1 a.c:1 func:f pid:1\n1 1 a.c:1 [m] age:0-1s\n",
        );
        let got: Vec<_> = p
            .issues
            .iter()
            .map(|i| (i.line_no, i.expected, i.found.clone()))
            .collect();
        let f = |s: &str| Found::Field(s.into());
        use Expected::*;
        assert_eq!(
            got,
            [
                (1, Age, Found::EndOfLine),
                (2, Age, f("age:3-4s")),
                (3, EndOfLine, f("x")),
                (4, Age, f("pid:1")),
                (5, Func, f("age:0-1s")),
            ]
        );
        assert!(p.lines.is_empty());
        assert_eq!(
            p.issues[1].to_string(),
            "line 2: malformed line (expected age:LO-HIs or age:>=LOs (power-of-two seconds) \
             after func:NAME, found \"age:3-4s\"): \"1 1 a.c:1 func:f age:3-4s\""
        );
    }
}
