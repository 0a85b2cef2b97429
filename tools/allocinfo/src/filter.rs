//! Call-site filters shared by the read commands (`--module`, `--file`, `--func`).

use crate::record::{Record, SiteKey, BUILTIN_LABEL};
use globset::{Glob, GlobSet, GlobSetBuilder};

/// Selects call sites. Each kind of criterion matches if any of its values
/// match (OR); different kinds must all match (AND). An empty filter matches
/// everything.
///
/// Every criterion applies to one kernel line (before lines of the same site
/// are summed), as the kernel's ioctl filter does; see [`crate::ioctl::pushdown`].
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Module names; `built-in` (or `(built-in)`) selects built-in sites.
    /// `-` and `_` are equivalent, as in kernel module names.
    pub(crate) modules: Vec<ModuleMatch>,
    /// Globs on the source file path (`*` also matches `/`).
    files: Option<GlobSet>,
    /// The `files` patterns as given.
    pub(crate) file_patterns: Vec<String>,
    /// Globs on the function name (a plain name matches exactly).
    funcs: Option<GlobSet>,
    /// The `funcs` patterns as given.
    pub(crate) func_patterns: Vec<String>,
    /// Source line numbers.
    pub(crate) lines: Vec<u32>,
    /// Inclusive bounds on the bytes of the line, compared as unsigned 64-bit
    /// numbers like the kernel does (a negative count is huge).
    pub(crate) min_size: Option<u64>,
    pub(crate) max_size: Option<u64>,
    /// `Some(true)`: only accurate sites; `Some(false)`: only sites with
    /// `accurate:no`.
    pub(crate) accurate: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModuleMatch {
    BuiltIn,
    Name(String),
}

fn normalize_module(name: &str) -> String {
    name.replace('-', "_")
}

fn build_globset(patterns: &[String]) -> Result<Option<GlobSet>, globset::Error> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        b.add(Glob::new(p)?);
    }
    Ok(Some(b.build()?))
}

impl Filter {
    /// Build a filter. Fails on an invalid glob.
    pub fn new(
        modules: &[String],
        files: &[String],
        funcs: &[String],
    ) -> Result<Self, globset::Error> {
        Ok(Filter {
            modules: modules
                .iter()
                .map(|m| {
                    if m == "built-in" || m == BUILTIN_LABEL {
                        ModuleMatch::BuiltIn
                    } else {
                        ModuleMatch::Name(normalize_module(m))
                    }
                })
                .collect(),
            files: build_globset(files)?,
            file_patterns: files.to_vec(),
            funcs: build_globset(funcs)?,
            func_patterns: funcs.to_vec(),
            ..Filter::default()
        })
    }

    /// Only sites at one of these source lines (none: any line).
    pub fn with_lines(mut self, lines: &[u32]) -> Self {
        self.lines = lines.to_vec();
        self
    }

    /// Only lines with at least `min` and at most `max` bytes (inclusive).
    pub fn with_sizes(mut self, min: Option<u64>, max: Option<u64>) -> Self {
        self.min_size = min;
        self.max_size = max;
        self
    }

    /// `Some(true)`: only accurate sites; `Some(false)`: only sites the
    /// kernel marks `accurate:no`; `None`: both.
    pub fn with_accurate(mut self, accurate: Option<bool>) -> Self {
        self.accurate = accurate;
        self
    }

    /// Does the record pass the filter?
    pub fn matches(&self, r: &Record) -> bool {
        if !self.matches_name(&r.file, r.line, r.module.as_deref(), &r.func) {
            return false;
        }
        // Like the kernel: the signed sum, read as an unsigned 64-bit number.
        let bytes = r.bytes as u64;
        if self.min_size.is_some_and(|m| bytes < m) || self.max_size.is_some_and(|m| bytes > m) {
            return false;
        }
        self.accurate.is_none_or(|a| a == r.is_accurate())
    }

    /// Does a call site without figures (the faults file's) pass the
    /// criteria on its name: module, file, function, line? The criteria on
    /// bytes and accuracy (`with_sizes`, `with_accurate`) are not looked at.
    pub fn matches_key(&self, k: &SiteKey) -> bool {
        self.matches_name(&k.file, k.line, k.module.as_deref(), &k.func)
    }

    fn matches_name(&self, file: &str, line: u32, module: Option<&str>, func: &str) -> bool {
        if !self.modules.is_empty()
            && !self.modules.iter().any(|m| match (m, module) {
                (ModuleMatch::BuiltIn, None) => true,
                (ModuleMatch::Name(n), Some(rm)) => *n == normalize_module(rm),
                _ => false,
            })
        {
            return false;
        }
        if let Some(files) = &self.files {
            if !files.is_match(file) {
                return false;
            }
        }
        if let Some(funcs) = &self.funcs {
            if !funcs.is_match(func) {
                return false;
            }
        }
        self.lines.is_empty() || self.lines.contains(&line)
    }

    /// Records that pass the filter.
    pub fn apply(&self, records: &[Record]) -> Vec<Record> {
        records
            .iter()
            .filter(|r| self.matches(r))
            .cloned()
            .collect()
    }
}

/// Check that a glob pattern is valid (for command-line validation).
pub fn validate_glob(pattern: &str) -> Result<String, globset::Error> {
    Glob::new(pattern).map(|_| pattern.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(file: &str, module: Option<&str>, func: &str) -> Record {
        Record {
            bytes: 1,
            calls: 1,
            file: file.into(),
            line: 1,
            module: module.map(Into::into),
            func: func.into(),
            extra: vec![],
        }
    }

    #[test]
    fn module_file_func_filters() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let a = rec("mm/slub.c", None, "alloc_slab_page");
        let b = rec(
            "drivers/net/virtio_net.c",
            Some("virtio_net"),
            "add_recvbuf",
        );
        let c = rec("mm/kasan/common.c", None, "kasan_alloc");

        let f = Filter::new(&s(&["built-in"]), &[], &[]).unwrap();
        assert!(f.matches(&a) && !f.matches(&b));
        let f = Filter::new(&s(&["virtio-net"]), &[], &[]).unwrap();
        assert!(!f.matches(&a) && f.matches(&b));
        let f = Filter::new(&[], &s(&["mm/*"]), &[]).unwrap();
        assert!(f.matches(&a) && !f.matches(&b) && f.matches(&c));
        let f = Filter::new(&[], &s(&["mm/*.c", "drivers/**"]), &s(&["add_*"])).unwrap();
        assert!(!f.matches(&a) && f.matches(&b));
        let f = Filter::new(&[], &[], &s(&["alloc_slab_page"])).unwrap();
        assert!(f.matches(&a) && !f.matches(&c));
        assert!(Filter::default().matches(&c));
        assert!(Filter::new(&[], &s(&["mm/[x"]), &[]).is_err());
        // A site without figures: the same criteria on its name.
        let f = Filter::new(&s(&["virtio_net"]), &s(&["drivers/**"]), &s(&["add_*"]))
            .unwrap()
            .with_lines(&[1]);
        assert!(f.matches_key(&b.key()) && !f.matches_key(&a.key()));
        assert!(!f.clone().with_lines(&[2]).matches_key(&b.key()));
        // Sizes are not looked at: a key has none.
        assert!(f.with_sizes(Some(1 << 40), None).matches_key(&b.key()));
    }

    #[test]
    fn line_size_and_accuracy_filters() {
        let mut a = rec("mm/slub.c", None, "alloc_slab_page");
        a.bytes = 4096;
        a.line = 7;
        let mut b = a.clone();
        b.bytes = 8192;
        b.line = 9;
        b.extra.push(("accurate".into(), "no".into()));
        let mut neg = a.clone();
        neg.bytes = -1;

        let f = Filter::default().with_lines(&[9, 11]);
        assert!(!f.matches(&a) && f.matches(&b));
        let f = Filter::default().with_sizes(Some(4096), Some(4096));
        assert!(f.matches(&a) && !f.matches(&b));
        let f = Filter::default().with_sizes(Some(4097), None);
        assert!(!f.matches(&a) && f.matches(&b));
        // Negative counts compare as huge unsigned numbers, as in the kernel.
        assert!(f.matches(&neg));
        assert!(!Filter::default()
            .with_sizes(None, Some(1 << 40))
            .matches(&neg));
        let f = Filter::default().with_accurate(Some(false));
        assert!(!f.matches(&a) && f.matches(&b));
        let f = Filter::default().with_accurate(Some(true));
        assert!(f.matches(&a) && !f.matches(&b));
    }
}
