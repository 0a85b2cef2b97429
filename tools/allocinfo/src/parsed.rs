//! What reading an allocinfo file gives, in either of its forms (the
//! kernel's text, [`crate::parse`], or the compact snapshot form,
//! [`crate::compact`]): the records, the format version and the malformed
//! lines.

use crate::record::{AccountedError, ChurnError, Record};
use std::fmt;

/// Format version from the `allocinfo - version: X.Y` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    /// Highest format major version whose layout this parser knows.
    pub const MAX_KNOWN_MAJOR: u32 = 2;
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Why a line could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    #[error("invalid byte count {0:?}")]
    BadBytes(String),
    #[error("missing call count")]
    MissingCalls,
    #[error("invalid call count {0:?}")]
    BadCalls(String),
    #[error("missing call site (file:line)")]
    MissingLocation,
    #[error("invalid call site {0:?}, expected file:line")]
    BadLocation(String),
    #[error("missing func:NAME")]
    MissingFunc,
    #[error("unexpected field {0:?}")]
    UnexpectedField(String),
    #[error("invalid version header {0:?}")]
    BadHeader(String),
    /// The keys `allocated:` and `freed:` of allocprof's `c` flag.
    #[error("{0}")]
    Churn(ChurnError),
    /// The key `accounted:` of allocprof's `m` flag (Linux 7.3).
    #[error("{0}")]
    Accounted(AccountedError),
    /// A line of the compact snapshot form ([`crate::compact`]).
    #[error("invalid compact record: {0}")]
    Compact(String),
}

/// A malformed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseIssue {
    /// 1-based line number.
    pub line_no: usize,
    pub kind: ParseErrorKind,
    /// The offending line (without its newline).
    pub text: String,
}

/// A malformed line as its report shows it: the first 120 characters, and
/// `…` when there are more.
pub(crate) fn shown_text(text: &str) -> String {
    const MAX: usize = 120;
    if text.chars().count() > MAX {
        let mut t: String = text.chars().take(MAX).collect();
        t.push('…');
        t
    } else {
        text.to_string()
    }
}

impl fmt::Display for ParseIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: malformed line ({}): {:?}",
            self.line_no,
            self.kind,
            shown_text(&self.text)
        )
    }
}

/// Result of parsing one allocinfo text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Version from the first valid header line, if any.
    pub version: Option<Version>,
    /// Data records in input order (duplicates are kept).
    pub records: Vec<Record>,
    /// Malformed lines, in input order.
    pub issues: Vec<ParseIssue>,
}
