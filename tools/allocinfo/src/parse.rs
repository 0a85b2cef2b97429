//! Parser for the text format of `/proc/allocinfo` (versions 1.0 and 2.0).
//!
//! The parser is line based and never panics: malformed lines are collected as
//! [`ParseIssue`]s (with their 1-based line number) and skipped. Header lines
//! (`allocinfo - version: X.Y` and `#` comments) are accepted anywhere, since
//! users often pipe the file through `sort -g`, and may be missing entirely.

use crate::parsed::{ParseErrorKind, ParseIssue, Parsed, Version};
use crate::record::{accounted_from_extra, Churn, Record};

/// Prefix of the version header line.
pub const HEADER_PREFIX: &str = "allocinfo - version:";

/// Parse a whole allocinfo text, or a snapshot in the compact form
/// ([`crate::compact`], recognised by its first line).
pub fn parse_str(input: &str) -> Parsed {
    if crate::compact::is_compact(input) {
        return crate::compact::decode(input);
    }
    let mut out = Parsed::default();
    for (i, line) in input.lines().enumerate() {
        let line_no = i + 1;
        match parse_line(line) {
            Ok(Line::Blank) | Ok(Line::Comment) => {}
            Ok(Line::Header(v)) => {
                if out.version.is_none() {
                    out.version = Some(v);
                }
            }
            Ok(Line::Record(r)) => out.records.push(r),
            Err(kind) => out.issues.push(ParseIssue {
                line_no,
                kind,
                text: line.to_string(),
            }),
        }
    }
    out
}

/// Parse raw bytes; invalid UTF-8 is replaced (and then usually reported as a
/// malformed line), never an error.
pub fn parse_bytes(input: &[u8]) -> Parsed {
    parse_str(&String::from_utf8_lossy(input))
}

/// Classification of one input line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Blank,
    /// A `#` line such as `#     <size>  <calls> <tag info>`.
    Comment,
    Header(Version),
    Record(Record),
}

/// Parse one line (without its newline).
pub fn parse_line(line: &str) -> Result<Line, ParseErrorKind> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Ok(Line::Blank);
    }
    if trimmed.starts_with('#') {
        return Ok(Line::Comment);
    }
    if let Some(rest) = trimmed.strip_prefix(HEADER_PREFIX) {
        return parse_version(rest.trim())
            .map(Line::Header)
            .ok_or_else(|| ParseErrorKind::BadHeader(rest.trim().to_string()));
    }
    parse_record(trimmed).map(Line::Record)
}

fn parse_version(s: &str) -> Option<Version> {
    let (maj, min) = s.split_once('.').unwrap_or((s, "0"));
    Some(Version {
        major: maj.parse().ok()?,
        minor: min.parse().ok()?,
    })
}

fn parse_record(line: &str) -> Result<Record, ParseErrorKind> {
    let mut tokens = line.split_whitespace();
    let bytes_tok = tokens.next().unwrap_or("");
    let bytes: i64 = bytes_tok
        .parse()
        .map_err(|_| ParseErrorKind::BadBytes(bytes_tok.to_string()))?;
    let calls_tok = tokens.next().ok_or(ParseErrorKind::MissingCalls)?;
    let calls: u64 = calls_tok
        .parse()
        .map_err(|_| ParseErrorKind::BadCalls(calls_tok.to_string()))?;
    let loc = tokens.next().ok_or(ParseErrorKind::MissingLocation)?;
    let (file, line_no) = loc
        .rsplit_once(':')
        .and_then(|(f, l)| Some((f, l.parse::<u32>().ok()?)))
        .filter(|(f, _)| !f.is_empty())
        .ok_or_else(|| ParseErrorKind::BadLocation(loc.to_string()))?;

    let mut module = None;
    let mut func = None;
    let mut extra = Vec::new();
    for tok in tokens {
        if func.is_none() {
            if module.is_none() && tok.len() > 2 && tok.starts_with('[') && tok.ends_with(']') {
                module = Some(tok[1..tok.len() - 1].to_string());
                continue;
            }
            match tok.strip_prefix("func:") {
                Some(name) if !name.is_empty() => func = Some(name.to_string()),
                _ => return Err(ParseErrorKind::UnexpectedField(tok.to_string())),
            }
        } else {
            // Format 2.0: `key:value` pairs after the function name.
            match tok.split_once(':') {
                Some((k, v)) if !k.is_empty() => extra.push((k.to_string(), v.to_string())),
                _ => return Err(ParseErrorKind::UnexpectedField(tok.to_string())),
            }
        }
    }
    let func = func.ok_or(ParseErrorKind::MissingFunc)?;
    Churn::from_extra(&extra).map_err(ParseErrorKind::Churn)?;
    accounted_from_extra(&extra).map_err(ParseErrorKind::Accounted)?;
    Ok(Record {
        bytes,
        calls,
        file: file.to_string(),
        line: line_no,
        module,
        func,
        extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "allocinfo - version: 1.0
#     <size>  <calls> <tag info>
           0        0 arch/x86/kernel/setup.c:1234 func:setup_arch 
      229376       56 mm/slub.c:2345 func:alloc_slab_page 
        8192        2 drivers/foo/bar.c:77 [foo_mod] func:foo_probe 
";

    #[test]
    fn parses_v1_sample() {
        let p = parse_str(SAMPLE);
        assert_eq!(p.version, Some(Version { major: 1, minor: 0 }));
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        assert_eq!(p.records.len(), 3);
        let r = &p.records[2];
        assert_eq!(r.bytes, 8192);
        assert_eq!(r.calls, 2);
        assert_eq!(r.file, "drivers/foo/bar.c");
        assert_eq!(r.line, 77);
        assert_eq!(r.module.as_deref(), Some("foo_mod"));
        assert_eq!(r.func, "foo_probe");
        assert!(p.records[1].module.is_none());
        // Re-formatting reproduces the input byte for byte.
        let again: String = p.records.iter().map(Record::to_line).collect();
        assert!(SAMPLE.ends_with(&again));
    }

    #[test]
    fn parses_v2_extras_and_unknown_pairs() {
        let p = parse_str(
            "allocinfo - version: 2.0\n   12 1 mm/foo.c:12 func:bar accurate:no \n   5 1 mm/x.c:1 [m] func:y accurate:no future:thing\n",
        );
        assert_eq!(p.version, Some(Version { major: 2, minor: 0 }));
        assert!(p.issues.is_empty());
        assert_eq!(p.records[0].extra, vec![("accurate".into(), "no".into())]);
        assert!(!p.records[0].is_accurate());
        assert_eq!(p.records[1].extra_value("future"), Some("thing"));
        assert_eq!(p.records[1].module.as_deref(), Some("m"));
    }

    #[test]
    fn parses_churn_keys() {
        // As allocprof prints them (Documentation/control.md), after
        // accurate:no when the line has it.
        let p = parse_str(
            "allocinfo - version: 2.0\n\
             \x20        640        5 /m/allocprof_test.c:152 [allocprof_test] func:aptest_kmalloc_100 allocated:640/5 freed:512/4 \n\
             \x20     131072        4 mm/x.c:193 func:y accurate:no allocated:98304/3 freed:-32768/-1 \n\
             \x20       4096        1 mm/z.c:1 func:z accurate:no \n",
        );
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        let churn: Vec<Option<Churn>> = p.records.iter().map(Record::churn).collect();
        assert_eq!(
            churn,
            vec![
                Some(Churn {
                    allocs: 5,
                    alloc_bytes: 640,
                    frees: 4,
                    free_bytes: 512
                }),
                Some(Churn {
                    allocs: 3,
                    alloc_bytes: 98304,
                    frees: -1,
                    free_bytes: -32768
                }),
                None,
            ]
        );
        assert!(!p.records[1].is_accurate());
        assert_eq!(p.records[0].extra_value("allocated"), Some("640/5"));
    }

    #[test]
    fn malformed_churn_keys_are_malformed_lines() {
        let p = parse_str(
            "allocinfo - version: 2.0\n\
             1 1 a.c:1 func:f allocated:640 freed:0/0\n\
             1 1 a.c:2 func:f allocated:1/1\n\
             1 1 a.c:3 func:f allocated:1/1 freed:1/1 freed:1/1\n\
             1 1 a.c:4 func:f allocated:-1/1 freed:0/0\n\
             1 1 a.c:5 func:f allocated:1/1 freed:0/0\n",
        );
        let got: Vec<String> = p.issues.iter().map(|i| i.to_string()).collect();
        assert_eq!(
            got,
            vec![
                "line 2: malformed line (invalid allocated:640, expected allocated:BYTES/CALLS): \"1 1 a.c:1 func:f allocated:640 freed:0/0\"",
                "line 3: malformed line (allocated: without freed:): \"1 1 a.c:2 func:f allocated:1/1\"",
                "line 4: malformed line (freed: given twice): \"1 1 a.c:3 func:f allocated:1/1 freed:1/1 freed:1/1\"",
                "line 5: malformed line (invalid allocated:-1/1, expected allocated:BYTES/CALLS): \"1 1 a.c:4 func:f allocated:-1/1 freed:0/0\"",
            ]
        );
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.records[0].line, 5);
    }

    #[test]
    fn parses_the_accounted_key() {
        // The lines of the test module's two sites with m on a 7.3 guest,
        // as allocprof's Documentation/control.md shows them (the capture
        // of guest-allocprof-7.3-memcgs.txt), and after the churn keys.
        let p = parse_str(
            "allocinfo - version: 2.0\n\
             \x20    1740800      425 modules/allocprof_test.c:390 [allocprof_test] func:aptest_pages_account accounted:1720320 \n\
             \x20       5120       40 modules/allocprof_test.c:385 [allocprof_test] func:aptest_kmalloc_account accounted:5120 \n\
             \x20        640        5 m.c:1 func:f allocated:640/5 freed:512/4 accounted:18446744073709551615 \n\
             \x20        640        5 m.c:2 func:f \n",
        );
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        let got: Vec<_> = p.records.iter().map(Record::accounted).collect();
        assert_eq!(got, [Some(1720320), Some(5120), Some(u64::MAX), None]);
        assert!(p.records[2].churn().is_some());
        for r in &p.records {
            assert_eq!(parse_line(&r.to_line()), Ok(Line::Record(r.clone())));
        }
        let p = parse_str(
            "1 1 a.c:1 func:f accounted:-1\n\
             1 1 a.c:2 func:f accounted:1 accounted:1\n\
             1 1 a.c:3 func:f accounted:\n\
             1 1 a.c:4 func:f accounted:18446744073709551616\n\
             1 1 a.c:5 func:f accounted:0x10\n\
             1 1 a.c:6 func:f accounted:0\n",
        );
        let got: Vec<String> = p.issues.iter().map(|i| i.to_string()).collect();
        assert_eq!(
            got,
            [
                "line 1: malformed line (invalid accounted:-1, expected accounted:BYTES): \"1 1 a.c:1 func:f accounted:-1\"",
                "line 2: malformed line (accounted: given twice): \"1 1 a.c:2 func:f accounted:1 accounted:1\"",
                "line 3: malformed line (invalid accounted:, expected accounted:BYTES): \"1 1 a.c:3 func:f accounted:\"",
                "line 4: malformed line (invalid accounted:18446744073709551616, expected accounted:BYTES): \"1 1 a.c:4 func:f accounted:18446744073709551616\"",
                "line 5: malformed line (invalid accounted:0x10, expected accounted:BYTES): \"1 1 a.c:5 func:f accounted:0x10\"",
            ]
        );
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.records[0].accounted(), Some(0));
    }

    #[test]
    fn headers_anywhere_or_missing() {
        let p = parse_str(
            "   1 1 a/b.c:1 func:f \nallocinfo - version: 1.0\n# x\n   2 2 a/b.c:2 func:g\n",
        );
        assert_eq!(p.records.len(), 2);
        assert_eq!(p.version.unwrap().to_string(), "1.0");
        let p = parse_str("   -5 1 a/b.c:1 func:f\n");
        assert_eq!(p.version, None);
        assert_eq!(p.records[0].bytes, -5);
    }

    #[test]
    fn reports_malformed_lines_with_numbers() {
        let p = parse_str(
            "x 1 a.c:1 func:f\n1\n1 -1 a.c:1 func:f\n1 1\n1 1 a.c func:f\n1 1 a.c:1\n1 1 a.c:1 [m]\n1 1 a.c:1 foo\n1 1 a.c:1 func:f junk\nallocinfo - version: two\n1 1 :5 func:f\n",
        );
        let got: Vec<(usize, ParseErrorKind)> = p
            .issues
            .iter()
            .map(|i| (i.line_no, i.kind.clone()))
            .collect();
        use ParseErrorKind::*;
        assert_eq!(
            got,
            vec![
                (1, BadBytes("x".into())),
                (2, MissingCalls),
                (3, BadCalls("-1".into())),
                (4, MissingLocation),
                (5, BadLocation("a.c".into())),
                (6, MissingFunc),
                (7, MissingFunc),
                (8, UnexpectedField("foo".into())),
                (9, UnexpectedField("junk".into())),
                (10, BadHeader("two".into())),
                (11, BadLocation(":5".into())),
            ]
        );
        assert!(p.records.is_empty());
        assert_eq!(
            p.issues[0].to_string(),
            "line 1: malformed line (invalid byte count \"x\"): \"x 1 a.c:1 func:f\""
        );
    }

    #[test]
    fn tolerates_crlf_and_invalid_utf8() {
        let p = parse_bytes(b"allocinfo - version: 1.0\r\n  1 1 a.c:1 func:f \r\n\xff\xfe\n");
        assert_eq!(p.records.len(), 1);
        assert_eq!(p.issues.len(), 1);
        assert_eq!(p.issues[0].line_no, 3);
    }
}
