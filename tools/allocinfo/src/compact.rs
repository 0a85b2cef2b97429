//! The compact snapshot form (`allocinfo snap --compact`).
//!
//! A text format, smaller than `/proc/allocinfo` (60 % of it on the
//! project's guest captures, less when files have more call sites), that every
//! read command accepts in place of the kernel's format (the parser detects
//! it by its first line). It keeps the records exactly: their order,
//! duplicates, module, `key:value` pairs and the source format version.
//!
//! ```text
//! allocinfo compact 1 source:2.0
//! # bytes calls file line module func [key:value...]; names: 'NEW, N = name N, = as above; module - = built-in; line +N/-N = delta
//! 229376 56 'mm/slub.c 2345 - 'alloc_slab_page
//! 8192 2 = +10 = 'new_slab
//! 4096 1 0 12 'foo_mod 'foo_probe accurate:no
//! ```
//!
//! * A name is written in full the first time, prefixed with `'`; that adds
//!   it to a string table shared by all columns (numbered from 0). Later
//!   uses are its number, or `=` for "the same as in the record above".
//!   Names never contain white space, so no escaping is needed.
//! * The module is `-` for built-in code.
//! * A line number with a sign is the difference from the line of the
//!   record above (written when the file is the same); without a sign it is
//!   absolute.
//! * `#` lines are comments; blank lines are skipped.

use crate::parsed::{ParseErrorKind, ParseIssue, Parsed, Version};
use crate::record::{accounted_from_extra, Churn, Record};
use std::collections::HashMap;
use std::fmt::Write;

/// First words of the first line.
pub const MAGIC: &str = "allocinfo compact";
/// The version of the compact form written by [`encode`].
pub const FORMAT_VERSION: u32 = 1;

const COMMENT: &str = "# bytes calls file line module func [key:value...]; names: 'NEW, \
                       N = name N, = as above; module - = built-in; line +N/-N = delta";

/// Is `input` in the compact form (does its first line start with [`MAGIC`])?
pub fn is_compact(input: &str) -> bool {
    input
        .strip_prefix(MAGIC)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\n', '\r']))
}

/// Write `records` (in order) in the compact form; `version` is the format
/// version of the text they were read from.
pub fn encode(version: Option<Version>, records: &[Record]) -> String {
    let mut out = format!("{MAGIC} {FORMAT_VERSION}");
    if let Some(v) = version {
        let _ = write!(out, " source:{v}");
    }
    out.push('\n');
    out.push_str(COMMENT);
    out.push('\n');

    let mut table: HashMap<&str, usize> = HashMap::new();
    let mut prev: Option<&Record> = None;
    for r in records {
        let _ = write!(out, "{} {} ", r.bytes, r.calls);
        let same_file = prev.is_some_and(|p| p.file == r.file);
        name_ref(&mut out, &mut table, &r.file, prev.map(|p| p.file.as_str()));
        if same_file {
            let d = i64::from(r.line) - i64::from(prev.map_or(0, |p| p.line));
            let _ = write!(out, " {d:+} ");
        } else {
            let _ = write!(out, " {} ", r.line);
        }
        match &r.module {
            None => out.push('-'),
            Some(m) => name_ref(
                &mut out,
                &mut table,
                m,
                prev.and_then(|p| p.module.as_deref()),
            ),
        }
        out.push(' ');
        name_ref(&mut out, &mut table, &r.func, prev.map(|p| p.func.as_str()));
        for (k, v) in &r.extra {
            let _ = write!(out, " {k}:{v}");
        }
        out.push('\n');
        prev = Some(r);
    }
    out
}

fn name_ref<'a>(
    out: &mut String,
    table: &mut HashMap<&'a str, usize>,
    name: &'a str,
    prev: Option<&str>,
) {
    if prev == Some(name) {
        out.push('=');
    } else if let Some(i) = table.get(name) {
        let _ = write!(out, "{i}");
    } else {
        table.insert(name, table.len());
        out.push('\'');
        out.push_str(name);
    }
}

/// Read the compact form. Like the text parser, it never panics: a
/// malformed line is reported with its line number and skipped.
pub fn decode(input: &str) -> Parsed {
    let mut out = Parsed::default();
    let mut table: Vec<String> = Vec::new();
    let mut prev: Option<Record> = None;
    for (i, line) in input.lines().enumerate() {
        let line_no = i + 1;
        let text = line.trim();
        if line_no == 1 {
            match parse_header(text) {
                Ok(v) => out.version = v,
                Err(kind) => out.issues.push(ParseIssue {
                    line_no,
                    kind,
                    text: line.to_string(),
                }),
            }
            continue;
        }
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        match decode_record(text, &mut table, prev.as_ref()) {
            Ok(r) => {
                out.records.push(r.clone());
                prev = Some(r);
            }
            Err(msg) => out.issues.push(ParseIssue {
                line_no,
                kind: ParseErrorKind::Compact(msg),
                text: line.to_string(),
            }),
        }
    }
    out
}

fn parse_header(line: &str) -> Result<Option<Version>, ParseErrorKind> {
    let bad = || ParseErrorKind::BadHeader(line.to_string());
    let mut words = line.strip_prefix(MAGIC).ok_or_else(bad)?.split_whitespace();
    let format: u32 = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
    if format != FORMAT_VERSION {
        return Err(ParseErrorKind::Compact(format!(
            "compact format version {format} is not known (this tool reads {FORMAT_VERSION})"
        )));
    }
    let mut version = None;
    for w in words {
        if let Some(v) = w.strip_prefix("source:") {
            let (maj, min) = v.split_once('.').ok_or_else(bad)?;
            version = Some(Version {
                major: maj.parse().map_err(|_| bad())?,
                minor: min.parse().map_err(|_| bad())?,
            });
        }
    }
    Ok(version)
}

fn decode_record(
    line: &str,
    table: &mut Vec<String>,
    prev: Option<&Record>,
) -> Result<Record, String> {
    let mut t = line.split_whitespace();
    let mut field = |what: &str| t.next().ok_or(format!("missing {what}"));
    let bytes_tok = field("byte count")?;
    let bytes: i64 = bytes_tok
        .parse()
        .map_err(|_| format!("invalid byte count {bytes_tok:?}"))?;
    let calls_tok = field("call count")?;
    let calls: u64 = calls_tok
        .parse()
        .map_err(|_| format!("invalid call count {calls_tok:?}"))?;
    let file = resolve(field("file")?, table, prev.map(|p| p.file.as_str()))?;
    let line_tok = field("line")?;
    let line_no = if line_tok.starts_with(['+', '-']) {
        let d: i64 = line_tok
            .parse()
            .map_err(|_| format!("invalid line delta {line_tok:?}"))?;
        let base = prev.ok_or("line delta without a record above")?.line;
        u32::try_from(i64::from(base) + d).map_err(|_| format!("line delta {d} out of range"))?
    } else {
        line_tok
            .parse()
            .map_err(|_| format!("invalid line {line_tok:?}"))?
    };
    let module = match field("module")? {
        "-" => None,
        m => Some(resolve(m, table, prev.and_then(|p| p.module.as_deref()))?),
    };
    let func = resolve(field("function")?, table, prev.map(|p| p.func.as_str()))?;
    let extra = t
        .map(|kv| match kv.split_once(':') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("unexpected field {kv:?}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Churn::from_extra(&extra).map_err(|e| e.to_string())?;
    accounted_from_extra(&extra).map_err(|e| e.to_string())?;
    Ok(Record {
        bytes,
        calls,
        file,
        line: line_no,
        module,
        func,
        extra,
    })
}

fn resolve(tok: &str, table: &mut Vec<String>, prev: Option<&str>) -> Result<String, String> {
    if let Some(name) = tok.strip_prefix('\'') {
        if name.is_empty() {
            return Err("empty name".into());
        }
        table.push(name.to_string());
        return Ok(name.to_string());
    }
    if tok == "=" {
        return prev
            .map(str::to_string)
            .ok_or_else(|| "'=' without that name in the record above".into());
    }
    let i: usize = tok
        .parse()
        .map_err(|_| format!("invalid name reference {tok:?}"))?;
    table
        .get(i)
        .cloned()
        .ok_or_else(|| format!("name {i} is not defined yet"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_str;

    const TEXT: &str = "allocinfo - version: 2.0
#     <size>  <calls> <tag info>
      229376       56 mm/slub.c:2345 func:alloc_slab_page 
        8192        2 mm/slub.c:2355 func:new_slab 
        4096        1 mm/slub.c:12 [foo_mod] func:alloc_slab_page accurate:no 
       -4096        1 drivers/foo/bar.c:77 [foo_mod] func:foo_probe x:1:2 
      229376       56 mm/slub.c:2345 func:alloc_slab_page 
         640        5 mm/slub.c:2345 func:new_slab allocated:640/5 freed:512/4 
";

    #[test]
    fn round_trip_keeps_everything() {
        let p = parse_str(TEXT);
        assert!(p.issues.is_empty());
        let c = encode(p.version, &p.records);
        assert!(is_compact(&c));
        assert_eq!(
            c.lines().skip(2).collect::<Vec<_>>(),
            [
                "229376 56 'mm/slub.c 2345 - 'alloc_slab_page",
                "8192 2 = +10 - 'new_slab",
                "4096 1 = -2343 'foo_mod 1 accurate:no",
                "-4096 1 'drivers/foo/bar.c 77 = 'foo_probe x:1:2",
                "229376 56 0 2345 - 1",
                "640 5 = +0 - 2 allocated:640/5 freed:512/4",
            ]
        );
        let back = decode(&c);
        assert_eq!(back, p);
        assert_eq!(back.records[5].churn().map(|c| c.frees), Some(4));
        // The parser's entry point recognises the form.
        assert_eq!(parse_str(&c), p);
        assert_eq!(decode(&encode(None, &[])), Parsed::default());
    }

    #[test]
    fn detection() {
        assert!(is_compact("allocinfo compact 1\n"));
        assert!(is_compact("allocinfo compact"));
        assert!(!is_compact("allocinfo compactor 1\n"));
        assert!(!is_compact(TEXT));
        assert!(!is_compact(" allocinfo compact 1\n"));
    }

    #[test]
    fn malformed_lines_are_reported_with_numbers() {
        let p = decode(
            "allocinfo compact 1 source:1.0\n# c\n\n1 1 'a.c 1 - 'f\nx 1 = +1 - =\n1 1 = +1 - 7\n\
             1 1 = 5 - 'g junk\n1 1 =\n1 1 0 -9 - 1\n1 1 0 1 '\n1 1 0 1 - 'h allocated:1/1\n",
        );
        assert_eq!(p.version, Some(Version { major: 1, minor: 0 }));
        assert_eq!(p.records.len(), 1);
        let got: Vec<(usize, String)> = p
            .issues
            .iter()
            .map(|i| (i.line_no, i.kind.to_string()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    5,
                    "invalid compact record: invalid byte count \"x\"".to_string()
                ),
                (
                    6,
                    "invalid compact record: name 7 is not defined yet".into()
                ),
                (
                    7,
                    "invalid compact record: unexpected field \"junk\"".into()
                ),
                (8, "invalid compact record: missing line".into()),
                (
                    9,
                    "invalid compact record: line delta -9 out of range".into()
                ),
                (10, "invalid compact record: empty name".into()),
                (
                    11,
                    "invalid compact record: allocated: without freed:".into()
                ),
            ]
        );
        let p = decode("allocinfo compact 2\n1 1 'a 1 - 'f\n");
        assert_eq!(p.issues[0].line_no, 1);
        assert!(p.issues[0].kind.to_string().contains("version 2"));
        let p = decode("allocinfo compact x\n");
        assert!(matches!(p.issues[0].kind, ParseErrorKind::BadHeader(_)));
    }
}
