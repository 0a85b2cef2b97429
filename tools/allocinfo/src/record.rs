//! The data model: one `/proc/allocinfo` call site ("record") and its identity.

use std::fmt;

/// One data line of `/proc/allocinfo`: the memory currently allocated from
/// one allocation call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Bytes currently allocated from this site. Signed: broken accounting
    /// can make it negative.
    pub bytes: i64,
    /// Number of allocations from this site that are currently live.
    pub calls: u64,
    /// Source file of the call site, relative to the kernel source tree.
    pub file: String,
    /// Source line of the call site.
    pub line: u32,
    /// Loadable module the site belongs to; `None` for built-in code.
    pub module: Option<String>,
    /// Function containing the call site.
    pub func: String,
    /// Additional `key:value` pairs (allocinfo format 2.0), e.g. `accurate:no`,
    /// in the order they appeared.
    pub extra: Vec<(String, String)>,
}

/// Label used for built-in (non-module) call sites in tables and groupings.
pub const BUILTIN_LABEL: &str = "(built-in)";

/// The format 2.0 key of a call site's allocations since allocprof's `c`
/// flag was set: `allocated:BYTES/CALLS`.
pub const ALLOCATED_KEY: &str = "allocated";
/// The format 2.0 key of a call site's frees since the `c` flag was set:
/// `freed:BYTES/CALLS`.
pub const FREED_KEY: &str = "freed";

/// The format 2.0 key of the live bytes of a call site with allocprof's `m`
/// flag that asked to be charged to a memory cgroup (`__GFP_ACCOUNT`, a
/// cgroup other than the root; Linux 7.3 only): `accounted:BYTES`.
pub const ACCOUNTED_KEY: &str = "accounted";

/// Why a line's `accounted:` key is not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccountedError {
    #[error("invalid accounted:{0}, expected accounted:BYTES")]
    BadValue(String),
    #[error("accounted: given twice")]
    Twice,
}

/// The `accounted:` figure of the `extra` pairs of a line: `None` without
/// the key, an error when it is not decimal digits (an unsigned 64-bit
/// number, as allocprof prints it) or given twice.
pub fn accounted_from_extra(extra: &[(String, String)]) -> Result<Option<u64>, AccountedError> {
    let mut values = extra
        .iter()
        .filter(|(k, _)| k == ACCOUNTED_KEY)
        .map(|(_, v)| v);
    let Some(v) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(AccountedError::Twice);
    }
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AccountedError::BadValue(v.clone()));
    }
    v.parse()
        .map(Some)
        .map_err(|_| AccountedError::BadValue(v.clone()))
}

/// A call site's churn: its allocations and frees since allocprof's `c`
/// flag was set on it, from the keys `allocated:BYTES/CALLS` and
/// `freed:BYTES/CALLS` of its format 2.0 line. The frees are signed, as
/// allocprof prints them: it derives them from the change in the live
/// figures, and a reading beside an allocation under way may be one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Churn {
    /// Allocations since the flag was set.
    pub allocs: u64,
    /// Their bytes.
    pub alloc_bytes: u64,
    /// Frees since the flag was set.
    pub frees: i64,
    /// Their bytes.
    pub free_bytes: i64,
}

/// Why a line's churn keys are not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChurnError {
    #[error("invalid {key}:{value}, expected {key}:BYTES/CALLS")]
    BadValue { key: &'static str, value: String },
    #[error("{0}: given twice")]
    Twice(&'static str),
    #[error("{has}: without {lacks}:")]
    Unpaired {
        has: &'static str,
        lacks: &'static str,
    },
}

impl Churn {
    /// The churn of the `extra` pairs of a line: `None` without the keys,
    /// an error when they are malformed, given twice or one without the
    /// other (allocprof prints both or neither).
    pub fn from_extra(extra: &[(String, String)]) -> Result<Option<Churn>, ChurnError> {
        fn one<'a>(
            extra: &'a [(String, String)],
            key: &'static str,
        ) -> Result<Option<&'a str>, ChurnError> {
            let mut values = extra.iter().filter(|(k, _)| k == key).map(|(_, v)| v);
            let first = values.next();
            if values.next().is_some() {
                return Err(ChurnError::Twice(key));
            }
            Ok(first.map(String::as_str))
        }
        fn pair<T: std::str::FromStr>(key: &'static str, v: &str) -> Result<(T, T), ChurnError> {
            v.split_once('/')
                .and_then(|(b, c)| Some((b.parse().ok()?, c.parse().ok()?)))
                .ok_or_else(|| ChurnError::BadValue {
                    key,
                    value: v.to_string(),
                })
        }
        let allocated = one(extra, ALLOCATED_KEY)?;
        let freed = one(extra, FREED_KEY)?;
        match (allocated, freed) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(ChurnError::Unpaired {
                has: ALLOCATED_KEY,
                lacks: FREED_KEY,
            }),
            (None, Some(_)) => Err(ChurnError::Unpaired {
                has: FREED_KEY,
                lacks: ALLOCATED_KEY,
            }),
            (Some(a), Some(f)) => {
                let (alloc_bytes, allocs) = pair::<u64>(ALLOCATED_KEY, a)?;
                let (free_bytes, frees) = pair::<i64>(FREED_KEY, f)?;
                Ok(Some(Churn {
                    allocs,
                    alloc_bytes,
                    frees,
                    free_bytes,
                }))
            }
        }
    }

    /// `allocated:BYTES/CALLS` and `freed:BYTES/CALLS`, as allocprof prints them.
    pub fn to_extra(&self) -> [(String, String); 2] {
        [
            (
                ALLOCATED_KEY.to_string(),
                format!("{}/{}", self.alloc_bytes, self.allocs),
            ),
            (
                FREED_KEY.to_string(),
                format!("{}/{}", self.free_bytes, self.frees),
            ),
        ]
    }

    /// Both sites' churn together (wrapping as the kernel's counters do).
    fn plus(self, o: Churn) -> Churn {
        Churn {
            allocs: self.allocs.wrapping_add(o.allocs),
            alloc_bytes: self.alloc_bytes.wrapping_add(o.alloc_bytes),
            frees: self.frees.wrapping_add(o.frees),
            free_bytes: self.free_bytes.wrapping_add(o.free_bytes),
        }
    }
}

impl Record {
    /// The identity of this call site: (file, line, module, func).
    pub fn key(&self) -> SiteKey {
        SiteKey {
            file: self.file.clone(),
            line: self.line,
            module: self.module.clone(),
            func: self.func.clone(),
        }
    }

    /// Value of an extra `key:value` pair, if present.
    pub fn extra_value(&self, key: &str) -> Option<&str> {
        self.extra
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The call site's churn (`allocated:` and `freed:`, allocprof's `c`
    /// flag), if its line has the keys and they are well formed (the
    /// parser reports malformed ones: [`Churn::from_extra`]).
    pub fn churn(&self) -> Option<Churn> {
        Churn::from_extra(&self.extra).ok().flatten()
    }

    /// The live bytes that asked to be charged to a memory cgroup
    /// (`accounted:`, allocprof's `m` flag on Linux 7.3), if the line has
    /// the key and it is well formed (the parser reports malformed ones:
    /// [`accounted_from_extra`]).
    pub fn accounted(&self) -> Option<u64> {
        accounted_from_extra(&self.extra).ok().flatten()
    }

    /// False when the kernel flagged the counters as inaccurate (`accurate:no`).
    pub fn is_accurate(&self) -> bool {
        self.extra_value("accurate") != Some("no")
    }

    /// The extra pairs joined as `k:v k:v` (empty when there are none).
    pub fn extra_string(&self) -> String {
        self.extra
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Module name, or `(built-in)`.
    pub fn module_label(&self) -> &str {
        self.module.as_deref().unwrap_or(BUILTIN_LABEL)
    }

    /// The call-site part of the line as the kernel prints it: `"%12lli %8llu "`,
    /// `file:line`, ` [module]` for loadable modules only, ` func:NAME`; no
    /// extra pairs, no trailing space. allocprof's debugfs lines start with it.
    pub(crate) fn site_prefix(&self) -> String {
        let mut s = format!(
            "{:>12} {:>8} {}:{}",
            self.bytes, self.calls, self.file, self.line
        );
        if let Some(m) = &self.module {
            s.push_str(" [");
            s.push_str(m);
            s.push(']');
        }
        s.push_str(" func:");
        s.push_str(&self.func);
        s
    }

    /// Format this record exactly as the kernel prints it
    /// (`"%12lli %8llu "`, tag info, trailing space, newline).
    pub fn to_line(&self) -> String {
        let mut s = self.site_prefix();
        for (k, v) in &self.extra {
            s.push(' ');
            s.push_str(k);
            s.push(':');
            s.push_str(v);
        }
        s.push_str(" \n");
        s
    }
}

/// Identity of a call site across snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SiteKey {
    pub file: String,
    pub line: u32,
    pub module: Option<String>,
    pub func: String,
}

impl SiteKey {
    /// `file:line`.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// Module name, or `(built-in)`.
    pub fn module_label(&self) -> &str {
        self.module.as_deref().unwrap_or(BUILTIN_LABEL)
    }
}

impl fmt::Display for SiteKey {
    /// `file:line [module] func` (module part only for module sites).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if let Some(m) = &self.module {
            write!(f, " [{m}]")?;
        }
        write!(f, " {}", self.func)
    }
}

/// Merge records that share a [`SiteKey`] (e.g. `static inline` helpers in
/// headers, instantiated in several compilation units, show up once per
/// instance). Bytes and calls are summed, extra pairs are united (first value
/// wins, except that `accurate:no` from any instance wins). The churn keys
/// (`allocated:`, `freed:`) and `accounted:` are summed when every instance
/// has them, and left out when only some have them: their sum would miss
/// the others'. Order of first appearance is kept.
pub fn merge_duplicates(records: &[Record]) -> Vec<Record> {
    let mut index: std::collections::HashMap<SiteKey, usize> = Default::default();
    let mut out: Vec<Record> = Vec::with_capacity(records.len());
    // For each record of `out` merged from several: the sum of their
    // churn, `None` once an instance lacks it.
    let mut churn: std::collections::HashMap<usize, Option<Churn>> = Default::default();
    // The same for `accounted:`.
    let mut accounted: std::collections::HashMap<usize, Option<u64>> = Default::default();
    for r in records {
        match index.get(&r.key()) {
            Some(&i) => {
                let sum = churn.entry(i).or_insert_with(|| out[i].churn());
                *sum = sum.zip(r.churn()).map(|(a, b)| a.plus(b));
                let sum = accounted.entry(i).or_insert_with(|| out[i].accounted());
                *sum = sum.zip(r.accounted()).map(|(a, b)| a.wrapping_add(b));
                let m = &mut out[i];
                m.bytes = m.bytes.saturating_add(r.bytes);
                m.calls = m.calls.saturating_add(r.calls);
                for (k, v) in &r.extra {
                    match m.extra.iter_mut().find(|(mk, _)| mk == k) {
                        Some(slot) => {
                            if k == "accurate" && v == "no" {
                                slot.1 = v.clone();
                            }
                        }
                        None => m.extra.push((k.clone(), v.clone())),
                    }
                }
            }
            None => {
                index.insert(r.key(), out.len());
                out.push(r.clone());
            }
        }
    }
    for (i, sum) in churn {
        let extra = &mut out[i].extra;
        match sum {
            Some(c) => {
                for (k, v) in c.to_extra() {
                    if let Some(slot) = extra.iter_mut().find(|(mk, _)| *mk == k) {
                        slot.1 = v;
                    }
                }
            }
            None => extra.retain(|(k, _)| k != ALLOCATED_KEY && k != FREED_KEY),
        }
    }
    for (i, sum) in accounted {
        let extra = &mut out[i].extra;
        match sum {
            Some(a) => {
                if let Some(slot) = extra.iter_mut().find(|(k, _)| k == ACCOUNTED_KEY) {
                    slot.1 = a.to_string();
                }
            }
            None => extra.retain(|(k, _)| k != ACCOUNTED_KEY),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(bytes: i64, calls: u64, file: &str, line: u32, module: Option<&str>) -> Record {
        Record {
            bytes,
            calls,
            file: file.into(),
            line,
            module: module.map(Into::into),
            func: "f".into(),
            extra: vec![],
        }
    }

    #[test]
    fn to_line_matches_kernel_format() {
        let mut r = rec(8192, 2, "drivers/foo/bar.c", 77, Some("foo_mod"));
        r.func = "foo_probe".into();
        assert_eq!(
            r.to_line(),
            "        8192        2 drivers/foo/bar.c:77 [foo_mod] func:foo_probe \n"
        );
        let mut r = rec(-4096, 1, "mm/foo.c", 12, None);
        r.func = "bar".into();
        r.extra.push(("accurate".into(), "no".into()));
        assert_eq!(
            r.to_line(),
            "       -4096        1 mm/foo.c:12 func:bar accurate:no \n"
        );
        assert!(!r.is_accurate());
        assert_eq!(r.key().to_string(), "mm/foo.c:12 bar");
    }

    fn with_extra(mut r: Record, pairs: &[(&str, &str)]) -> Record {
        r.extra = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        r
    }

    #[test]
    fn churn_keys_read_exactly() {
        let r = with_extra(
            rec(640, 5, "a.c", 1, None),
            &[
                ("accurate", "no"),
                ("allocated", "77440/605"),
                ("freed", "-512/-1"),
            ],
        );
        assert_eq!(
            r.churn(),
            Some(Churn {
                allocs: 605,
                alloc_bytes: 77440,
                frees: -1,
                free_bytes: -512,
            })
        );
        assert_eq!(rec(1, 1, "a.c", 1, None).churn(), None);
        // u64 allocations to the last one.
        let r = with_extra(
            rec(0, 0, "a.c", 1, None),
            &[
                ("allocated", "18446744073709551615/18446744073709551615"),
                ("freed", "0/0"),
            ],
        );
        assert_eq!(r.churn().unwrap().allocs, u64::MAX);
    }

    #[test]
    fn malformed_churn_keys_say_why() {
        let err = |pairs: &[(&str, &str)]| {
            let r = with_extra(rec(0, 0, "a.c", 1, None), pairs);
            assert_eq!(r.churn(), None);
            Churn::from_extra(&r.extra).unwrap_err().to_string()
        };
        assert_eq!(
            err(&[("allocated", "640"), ("freed", "0/0")]),
            "invalid allocated:640, expected allocated:BYTES/CALLS"
        );
        assert_eq!(
            err(&[("allocated", "-640/5"), ("freed", "0/0")]),
            "invalid allocated:-640/5, expected allocated:BYTES/CALLS"
        );
        assert_eq!(
            err(&[("allocated", "640/5"), ("freed", "0/x")]),
            "invalid freed:0/x, expected freed:BYTES/CALLS"
        );
        assert_eq!(err(&[("allocated", "640/5")]), "allocated: without freed:");
        assert_eq!(err(&[("freed", "1/1")]), "freed: without allocated:");
        assert_eq!(
            err(&[("freed", "1/1"), ("allocated", "1/1"), ("freed", "1/1")]),
            "freed: given twice"
        );
    }

    #[test]
    fn merge_sums_churn_of_every_instance_only() {
        let a = with_extra(
            rec(100, 1, "a.h", 1, None),
            &[("allocated", "300/3"), ("freed", "200/2")],
        );
        let b = with_extra(
            rec(50, 2, "a.h", 1, None),
            &[("allocated", "70/7"), ("freed", "-10/-1")],
        );
        let merged = merge_duplicates(&[a.clone(), b]);
        assert_eq!(
            merged[0].extra_string(),
            "allocated:370/10 freed:190/1",
            "{merged:?}"
        );
        // One instance without the keys: the sum would miss it.
        let c = rec(7, 1, "a.h", 1, None);
        let merged = merge_duplicates(&[a.clone(), c.clone()]);
        assert_eq!((merged[0].bytes, merged[0].churn()), (107, None));
        assert_eq!(merged[0].extra_string(), "");
        let merged = merge_duplicates(&[c, a]);
        assert_eq!((merged[0].bytes, merged[0].churn()), (107, None));
    }

    #[test]
    fn merge_sums_accounted_of_every_instance_only() {
        let a = with_extra(
            rec(4096, 1, "a.h", 1, None),
            &[
                ("allocated", "4096/1"),
                ("freed", "0/0"),
                ("accounted", "4096"),
            ],
        );
        let b = with_extra(
            rec(8192, 2, "a.h", 1, None),
            &[
                ("allocated", "8192/2"),
                ("freed", "0/0"),
                ("accounted", "0"),
            ],
        );
        let merged = merge_duplicates(&[a.clone(), b]);
        assert_eq!(
            merged[0].extra_string(),
            "allocated:12288/3 freed:0/0 accounted:4096"
        );
        assert_eq!(merged[0].accounted(), Some(4096));
        // An instance without it (a site given m in one unit only): dropped,
        // the churn kept.
        let c = with_extra(
            rec(1, 1, "a.h", 1, None),
            &[("allocated", "1/1"), ("freed", "0/0")],
        );
        for merged in [
            merge_duplicates(&[a.clone(), c.clone()]),
            merge_duplicates(&[c, a]),
        ] {
            assert_eq!(merged[0].accounted(), None);
            assert_eq!(merged[0].extra_string(), "allocated:4097/2 freed:0/0");
        }
    }

    #[test]
    fn merge_sums_identical_sites_only() {
        let a = rec(100, 1, "a.h", 1, None);
        let b = rec(50, 2, "a.h", 1, None);
        let c = rec(7, 1, "a.h", 1, Some("m"));
        let mut d = rec(1, 1, "a.h", 1, None);
        d.extra.push(("accurate".into(), "no".into()));
        let merged = merge_duplicates(&[a, c, b, d]);
        assert_eq!(merged.len(), 2);
        assert_eq!((merged[0].bytes, merged[0].calls), (151, 4));
        assert!(!merged[0].is_accurate());
        assert_eq!(
            (merged[1].bytes, merged[1].module.as_deref()),
            (7, Some("m"))
        );
    }
}
