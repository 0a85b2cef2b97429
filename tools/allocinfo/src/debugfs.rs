//! What the parsers of allocprof's debugfs files (`/sys/kernel/debug/allocprof/`,
//! see [`crate::stacks`], [`crate::ages`], [`crate::nodes`],
//! [`crate::memcgs`] and [`crate::faults`]) share: the call-site part of a line, which has
//! `/proc/allocinfo`'s grammar, the comment lines with the statistics line
//! among them, and the report of a malformed line, which says what was
//! expected.

use crate::parsed::shown_text;
use crate::record::{Record, SiteKey};
use std::fmt;

/// Prefix of the statistics comment line of the debugfs files.
pub const STATS_PREFIX: &str = "# tracked:";

/// What the parser expected where it found something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// The byte count (`%12lli`).
    Bytes,
    /// The call count (`%8llu`).
    Calls,
    /// `file:line`.
    Location,
    /// ` [module]` or ` func:NAME` after `file:line`.
    ModuleOrFunc,
    /// ` func:NAME` after ` [module]`.
    Func,
    /// ` pid:N` after the function (stacks).
    Pid,
    /// ` comm:TASK` after the pid (stacks).
    Comm,
    /// ` age:LO-HIs` or ` age:>=LOs` after the function (ages).
    Age,
    /// ` node:N` after the function (nodes).
    Node,
    /// ` memcg:PATH`, `-` or `?` after the function (memcgs).
    Memcg,
    /// ` accounted:BYTES` or the end of the line after the memcg (memcgs).
    AccountedOrEnd,
    /// `# memcgs: H/N held; kept without their memcg: K (table full)` (memcgs).
    MemcgHeader,
    /// Nothing more after the age bucket or node (ages, nodes).
    EndOfLine,
    /// Nothing more after ` accounted:BYTES` (memcgs).
    EndOfMemcgLine,
    /// `failed:N` at the start of the line (faults).
    Failed,
    /// ` asked:N` after `failed:N` (faults).
    Asked,
    /// `file:line` after `asked:N` (faults).
    FaultLocation,
    /// ` probability:P`, 0 to 100, after the function (faults).
    Probability,
    /// ` interval:I`, at least 1, after the probability (faults).
    Interval,
    /// ` times:T`, -1 or more, after the interval (faults).
    Times,
    /// ` space:S` after the times (faults).
    Space,
    /// ` verbose:V`, 0 to 2, after the space (faults).
    Verbose,
    /// Nothing more after `verbose:V` (faults).
    EndOfFaultLine,
    /// In a record of the stacks file: a frame or the empty line ending it.
    FrameOrEmpty,
    /// A frame outside a record of the stacks file.
    RecordLine,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expected::Bytes => "a byte count",
            Expected::Calls => "a call count after the byte count",
            Expected::Location => "file:line after the call count",
            Expected::ModuleOrFunc => "[module] or func:NAME after file:line",
            Expected::Func => "func:NAME after [module]",
            Expected::Pid => "pid:N after func:NAME",
            Expected::Comm => "comm:TASK after pid:N",
            Expected::Age => "age:LO-HIs or age:>=LOs (power-of-two seconds) after func:NAME",
            Expected::Node => "node:N (a node number) after func:NAME",
            Expected::Memcg => {
                "memcg:PATH (the cgroup's path, escaped), memcg:- or memcg:? after func:NAME"
            }
            Expected::AccountedOrEnd => "accounted:BYTES or the end of the line after memcg:PATH",
            Expected::MemcgHeader => "# memcgs: H/N held; kept without their memcg: K (table full)",
            Expected::EndOfLine => "the end of the line after the age bucket or node",
            Expected::EndOfMemcgLine => "the end of the line after accounted:BYTES",
            Expected::Failed => "failed:N (the failures) at the start of the line",
            Expected::Asked => "asked:N (the allocations asked) after failed:N",
            Expected::FaultLocation => "file:line after asked:N",
            Expected::Probability => "probability:P (0 to 100) after func:NAME",
            Expected::Interval => "interval:I (1 or more) after probability:P",
            Expected::Times => "times:T (-1 or more) after interval:I",
            Expected::Space => "space:S (bytes) after times:T",
            Expected::Verbose => "verbose:V (0, 1 or 2) after space:S",
            Expected::EndOfFaultLine => "the end of the line after verbose:V",
            Expected::FrameOrEmpty => {
                "a frame indented by exactly four spaces, or the empty line that ends the record"
            }
            Expected::RecordLine => {
                "a call site line `BYTES CALLS file:line [module] func:NAME pid:N comm:TASK` \
                 before the frames"
            }
        })
    }
}

/// What the parser found instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A field (shown quoted).
    Field(String),
    /// The line ended.
    EndOfLine,
    /// The whole line is the culprit (already shown by the report).
    Line,
}

impl Found {
    fn field(s: &str) -> Found {
        Found::Field(s.to_string())
    }
}

/// A malformed line of a debugfs file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// 1-based line number.
    pub line_no: usize,
    pub expected: Expected,
    pub found: Found,
    /// The line (without its newline).
    pub text: String,
}

impl Malformed {
    /// Line `line_no` (1-based), `text`, was not what was expected.
    pub(crate) fn at(line_no: usize, text: &str, (expected, found): Bad) -> Malformed {
        Malformed {
            line_no,
            expected,
            found,
            text: text.to_string(),
        }
    }
}

impl fmt::Display for Malformed {
    /// `line N: malformed line (expected X, found "Y"): "TEXT"`, like the
    /// reports of the `/proc/allocinfo` parser.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: malformed line (expected {}",
            self.line_no, self.expected
        )?;
        match &self.found {
            Found::Field(s) => write!(f, ", found {s:?}")?,
            Found::EndOfLine => write!(f, ", found the end of the line")?,
            Found::Line => {}
        }
        write!(f, "): {:?}", shown_text(&self.text))
    }
}

/// Is `line` a comment (`#`)? The first statistics line (`# tracked:`) is
/// kept in `stats`, without trailing white space.
pub(crate) fn comment_line(line: &str, stats: &mut Option<String>) -> bool {
    if !line.starts_with('#') {
        return false;
    }
    if stats.is_none() && line.starts_with(STATS_PREFIX) {
        *stats = Some(line.trim_end().to_string());
    }
    true
}

/// The bytes `text` stands for, in the kernel's `seq_escape()` form: each
/// byte outside `plain` and the backslash are written as a backslash and
/// three octal digits (at most `\377`), every byte in `plain` as it is.
/// `None` if `text` is not in that form.
pub(crate) fn unescape_octal(text: &str, plain: std::ops::Range<u8>) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => {
                let digits = b.get(i + 1..i + 4)?;
                if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) || digits[0] > b'3' {
                    return None;
                }
                out.push(digits.iter().fold(0u8, |v, d| (v << 3) | (d - b'0')));
                i += 4;
            }
            c if plain.contains(&c) => {
                out.push(c);
                i += 1;
            }
            _ => return None,
        }
    }
    Some(out)
}

/// `name` in the form [`unescape_octal`] reads.
pub(crate) fn escape_octal(name: &[u8], plain: std::ops::Range<u8>) -> String {
    let mut s = String::with_capacity(name.len());
    for &b in name {
        if b == b'\\' || !plain.contains(&b) {
            s.push_str(&format!("\\{b:03o}"));
        } else {
            s.push(char::from(b));
        }
    }
    s
}

/// Why a line did not parse (the line number and text are added by the caller).
pub(crate) type Bad = (Expected, Found);

pub(crate) fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// The next whitespace-separated field and what follows it.
pub(crate) fn split_field(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start_matches(is_blank);
    if s.is_empty() {
        return None;
    }
    let end = s.find(is_blank).unwrap_or(s.len());
    Some(s.split_at(end))
}

/// The next field, which must be there.
pub(crate) fn need_field(s: &str, expected: Expected) -> Result<(&str, &str), Bad> {
    split_field(s).ok_or((expected, Found::EndOfLine))
}

/// A field that must be `key:VALUE`.
pub(crate) fn keyed<'a>(field: &'a str, key: &str, expected: Expected) -> Result<&'a str, Bad> {
    field
        .strip_prefix(key)
        .and_then(|v| v.strip_prefix(':'))
        .ok_or_else(|| (expected, Found::field(field)))
}

/// Parse the call-site part of a line, `/proc/allocinfo`'s grammar:
/// `"%12lli %8llu "`, `file:line`, ` [module]` for loadable modules only,
/// ` func:NAME`. Returns the site (with the line's bytes and calls) and the
/// rest of the line after the function name.
pub(crate) fn parse_site(line: &str) -> Result<(Record, &str), Bad> {
    let (tok, rest) = need_field(line, Expected::Bytes)?;
    let bytes: i64 = tok
        .parse()
        .map_err(|_| (Expected::Bytes, Found::field(tok)))?;
    let (tok, rest) = need_field(rest, Expected::Calls)?;
    let calls: u64 = tok
        .parse()
        .map_err(|_| (Expected::Calls, Found::field(tok)))?;
    let (key, rest) = parse_site_name(rest, Expected::Location)?;
    Ok((
        Record {
            bytes,
            calls,
            file: key.file,
            line: key.line,
            module: key.module,
            func: key.func,
            extra: vec![],
        },
        rest,
    ))
}

/// Parse a call site as `/proc/allocinfo` names it, without figures:
/// `file:line`, ` [module]` for loadable modules only, ` func:NAME`.
/// `location` is what a missing or bad `file:line` is reported as (it
/// says what comes before). Returns the site and the rest of the line
/// after the function name.
pub(crate) fn parse_site_name(s: &str, location: Expected) -> Result<(SiteKey, &str), Bad> {
    let (loc, rest) = need_field(s, location)?;
    let (file, line_no) = loc
        .rsplit_once(':')
        .and_then(|(f, l)| Some((f, l.parse::<u32>().ok()?)))
        .filter(|(f, _)| !f.is_empty())
        .ok_or_else(|| (location, Found::field(loc)))?;
    let (mut tok, mut rest) = need_field(rest, Expected::ModuleOrFunc)?;
    let mut module = None;
    if tok.len() > 2 && tok.starts_with('[') && tok.ends_with(']') {
        module = Some(tok[1..tok.len() - 1].to_string());
        (tok, rest) = need_field(rest, Expected::Func)?;
    }
    let expected = if module.is_some() {
        Expected::Func
    } else {
        Expected::ModuleOrFunc
    };
    let func = keyed(tok, "func", expected)?;
    if func.is_empty() {
        return Err((expected, Found::field(tok)));
    }
    Ok((
        SiteKey {
            file: file.to_string(),
            line: line_no,
            module,
            func: func.to_string(),
        },
        rest,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_part_and_rest() {
        let (r, rest) =
            parse_site("        2560        5 a/b.c:351 [m_x] func:f pid:1 comm:x y").unwrap();
        assert_eq!((r.bytes, r.calls, r.line), (2560, 5, 351));
        assert_eq!(
            (r.file.as_str(), r.module.as_deref()),
            ("a/b.c", Some("m_x"))
        );
        assert_eq!((r.func.as_str(), rest), ("f", " pid:1 comm:x y"));
        assert_eq!(
            r.site_prefix(),
            "        2560        5 a/b.c:351 [m_x] func:f"
        );
        let (r, rest) = parse_site("-1 0 mm/x.c:2 func:g").unwrap();
        assert_eq!((r.bytes, r.module, rest), (-1, None, ""));
    }

    #[test]
    fn says_what_was_expected() {
        use Expected::*;
        let f = |s: &str| Found::Field(s.into());
        let cases: [(&str, Bad); 9] = [
            ("", (Bytes, Found::EndOfLine)),
            ("x 1 a.c:1 func:f", (Bytes, f("x"))),
            ("1", (Calls, Found::EndOfLine)),
            ("1 -1 a.c:1 func:f", (Calls, f("-1"))),
            ("1 1 a.c func:f", (Location, f("a.c"))),
            ("1 1 a.c:1", (ModuleOrFunc, Found::EndOfLine)),
            ("1 1 a.c:1 [m]", (Func, Found::EndOfLine)),
            ("1 1 a.c:1 [m] fun:f", (Func, f("fun:f"))),
            ("1 1 a.c:1 func:", (ModuleOrFunc, f("func:"))),
        ];
        for (line, want) in cases {
            assert_eq!(parse_site(line).unwrap_err(), want, "{line:?}");
        }
        let m = Malformed {
            line_no: 4,
            expected: Pid,
            found: Found::EndOfLine,
            text: "1 1 a.c:1 func:f".into(),
        };
        assert_eq!(
            m.to_string(),
            "line 4: malformed line (expected pid:N after func:NAME, found the end of the line): \
             \"1 1 a.c:1 func:f\""
        );
    }
}
