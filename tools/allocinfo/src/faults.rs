//! Parser for allocprof's `/sys/kernel/debug/allocprof/faults`: the call
//! sites with the `f` flag (fault injection by call site), how many of
//! their allocations failed and were asked, and their knobs.
//!
//! ```text
//! # allocprof faults: call sites with the f flag: failures, allocations asked, the call site, its knobs (times and space: what is left)
//! failed:9 asked:20 /root/.cache/allocprof-dev/modbuild/base/modules/allocprof_test.c:225 [allocprof_test] func:aptest_vmalloc_5p probability:50 interval:1 times:-1 space:0 verbose:0
//! failed:2 asked:3 mm/slub.c:2425 func:alloc_slab_page probability:100 interval:1 times:0 space:0 verbose:2
//! ```
//!
//! One line per call site with `f`, in the kernel's id order:
//! `failed:N asked:N `, the call site as `/proc/allocinfo` names it
//! (`file:line`, ` [module]` for loadable modules only, ` func:NAME`; the
//! grammar of [`crate::debugfs`]), then the knobs
//! ` probability:P interval:I times:T space:S verbose:V`, in that order,
//! with what is left of `times` (-1: no limit) and `space`. The values are
//! checked against the ranges the control file takes (probability 0 to
//! 100, interval at least 1, times -1 or more, verbose 0 to 2). `#` lines
//! are comments; with no call site flagged the file is its header line
//! only. Malformed lines are reported with their number and what was
//! expected, and skipped.

use crate::debugfs::{need_field, parse_site_name, split_field};
use crate::debugfs::{Bad, Expected, Found, Malformed};
use crate::record::SiteKey;
use std::collections::HashMap;
use std::str::FromStr;

/// The default path of the file.
pub const FAULTS_FILE: &str = "/sys/kernel/debug/allocprof/faults";

/// One line of the faults file: a call site with the `f` flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSite {
    pub site: SiteKey,
    /// Allocations that were made to fail.
    pub failed: u64,
    /// Allocations that asked whether to fail (all but `__GFP_NOFAIL`).
    pub asked: u64,
    /// Percent of the allocations asked that fail, 0 to 100.
    pub probability: u32,
    /// Only every `interval`-th allocation asked may fail (1: each).
    pub interval: u32,
    /// Failures left; -1 for no limit.
    pub times: i32,
    /// Bytes left to spare before the first failure.
    pub space: u32,
    /// 0: no report, 1: a report in the kernel log, 2: with the call chain.
    pub verbose: u32,
}

impl FaultSite {
    /// The line as the kernel prints it, with its newline.
    pub fn to_line(&self) -> String {
        let k = &self.site;
        let mut s = format!(
            "failed:{} asked:{} {}:{}",
            self.failed, self.asked, k.file, k.line
        );
        if let Some(m) = &k.module {
            s.push_str(" [");
            s.push_str(m);
            s.push(']');
        }
        s.push_str(" func:");
        s.push_str(&k.func);
        s.push_str(&format!(
            " probability:{} interval:{} times:{} space:{} verbose:{}\n",
            self.probability, self.interval, self.times, self.space, self.verbose
        ));
        s
    }
}

/// The result of parsing a faults file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedFaults {
    /// Call sites in file order (lines of one identity are kept apart).
    pub sites: Vec<FaultSite>,
    /// Malformed lines, in file order.
    pub issues: Vec<Malformed>,
}

/// Decimal digits only, as the kernel prints an unsigned number (no sign).
fn digits<T: FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The next field, `key:VALUE` with a value that `value` accepts.
fn knob<'a, T>(
    rest: &'a str,
    key: &str,
    expected: Expected,
    value: impl Fn(&str) -> Option<T>,
) -> Result<(T, &'a str), Bad> {
    let (tok, rest) = need_field(rest, expected)?;
    tok.strip_prefix(key)
        .and_then(|v| v.strip_prefix(':'))
        .and_then(value)
        .map(|v| (v, rest))
        .ok_or_else(|| (expected, Found::Field(tok.to_string())))
}

fn parse_line(line: &str) -> Result<FaultSite, Bad> {
    let (failed, rest) = knob(line, "failed", Expected::Failed, digits::<u64>)?;
    let (asked, rest) = knob(rest, "asked", Expected::Asked, digits::<u64>)?;
    let (site, rest) = parse_site_name(rest, Expected::FaultLocation)?;
    let (probability, rest) = knob(rest, "probability", Expected::Probability, |v| {
        digits::<u32>(v).filter(|p| *p <= 100)
    })?;
    let (interval, rest) = knob(rest, "interval", Expected::Interval, |v| {
        digits::<u32>(v).filter(|i| *i >= 1)
    })?;
    let (times, rest) = knob(rest, "times", Expected::Times, |v| {
        if v == "-1" {
            Some(-1)
        } else {
            digits::<i32>(v)
        }
    })?;
    let (space, rest) = knob(rest, "space", Expected::Space, digits::<u32>)?;
    let (verbose, rest) = knob(rest, "verbose", Expected::Verbose, |v| {
        digits::<u32>(v).filter(|v| *v <= 2)
    })?;
    if let Some((tok, _)) = split_field(rest) {
        return Err((Expected::EndOfFaultLine, Found::Field(tok.to_string())));
    }
    Ok(FaultSite {
        site,
        failed,
        asked,
        probability,
        interval,
        times,
        space,
        verbose,
    })
}

/// Parse the text of a faults file.
pub fn parse_faults(input: &str) -> ParsedFaults {
    let mut out = ParsedFaults::default();
    for (i, line) in input.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line) {
            Ok(s) => out.sites.push(s),
            Err(bad) => out.issues.push(Malformed::at(i + 1, line, bad)),
        }
    }
    out
}

/// Parse raw bytes (invalid UTF-8 is replaced, never an error).
pub fn parse_faults_bytes(input: &[u8]) -> ParsedFaults {
    parse_faults(&String::from_utf8_lossy(input))
}

/// Merge the lines of one identity (file, line, module, function), as the
/// kernel prints for inline helpers compiled into several units, in the
/// order of first appearance: failures and allocations asked are summed,
/// and so is what is left of `times` (-1 when any line has no limit) and
/// of `space`. A control command selects call sites by those names, so
/// the lines of one identity got their knobs together; the first line's
/// probability, interval and verbose are kept.
pub fn merge_sites(sites: &[FaultSite]) -> Vec<FaultSite> {
    let mut index: HashMap<&SiteKey, usize> = HashMap::new();
    let mut out: Vec<FaultSite> = Vec::new();
    for s in sites {
        match index.get(&s.site) {
            Some(&i) => {
                let m = &mut out[i];
                m.failed = m.failed.saturating_add(s.failed);
                m.asked = m.asked.saturating_add(s.asked);
                m.times = if m.times < 0 || s.times < 0 {
                    -1
                } else {
                    m.times.saturating_add(s.times)
                };
                m.space = m.space.saturating_add(s.space);
            }
            None => {
                index.insert(&s.site, out.len());
                out.push(s.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_lines_again() {
        let text = "\
# allocprof faults: x
failed:9 asked:20 a/t.c:225 [t] func:v probability:50 interval:1 times:-1 space:0 verbose:0
failed:0 asked:18446744073709551615 mm/slub.c:2425 func:alloc_slab_page probability:0 interval:4294967295 times:2147483647 space:4294967295 verbose:2
";
        let p = parse_faults(text);
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        assert_eq!(p.sites.len(), 2);
        let s = &p.sites[1];
        assert_eq!(s.site.module, None);
        assert_eq!(
            (s.failed, s.asked, s.probability, s.interval),
            (0, u64::MAX, 0, u32::MAX)
        );
        assert_eq!((s.times, s.space, s.verbose), (i32::MAX, u32::MAX, 2));
        let again: String = p.sites.iter().map(FaultSite::to_line).collect();
        assert!(text.ends_with(&again));
    }

    #[test]
    fn reports_what_was_expected() {
        let good =
            "failed:1 asked:2 a.c:1 func:f probability:100 interval:1 times:0 space:0 verbose:2";
        assert!(parse_line(good).is_ok());
        let f = |s: &str| Found::Field(s.into());
        use Expected::*;
        let cases: Vec<(String, Bad)> = vec![
            (String::new(), (Failed, Found::EndOfLine)),
            ("1 1 a.c:1 func:f".into(), (Failed, f("1"))),
            ("failed:-1".into(), (Failed, f("failed:-1"))),
            ("failed:+1".into(), (Failed, f("failed:+1"))),
            ("failed:1".into(), (Asked, Found::EndOfLine)),
            ("failed:1 calls:2".into(), (Asked, f("calls:2"))),
            ("failed:1 asked:2".into(), (FaultLocation, Found::EndOfLine)),
            (
                "failed:1 asked:2 a.c func:f".into(),
                (FaultLocation, f("a.c")),
            ),
            (
                "failed:1 asked:2 a.c:1 [m]".into(),
                (Func, Found::EndOfLine),
            ),
            (
                "failed:1 asked:2 a.c:1 func:f".into(),
                (Probability, Found::EndOfLine),
            ),
            (
                good.replace("probability:100", "probability:101"),
                (Probability, f("probability:101")),
            ),
            (
                good.replace("interval:1", "interval:0"),
                (Interval, f("interval:0")),
            ),
            (good.replace("times:0", "times:-2"), (Times, f("times:-2"))),
            (
                good.replace("times:0", "times:2147483648"),
                (Times, f("times:2147483648")),
            ),
            (
                good.replace("space:0", "space:4294967296"),
                (Space, f("space:4294967296")),
            ),
            (
                good.replace("verbose:2", "verbose:3"),
                (Verbose, f("verbose:3")),
            ),
            // The knobs in the kernel's order only.
            (
                good.replace("interval:1 times:0", "times:0 interval:1"),
                (Interval, f("times:0")),
            ),
            (format!("{good} node:0"), (EndOfFaultLine, f("node:0"))),
            // A file name with a space: as in every other file of the tool,
            // the call site's fields are separated by blanks.
            (good.replace("a.c:1", "a b.c:1"), (FaultLocation, f("a"))),
        ];
        for (line, want) in cases {
            assert_eq!(parse_line(&line).unwrap_err(), want, "{line:?}");
        }
        let p = parse_faults(&format!("# x\n\n{good}\n{good} x\n"));
        assert_eq!(p.sites.len(), 1);
        assert_eq!(
            p.issues[0].to_string(),
            format!(
                "line 4: malformed line (expected the end of the line after verbose:V, \
                 found \"x\"): \"{good} x\""
            )
        );
    }

    #[test]
    fn merges_lines_of_one_identity() {
        let p = parse_faults(
            "failed:1 asked:4 a.h:3 func:f probability:50 interval:2 times:3 space:10 verbose:1\n\
             failed:5 asked:5 b.c:1 func:g probability:100 interval:1 times:-1 space:0 verbose:2\n\
             failed:2 asked:6 a.h:3 func:f probability:50 interval:2 times:0 space:20 verbose:1\n\
             failed:0 asked:1 a.h:3 [m] func:f probability:50 interval:2 times:1 space:0 verbose:1\n\
             failed:0 asked:1 b.c:1 func:g probability:100 interval:1 times:7 space:0 verbose:2\n",
        );
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        let merged = merge_sites(&p.sites);
        let got: Vec<_> = merged
            .iter()
            .map(|s| {
                (
                    s.site.func.as_str(),
                    s.site.module.as_deref(),
                    s.failed,
                    s.asked,
                    s.probability,
                    s.interval,
                    s.times,
                    s.space,
                    s.verbose,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("f", None, 3, 10, 50, 2, 3, 30, 1),
                ("g", None, 5, 6, 100, 1, -1, 0, 2),
                ("f", Some("m"), 0, 1, 50, 2, 1, 0, 1),
            ]
        );
    }
}
