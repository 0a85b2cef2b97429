//! Parser for allocprof's `/sys/kernel/debug/allocprof/stacks`: the live
//! allocations of call sites with the `s` flag, per call chain.
//!
//! ```text
//! # allocprof stacks: live allocations of call sites with the s flag, by call chain, biggest first
//! # tracked: 12 allocations in 2 chains; table: ...
//!         2560        5 /root/allocprof/selftests/modules/allocprof_test.c:351 [allocprof_test] func:aptest_helper pid:241 comm:control_test
//!     __kmalloc_cache_noprof+0x1a2/0x3c0
//!     aptest_helper+0x1d/0x40 [allocprof_test]
//!
//! ```
//!
//! A record is a call-site line in `/proc/allocinfo`'s grammar followed by
//! ` pid:N comm:TEXT` (TEXT is the rest of the line, a task name that may
//! contain spaces, escaped: see [`escape_comm`]), then its frames (innermost first, the kernel's `%pS`
//! text), each indented by exactly four spaces, then an empty line. A record
//! may have no frames, and the last one may lack its empty line. `#` lines
//! are comments.
//!
//! Like [`crate::parse`], the parser never panics: a malformed line is
//! reported with its number and what was expected. A record whose first line
//! is malformed is skipped with its frames.

use crate::debugfs::{
    comment_line, escape_octal, is_blank, keyed, need_field, parse_site, unescape_octal, Bad,
    Expected, Found, Malformed,
};
use crate::record::Record;

/// The indentation of a frame line.
pub const FRAME_INDENT: &str = "    ";

/// One record: the live allocations of one call site made through one call chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackRecord {
    /// The call site, with the bytes and calls of this chain (no `extra` pairs).
    pub site: Record,
    /// The task that made the most recent allocation through this chain.
    pub pid: u32,
    /// Its name (`comm`) as the kernel escaped it (see [`escape_comm`]);
    /// may contain spaces. [`StackRecord::comm_bytes`] gives the name itself.
    pub comm: String,
    /// The call chain, innermost frame first, as the kernel printed it.
    pub frames: Vec<String>,
}

impl StackRecord {
    /// The record as the kernel prints it: its line, its frames and the empty line.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{} pid:{} comm:{}\n",
            self.site.site_prefix(),
            self.pid,
            self.comm
        );
        for f in &self.frames {
            s.push_str(FRAME_INDENT);
            s.push_str(f);
            s.push('\n');
        }
        s.push('\n');
        s
    }

    /// The task's name itself: `comm` with its escapes undone.
    pub fn comm_bytes(&self) -> Vec<u8> {
        unescape_comm(&self.comm).unwrap_or_else(|| self.comm.clone().into_bytes())
    }

    /// The frames joined as `inner <- caller <- ...`.
    pub fn chain_string(&self) -> String {
        self.frames.join(" <- ")
    }
}

/// A task name as the kernel writes it into the stacks file: each byte
/// below 0x20, from 0x7f on, and the backslash as a backslash and three
/// octal digits (the kernel's `seq_escape()` form: a newline is `\012`),
/// every other byte as it is. A task may name itself anything
/// (`prctl(PR_SET_NAME)`), newlines included.
pub fn escape_comm(name: &[u8]) -> String {
    escape_octal(name, 0x20..0x7f)
}

/// The name [`escape_comm`] escaped, or `None` if `text` is not in that
/// form: a byte it would have escaped, or a backslash without three octal
/// digits (at most `\377`) after it.
pub fn unescape_comm(text: &str) -> Option<Vec<u8>> {
    unescape_octal(text, 0x20..0x7f)
}

/// The result of parsing a stacks file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedStacks {
    /// Records in file order.
    pub records: Vec<StackRecord>,
    /// The first `# tracked:` line, verbatim.
    pub stats: Option<String>,
    /// Malformed lines, in file order.
    pub issues: Vec<Malformed>,
}

/// Parse the first line of a record.
fn parse_record_line(line: &str) -> Result<StackRecord, Bad> {
    let (site, rest) = parse_site(line)?;
    let (tok, rest) = need_field(rest, Expected::Pid)?;
    let pid: u32 = keyed(tok, "pid", Expected::Pid)?
        .parse()
        .map_err(|_| (Expected::Pid, Found::Field(tok.to_string())))?;
    let rest = rest.trim_start_matches(is_blank);
    let comm = match rest.strip_prefix("comm:") {
        Some(c) => c,
        None => {
            let found = match rest.split(is_blank).next() {
                Some(t) if !t.is_empty() => Found::Field(t.to_string()),
                _ => Found::EndOfLine,
            };
            return Err((Expected::Comm, found));
        }
    };
    // A name not in the kernel's escaped form is not the kernel's.
    if unescape_comm(comm).is_none() {
        return Err((Expected::Comm, Found::Field(format!("comm:{comm}"))));
    }
    Ok(StackRecord {
        site,
        pid,
        comm: comm.to_string(),
        frames: vec![],
    })
}

/// The frame text of a line indented by exactly four spaces.
fn frame_text(line: &str) -> Option<&str> {
    line.strip_prefix(FRAME_INDENT)
        .filter(|f| f.starts_with(|c: char| !is_blank(c)))
        .map(str::trim_end)
}

/// Does a line that did not parse look like a record line (rather than a
/// misplaced or mis-indented frame)?
fn looks_like_record_line(line: &str) -> bool {
    line.trim_start_matches(is_blank)
        .starts_with(|c: char| c.is_ascii_digit() || c == '-')
}

enum State {
    /// Between records: a record line, comments or empty lines.
    Between,
    /// In a record: frames until an empty line. `None`: the record's first
    /// line was malformed, its frames are skipped.
    InRecord(Option<StackRecord>),
}

/// Parse the text of a stacks file.
pub fn parse_stacks(input: &str) -> ParsedStacks {
    let mut out = ParsedStacks::default();
    let mut state = State::Between;
    for (i, line) in input.lines().enumerate() {
        let line_no = i + 1;
        let mut issue = |bad: Bad| out.issues.push(Malformed::at(line_no, line, bad));
        if line.trim().is_empty() {
            if let State::InRecord(Some(r)) = std::mem::replace(&mut state, State::Between) {
                out.records.push(r);
            }
            continue;
        }
        if comment_line(line, &mut out.stats) {
            continue;
        }
        state = match state {
            State::InRecord(mut cur) => {
                if let Some(f) = frame_text(line) {
                    if let Some(r) = &mut cur {
                        r.frames.push(f.to_string());
                    }
                    State::InRecord(cur)
                } else {
                    match parse_record_line(line) {
                        // The next record, without the empty line before it.
                        Ok(next) => {
                            issue((Expected::FrameOrEmpty, Found::Line));
                            out.records.extend(cur);
                            State::InRecord(Some(next))
                        }
                        Err(e) if looks_like_record_line(line) => {
                            issue(e);
                            out.records.extend(cur);
                            State::InRecord(None)
                        }
                        Err(_) => {
                            issue((Expected::FrameOrEmpty, Found::Line));
                            State::InRecord(cur)
                        }
                    }
                }
            }
            State::Between => match parse_record_line(line) {
                Ok(r) => State::InRecord(Some(r)),
                Err(e) => {
                    if frame_text(line).is_some() && !looks_like_record_line(line) {
                        issue((Expected::RecordLine, Found::Line));
                    } else {
                        issue(e);
                    }
                    State::InRecord(None)
                }
            },
        };
    }
    if let State::InRecord(Some(r)) = state {
        out.records.push(r);
    }
    out
}

/// Parse raw bytes (invalid UTF-8 is replaced, never an error).
pub fn parse_stacks_bytes(input: &[u8]) -> ParsedStacks {
    parse_stacks(&String::from_utf8_lossy(input))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# allocprof stacks: live allocations of call sites with the s flag, by call chain, biggest first
# tracked: 9 allocations in 3 chains; table: 9/16384 allocations, 3/4096 chains, 712704 bytes; not tracked: 0 (table full), 0 (nested)
        2560        5 /root/allocprof/selftests/modules/allocprof_test.c:351 [allocprof_test] func:aptest_helper pid:241 comm:control_test
    __kmalloc_cache_noprof+0x1a2/0x3c0
    aptest_helper+0x1d/0x40 [allocprof_test]
    0xffffffffc0a01234

    12345678        3 mm/slub.c:2425 func:alloc_slab_page pid:1 comm:init

         128        1 mm/x.c:7 func:y pid:0 comm:a b 
    y+0x1/0x2
";

    #[test]
    fn parses_records_frames_and_stats() {
        let p = parse_stacks(SAMPLE);
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        assert_eq!(
            p.stats.as_deref(),
            Some("# tracked: 9 allocations in 3 chains; table: 9/16384 allocations, 3/4096 chains, 712704 bytes; not tracked: 0 (table full), 0 (nested)")
        );
        assert_eq!(p.records.len(), 3);
        let r = &p.records[0];
        assert_eq!((r.site.bytes, r.site.calls, r.site.line), (2560, 5, 351));
        assert_eq!(r.site.module.as_deref(), Some("allocprof_test"));
        assert_eq!((r.pid, r.comm.as_str()), (241, "control_test"));
        assert_eq!(
            r.frames,
            [
                "__kmalloc_cache_noprof+0x1a2/0x3c0",
                "aptest_helper+0x1d/0x40 [allocprof_test]",
                "0xffffffffc0a01234"
            ]
        );
        // Eight digits: four spaces of padding, still a record line.
        let r = &p.records[1];
        assert_eq!((r.site.bytes, r.site.module.as_deref()), (12345678, None));
        assert!(r.frames.is_empty());
        // The rest of the line, trailing space included; no final empty line.
        let r = &p.records[2];
        assert_eq!((r.pid, r.comm.as_str(), r.frames.len()), (0, "a b ", 1));
        // Formatting gives the data lines back.
        let again: String = p.records.iter().map(StackRecord::to_text).collect();
        assert!(format!("{SAMPLE}\n").ends_with(&again), "{again}");
    }

    #[test]
    fn task_names_escaped_and_back() {
        // What names_test names its task: a newline, then a would-be frame.
        let name = b"n\n    @\t\\\x1b\x7f\xc3";
        let esc = escape_comm(name);
        assert_eq!(esc, "n\\012    @\\011\\134\\033\\177\\303");
        assert_eq!(unescape_comm(&esc).as_deref(), Some(&name[..]));
        // Every byte but NUL, one at a time and all together.
        let all: Vec<u8> = (1..=255).collect();
        for b in &all {
            assert_eq!(unescape_comm(&escape_comm(&[*b])), Some(vec![*b]), "{b}");
        }
        assert_eq!(unescape_comm(&escape_comm(&all)), Some(all));
        // Not the kernel's form.
        for bad in [
            "a\\", "a\\01", "\\400", "\\08x", "\\x41", "a\tb", "\u{7f}", "\u{e9}",
        ] {
            assert_eq!(unescape_comm(bad), None, "{bad:?}");
        }

        // The record's line parses, shows the name escaped and gives it back.
        let text = format!(
            "         256        2 a.c:133 [m] func:f pid:112 comm:{esc}\n    f+0x59/0x70 [m]\n\n"
        );
        let p = parse_stacks(&text);
        assert!(p.issues.is_empty(), "{:?}", p.issues);
        assert_eq!(p.records.len(), 1);
        let r = &p.records[0];
        assert_eq!((r.pid, r.comm.as_str()), (112, esc.as_str()));
        assert_eq!(r.comm_bytes(), name);
        assert_eq!(r.frames, ["f+0x59/0x70 [m]"]);
        assert_eq!(r.to_text(), text);

        // The same name written raw (an unfixed kernel): the record's line
        // is malformed, its frames and the injected one are not taken.
        let raw = "   256        2 a.c:133 [m] func:f pid:112 comm:n\\x\n    @\tx\n    f+0x1/0x2\n";
        let p = parse_stacks(raw);
        assert!(p.records.is_empty(), "{:?}", p.records);
        assert_eq!(
            p.issues
                .iter()
                .map(|i| (i.line_no, i.expected, i.found.clone()))
                .collect::<Vec<_>>(),
            [(1, Expected::Comm, Found::Field("comm:n\\x".into()))]
        );
    }

    #[test]
    fn reports_what_was_expected() {
        let text = "\
   1 1 a.c:1 func:f comm:x
    skipped+0x1/0x2

   2 2 a.c:2 func:g pid:3 comm:t
     five+0x1/0x2
\tnot a frame
   3 3 a.c:3 func:h pid:x comm:t
    skipped+0x1/0x2
   4 4 a.c:4 func:i pid:4
    skipped+0x1/0x2
   5 5 a.c:5 [m] func:j pid:5 comm:u
    j+0x1/0x2

    orphan+0x1/0x2
  x+0x1/0x2

  x+0x1/0x2
";
        let p = parse_stacks(text);
        let got: Vec<_> = p
            .issues
            .iter()
            .map(|i| (i.line_no, i.expected, i.found.clone()))
            .collect();
        use Expected::*;
        assert_eq!(
            got,
            [
                (1, Pid, Found::Field("comm:x".into())),
                (5, FrameOrEmpty, Found::Line),
                (6, FrameOrEmpty, Found::Line),
                (7, Pid, Found::Field("pid:x".into())),
                (9, Comm, Found::EndOfLine),
                (11, FrameOrEmpty, Found::Line),
                (14, RecordLine, Found::Line),
                (15, FrameOrEmpty, Found::Line),
                (17, Bytes, Found::Field("x+0x1/0x2".into())),
            ]
        );
        // The well-formed records are kept, without the frames of the
        // malformed ones.
        let sites: Vec<_> = p
            .records
            .iter()
            .map(|r| (r.site.line, r.frames.clone()))
            .collect();
        assert_eq!(sites, [(2, vec![]), (5, vec!["j+0x1/0x2".to_string()])]);
        assert_eq!(
            p.issues[1].to_string(),
            "line 5: malformed line (expected a frame indented by exactly four spaces, \
             or the empty line that ends the record): \"     five+0x1/0x2\""
        );
    }
}
