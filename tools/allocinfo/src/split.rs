//! What the parsers of allocprof's `ages`, `nodes` and `memcgs` files
//! share: each line is a call-site line in `/proc/allocinfo`'s grammar
//! followed by one field, `KEY:VALUE`, that names the part of the call
//! site's live allocations the line's figures are (an age bucket, a node,
//! a memory cgroup), and in the memcgs file of Linux 7.3 ` accounted:BYTES`:
//!
//! ```text
//!          768        3 a/t.c:99 [t] func:k age:2-4s
//!        12288        3 a/t.c:7 [t] func:p node:0
//!         5120       40 a/t.c:385 [t] func:k memcg:/web accounted:5120
//! ```
//!
//! `#` lines are comments (the first `# tracked:` line is kept, and the
//! first line of the file's own header, [`Part::HEADER`], checked).
//! Malformed lines are reported with their number and what was expected,
//! and skipped. The lines of a call site are gathered per part by [`sites`].

use crate::debugfs::{comment_line, Malformed};
use crate::debugfs::{need_field, parse_site, split_field, Bad, Expected, Found};
use crate::record::{Record, SiteKey, ACCOUNTED_KEY};
use std::collections::HashMap;
use std::fmt;

/// The part of a call site's allocations a line gives: its field's key,
/// what a bad field is reported as, and how its value reads and prints.
pub trait Part: Clone + Eq + Ord + fmt::Display {
    /// The field's key with its colon (`age:`, `node:`, `memcg:`).
    const KEY: &'static str;
    /// What the parser expected where the field is missing or bad.
    const EXPECTED: Expected;
    /// Whether a line may end with ` accounted:BYTES` after the part (the
    /// memcgs file of Linux 7.3).
    const ACCOUNTED: bool = false;
    /// The start of a comment line of the file's own that the parser checks
    /// with [`Part::check_header`] and keeps (`# memcgs:`); empty for none.
    const HEADER: &'static str = "";
    /// The value after the key, as the kernel prints it.
    fn parse(value: &str) -> Option<Self>;
    /// Whether the [`Part::HEADER`] line is as the kernel prints it.
    fn check_header(_line: &str) -> Result<(), Bad> {
        Ok(())
    }
}

/// One line: the live allocations of a call site in one part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartLine<P> {
    /// The call site, with the bytes and calls of this part (no `extra` pairs).
    pub site: Record,
    pub part: P,
    /// Of the bytes, those that asked to be charged to a memory cgroup
    /// (` accounted:BYTES`; only where [`Part::ACCOUNTED`], on Linux 7.3).
    pub accounted: Option<u64>,
}

impl<P: Part> PartLine<P> {
    /// The line as the kernel prints it, with its newline.
    pub fn to_line(&self) -> String {
        let accounted = match self.accounted {
            Some(a) => format!(" {ACCOUNTED_KEY}:{a}"),
            None => String::new(),
        };
        format!(
            "{} {}{}{accounted}\n",
            self.site.site_prefix(),
            P::KEY,
            self.part
        )
    }
}

/// The result of parsing an ages, nodes or memcgs file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedParts<P> {
    /// Lines in file order.
    pub lines: Vec<PartLine<P>>,
    /// The first `# tracked:` line, verbatim.
    pub stats: Option<String>,
    /// The first well-formed [`Part::HEADER`] line, without trailing white
    /// space.
    pub header: Option<String>,
    /// Malformed lines, in file order.
    pub issues: Vec<Malformed>,
}

fn parse_line<P: Part>(line: &str) -> Result<PartLine<P>, Bad> {
    let (site, rest) = parse_site(line)?;
    let (tok, rest) = need_field(rest, P::EXPECTED)?;
    let part = tok
        .strip_prefix(P::KEY)
        .and_then(P::parse)
        .ok_or_else(|| (P::EXPECTED, Found::Field(tok.to_string())))?;
    let mut rest = rest;
    let mut accounted = None;
    if P::ACCOUNTED {
        if let Some((tok, after)) = split_field(rest) {
            // Decimal digits only, as the kernel prints them.
            accounted = tok
                .strip_prefix(ACCOUNTED_KEY)
                .and_then(|v| v.strip_prefix(':'))
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .map(Some)
                .ok_or_else(|| (Expected::AccountedOrEnd, Found::Field(tok.to_string())))?;
            rest = after;
        }
    }
    if let Some((tok, _)) = split_field(rest) {
        let expected = if P::ACCOUNTED {
            Expected::EndOfMemcgLine
        } else {
            Expected::EndOfLine
        };
        return Err((expected, Found::Field(tok.to_string())));
    }
    Ok(PartLine {
        site,
        part,
        accounted,
    })
}

/// Parse the text of an ages, nodes or memcgs file.
pub fn parse<P: Part>(input: &str) -> ParsedParts<P> {
    let mut out = ParsedParts {
        lines: vec![],
        stats: None,
        header: None,
        issues: vec![],
    };
    for (i, line) in input.lines().enumerate() {
        if !P::HEADER.is_empty() && out.header.is_none() && line.starts_with(P::HEADER) {
            match P::check_header(line.trim_end()) {
                Ok(()) => out.header = Some(line.trim_end().to_string()),
                Err(bad) => out.issues.push(Malformed::at(i + 1, line, bad)),
            }
            continue;
        }
        if line.trim().is_empty() || comment_line(line, &mut out.stats) {
            continue;
        }
        match parse_line(line) {
            Ok(l) => out.lines.push(l),
            Err(bad) => out.issues.push(Malformed::at(i + 1, line, bad)),
        }
    }
    out
}

/// Parse raw bytes (invalid UTF-8 is replaced, never an error).
pub fn parse_bytes<P: Part>(input: &[u8]) -> ParsedParts<P> {
    parse(&String::from_utf8_lossy(input))
}

/// The live allocations of one part of a site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartCount<P> {
    pub part: P,
    pub bytes: i64,
    pub calls: u64,
    /// Of the bytes, those that asked to be charged to a memory cgroup:
    /// the sum of its lines' ` accounted:`, `None` unless each has it.
    pub accounted: Option<u64>,
}

/// A call site with its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartSite<P> {
    /// The call site with the totals of its parts.
    pub site: Record,
    /// Its non-empty parts, in the order of `P` (youngest bucket, lowest
    /// node first).
    pub parts: Vec<PartCount<P>>,
}

impl<P> PartSite<P> {
    /// Keep only the parts `keep` says, and update the totals.
    pub fn retain_parts(&mut self, keep: impl Fn(&P) -> bool) {
        self.parts.retain(|c| keep(&c.part));
        self.site.bytes = self
            .parts
            .iter()
            .fold(0i64, |a, c| a.saturating_add(c.bytes));
        self.site.calls = self
            .parts
            .iter()
            .fold(0u64, |a, c| a.saturating_add(c.calls));
    }
}

/// Gather the lines per call site, in the order of first appearance. Lines
/// of one identity (file, line, module, function), as the kernel prints for
/// inline helpers compiled into several units, are summed per part (their
/// ` accounted:` when each has it, else it is dropped).
pub fn sites<P: Part>(lines: &[PartLine<P>]) -> Vec<PartSite<P>> {
    let mut index: HashMap<SiteKey, usize> = HashMap::new();
    let mut out: Vec<PartSite<P>> = Vec::new();
    for l in lines {
        let i = *index.entry(l.site.key()).or_insert_with(|| {
            let mut site = l.site.clone();
            site.bytes = 0;
            site.calls = 0;
            out.push(PartSite {
                site,
                parts: vec![],
            });
            out.len() - 1
        });
        let s = &mut out[i];
        s.site.bytes = s.site.bytes.saturating_add(l.site.bytes);
        s.site.calls = s.site.calls.saturating_add(l.site.calls);
        match s.parts.iter_mut().find(|c| c.part == l.part) {
            Some(c) => {
                c.bytes = c.bytes.saturating_add(l.site.bytes);
                c.calls = c.calls.saturating_add(l.site.calls);
                c.accounted = c
                    .accounted
                    .zip(l.accounted)
                    .map(|(a, b)| a.saturating_add(b));
            }
            None => s.parts.push(PartCount {
                part: l.part.clone(),
                bytes: l.site.bytes,
                calls: l.site.calls,
                accounted: l.accounted,
            }),
        }
    }
    for s in &mut out {
        s.parts.sort_by(|a, b| a.part.cmp(&b.part));
    }
    out
}
