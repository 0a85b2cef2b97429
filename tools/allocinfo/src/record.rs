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
/// wins, except that `accurate:no` from any instance wins). Order of first
/// appearance is kept.
pub fn merge_duplicates(records: &[Record]) -> Vec<Record> {
    let mut index: std::collections::HashMap<SiteKey, usize> = Default::default();
    let mut out: Vec<Record> = Vec::with_capacity(records.len());
    for r in records {
        match index.get(&r.key()) {
            Some(&i) => {
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
