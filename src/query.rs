// SPDX-License-Identifier: GPL-2.0

//! The control language (dynamic debug's grammar,
//! `Documentation/admin-guide/dynamic-debug-howto.rst`): commands of
//! `[match-spec ...] flags-spec [knob=value ...]`, `;` or a newline between
//! them, and which call sites a command selects.  The control file and
//! `control=` (`control.rs`) and the profiler, for modules that load later
//! (`profiler.rs`), take commands in it.

use kernel::{error::Result, prelude::*};

use crate::faults::Knobs;
use crate::ids::Flags;
use crate::sys::backend::Site;
use crate::text::BStr;

/// The module name of the kernel's own call sites in queries and in the
/// control file (in `/proc/allocinfo` they have none).
pub(crate) const VMLINUX: &[u8] = b"vmlinux";

/// The module name of allocprof's own call sites: its Rust lines, named
/// after the module (`module!` in `allocprof.rs`); `f` is refused there.
pub(crate) const OWN_MODULE: &[u8] = b"allocprof";

/// How a flags-spec changes a call site's flags.
#[derive(Clone, Copy)]
pub(crate) enum Op {
    Add(Flags),
    Remove(Flags),
    Set(Flags),
}

impl Op {
    /// The flags a call site with `old` gets.
    pub(crate) fn apply(self, old: Flags) -> Flags {
        match self {
            Op::Add(f) => old.with(f),
            Op::Remove(f) => old.without(f),
            Op::Set(f) => f,
        }
    }
}

/// One command: which call sites, and what to do with their flags.
pub(crate) struct Query<'a> {
    module: Option<&'a [u8]>,
    file: Option<&'a [u8]>,
    func: Option<&'a [u8]>,
    /// Inclusive.
    lines: Option<(u32, u32)>,
    pub(crate) op: Op,
    /// The knobs of `f` (`faults.rs`): the defaults with those the command
    /// names.
    pub(crate) knobs: Knobs,
}

impl Query<'_> {
    /// Whether the command gives the call sites it selects `f` (then they
    /// take its knobs).
    pub(crate) fn gives_fail(&self) -> bool {
        self.gives().contains(Flags::FAIL)
    }

    /// Whether the command gives the call sites it selects `c` (then their
    /// churn starts again).
    pub(crate) fn gives_churn(&self) -> bool {
        self.gives().contains(Flags::CHURN)
    }

    /// Whether the command may have call sites watched (`s`, `a`, `n`).
    pub(crate) fn gives_watch(&self) -> bool {
        self.gives().watched()
    }

    /// The flags the command may give.
    fn gives(&self) -> Flags {
        match self.op {
            Op::Add(f) | Op::Set(f) => f,
            Op::Remove(_) => Flags::NONE,
        }
    }
}

/// The most commands one write may hold.
const MAX_QUERIES: usize = 64;
/// The most words one command may hold (four match-specs, the flags and
/// the five knobs).
const MAX_WORDS: usize = 14;

/// Splits a command into words at blanks; `"..."` and `'...'` quote a word
/// with blanks; `#` at the start of a word comments out the rest.
fn words(command: &[u8]) -> Result<KVec<&[u8]>> {
    let mut out = KVec::new();
    let mut rest = command;
    loop {
        while let [b, tail @ ..] = rest {
            if !b.is_ascii_whitespace() {
                break;
            }
            rest = tail;
        }
        let word = match rest {
            [] | [b'#', ..] => return Ok(out),
            [q @ (b'"' | b'\''), tail @ ..] => {
                let Some(end) = tail.iter().position(|b| b == q) else {
                    pr_err!("control: unclosed quote in '{}'\n", BStr(rest));
                    return Err(EINVAL);
                };
                rest = &tail[end + 1..];
                &tail[..end]
            }
            _ => {
                let end = rest
                    .iter()
                    .position(|b| b.is_ascii_whitespace())
                    .unwrap_or(rest.len());
                let w = &rest[..end];
                rest = &rest[end..];
                w
            }
        };
        if out.len() == MAX_WORDS {
            pr_err!("control: too many words at '{}'\n", BStr(word));
            return Err(EINVAL);
        }
        out.push(word, GFP_KERNEL)?;
    }
}

/// A line number of a query.
fn line_number(word: &[u8], range: &[u8]) -> Result<u32> {
    core::str::from_utf8(word)
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or_else(|| {
            pr_err!(
                "control: bad line number '{}' in 'line {}'\n",
                BStr(word),
                BStr(range)
            );
            EINVAL
        })
}

/// `N`, `N-M`, `-M` or `N-`, as dynamic debug takes them.
fn line_range(word: &[u8]) -> Result<(u32, u32)> {
    let (first, last) = match word.iter().position(|&b| b == b'-') {
        None => {
            let n = line_number(word, word)?;
            (n, n)
        }
        Some(dash) => {
            let (a, b) = (&word[..dash], &word[dash + 1..]);
            let first = if a.is_empty() {
                0
            } else {
                line_number(a, word)?
            };
            let last = if b.is_empty() {
                u32::MAX
            } else {
                line_number(b, word)?
            };
            (first, last)
        }
    };
    if first > last {
        pr_err!(
            "control: line range '{}' ends before it starts\n",
            BStr(word)
        );
        return Err(EINVAL);
    }
    Ok((first, last))
}

/// A flags-spec: `+`, `-` or `=` and flags from `psanfcm`, or `_` for none.
fn flags_spec(word: &[u8]) -> Result<Op> {
    let (op, letters) = match word {
        [b'+', rest @ ..] => (Op::Add as fn(Flags) -> Op, rest),
        [b'-', rest @ ..] => (Op::Remove as fn(Flags) -> Op, rest),
        [b'=', rest @ ..] => (Op::Set as fn(Flags) -> Op, rest),
        _ => {
            pr_err!(
                "control: '{}' is not a keyword nor flags (+, - or = and flags from psanfcm)\n",
                BStr(word)
            );
            return Err(EINVAL);
        }
    };
    let mut flags = Flags::NONE;
    for &c in letters {
        match Flags::ALL.iter().find(|(_, l)| *l == c) {
            Some(&(f, _)) => flags = flags.with(f),
            None if c == b'_' => {}
            None => {
                pr_err!(
                    "control: unknown flag '{}' in '{}' (flags are p, s, a, n, f, c, m; _ for none)\n",
                    BStr(&[c]),
                    BStr(word)
                );
                return Err(EINVAL);
            }
        }
    }
    if letters.is_empty() && !matches!(word[0], b'=') {
        pr_err!("control: no flags after '{}'\n", BStr(word));
        return Err(EINVAL);
    }
    Ok(op(flags))
}

/// Whether this kernel can do what `op` asks: everything, but `f` where
/// the kernel cannot fail allocations by call site (`allocprof_fail`).
/// `EINVAL`, as for a bad command, with a log line that says why; asked
/// once the whole write parsed, so that the log names a bad command's word
/// whatever comes before it.
#[allow(clippy::unnecessary_wraps)]
fn supported(op: Op) -> Result {
    let _ = op;
    #[cfg(not(allocprof_fail))]
    if matches!(op, Op::Add(f) | Op::Set(f) if f.contains(Flags::FAIL)) {
        pr_err!(
            "control: '{}': this kernel cannot fail allocations by call site (no f)\n",
            OpText(op)
        );
        return Err(EINVAL);
    }
    Ok(())
}

/// A flags-spec as the user wrote it, for the messages of [`supported`].
#[cfg(not(allocprof_fail))]
struct OpText(Op);

#[cfg(not(allocprof_fail))]
impl core::fmt::Display for OpText {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (sign, flags) = match self.0 {
            Op::Add(flags) => ('+', flags),
            Op::Remove(flags) => ('-', flags),
            Op::Set(flags) => ('=', flags),
        };
        write!(f, "{sign}")?;
        if flags == Flags::NONE {
            return write!(f, "_");
        }
        for (flag, letter) in Flags::ALL {
            if flags.contains(flag) {
                write!(f, "{}", char::from(letter))?;
            }
        }
        Ok(())
    }
}

#[cfg(not(allocprof_fail))]
crate::printable!(OpText);

/// Parses one command (its words): match-specs (keyword and value), the
/// flags-spec, then knobs (`name=value`).
fn query<'a>(words: &[&'a [u8]]) -> Result<Query<'a>> {
    let mut q = Query {
        module: None,
        file: None,
        func: None,
        lines: None,
        op: Op::Add(Flags::NONE),
        knobs: Knobs::DEFAULT,
    };
    let mut words = words.iter();
    let flags = loop {
        let Some(&word) = words.next() else {
            return Err(EINVAL);
        };
        let rest = words.as_slice();
        if matches!(word.first(), Some(b'+' | b'-' | b'=')) || rest.is_empty() {
            // The flags, or a last word that is not (its message says so).
            break word;
        }
        let Some(keyword) = keyword(word) else {
            pr_err!(
                "control: unknown keyword '{}' (module, file, func, line)\n",
                BStr(word)
            );
            return Err(EINVAL);
        };
        let value = rest[0];
        words.next();
        if words.as_slice().is_empty() {
            // The last word is the flags-spec: none, or no value before it.
            flags_spec(value)?;
            pr_err!(
                "control: '{}' needs a value before the flags '{}'\n",
                BStr(keyword),
                BStr(value)
            );
            return Err(EINVAL);
        }
        let set = match keyword {
            b"module" => q.module.replace(value).is_none(),
            b"file" => q.file.replace(value).is_none(),
            b"func" => q.func.replace(value).is_none(),
            _ => q.lines.replace(line_range(value)?).is_none(),
        };
        if !set {
            pr_err!("control: '{}' given twice in one command\n", BStr(keyword));
            return Err(EINVAL);
        }
    };
    q.op = flags_spec(flags)?;
    let mut given = [false; Knobs::KNOBS.len()];
    for &knob in words {
        let Some(eq) = knob.iter().position(|&b| b == b'=') else {
            pr_err!(
                "control: '{}' after the flags is not a knob (name=value; {})\n",
                BStr(knob),
                Knobs::NAMES
            );
            return Err(EINVAL);
        };
        let (name, value) = (&knob[..eq], &knob[eq + 1..]);
        let i = q.knobs.set(name, value)?;
        if given[i] {
            pr_err!("control: '{}' given twice in one command\n", BStr(name));
            return Err(EINVAL);
        }
        given[i] = true;
    }
    if given.contains(&true) && !q.gives_fail() {
        pr_err!(
            "control: knobs are for f: '{}' does not give it (+f or =...f)\n",
            BStr(flags)
        );
        return Err(EINVAL);
    }
    Ok(q)
}

/// The keyword `word` is, if it is one.
fn keyword(word: &[u8]) -> Option<&[u8]> {
    matches!(word, b"module" | b"file" | b"func" | b"line").then_some(word)
}

/// Parses a whole write: every command, before anything is changed.
pub(crate) fn queries(input: &[u8]) -> Result<KVec<Query<'_>>> {
    let mut out = KVec::new();
    for command in input.split(|&b| b == b';' || b == b'\n') {
        let words = words(command)?;
        if words.is_empty() {
            continue;
        }
        if out.len() == MAX_QUERIES {
            pr_err!("control: more than {} commands in one write\n", MAX_QUERIES);
            return Err(EINVAL);
        }
        out.push(query(&words)?, GFP_KERNEL)?;
    }
    for q in out.iter() {
        supported(q.op)?;
    }
    Ok(out)
}

/// The commands of `control=`, parsed once at load: a hook applies them to
/// a Rust line the first time it sees the line (`Profiler::settle`), where
/// nothing may be allocated.
pub(crate) struct LoadCommands {
    /// Borrows `text`'s buffer (hence `'static` here, shortened when handed
    /// out); declared first so that it is dropped first.
    queries: KVec<Query<'static>>,
    _text: KVec<u8>,
}

impl LoadCommands {
    /// The commands of `text` (already checked by the parameter's parser:
    /// an error here is a memory shortage or a bug).
    pub(crate) fn new(text: KVec<u8>) -> Result<Self> {
        // The slice is `text`'s heap buffer, which does not move when the
        // vector does; `text` is never changed after this and is dropped
        // after `queries` (field order, as `_text`).
        // SAFETY: So the buffer outlives every borrow of it in `queries`.
        let all: &'static [u8] = unsafe { core::slice::from_raw_parts(text.as_ptr(), text.len()) };
        Ok(Self {
            queries: queries(all)?,
            _text: text,
        })
    }

    /// The commands, in order.
    pub(crate) fn queries(&self) -> &[Query<'_>] {
        &self.queries
    }

    /// Whether some command gives `f`.
    pub(crate) fn gives_fail(&self) -> bool {
        self.queries.iter().any(Query::gives_fail)
    }

    /// Whether there is no command.
    pub(crate) fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }
}

/// Shell-style match of `name` with `pattern` (`*` any bytes, `?` one), as
/// dynamic debug's `match_wildcard()`: iterative, backtracking only to the
/// latest `*`.  Its work is bounded by the name, whatever the pattern's
/// length (up to the 4095 bytes of a write): `n` never goes back past the
/// latest star's start, which only moves forward (at most `name.len()`
/// times), and each retry matches at most `name.len()` bytes; a run of
/// stars is passed over once, and the loop ends when the name does.  So at
/// most about `pattern.len() + name.len()²` steps per call site.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                // A run of stars matches what one does.
                while pattern.get(p + 1) == Some(&b'*') {
                    p += 1;
                }
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// The part of a path after its last `/`.
fn basename(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

impl Query<'_> {
    /// Whether call site `site` is one this query selects.  A file matches
    /// by its whole path or its base name, as in dynamic debug.
    pub(crate) fn matches(&self, site: &Site<'_>) -> bool {
        let module = site.module.unwrap_or(VMLINUX);
        // `iter().all()`: true for a match-spec not given (`is_none_or()`
        // is newer than 6.12's minimum Rust).
        self.module.iter().all(|m| glob(m, module))
            && self
                .file
                .iter()
                .all(|f| glob(f, site.file) || glob(f, basename(site.file)))
            && self.func.iter().all(|f| glob(f, site.function))
            && self
                .lines
                .iter()
                .all(|&(a, b)| (a..=b).contains(&site.line))
    }
}

/// What commands give a call site beside its flags.
#[derive(Clone, Copy)]
pub(crate) struct Given {
    /// The knobs of the last command that gives it `f`.
    pub(crate) knobs: Option<Knobs>,
    /// Some command gives it `c`: its churn starts again.
    pub(crate) churn: bool,
}

impl Given {
    /// Nothing given.
    pub(crate) const NONE: Given = Given {
        knobs: None,
        churn: false,
    };

    /// Whether anything is given: the call site is changed even if its
    /// flags stay the same.
    pub(crate) fn any(&self) -> bool {
        self.knobs.is_some() || self.churn
    }
}

/// The flags a call site with `old` flags gets from `queries`, applied in
/// order, and what else they give it.
pub(crate) fn final_flags(queries: &[Query<'_>], site: &Site<'_>, old: Flags) -> (Flags, Given) {
    let mut flags = old;
    let mut given = Given::NONE;
    for q in queries.iter().filter(|q| q.matches(site)) {
        flags = q.op.apply(flags);
        if q.gives_fail() {
            given.knobs = Some(q.knobs);
        }
        given.churn |= q.gives_churn();
    }
    (flags, given)
}
