//! Call-site filters shared by the read commands (`--module`, `--file`, `--func`).

use crate::record::{Record, BUILTIN_LABEL};
use globset::{Glob, GlobSet, GlobSetBuilder};

/// Selects call sites. Each kind of criterion matches if any of its values
/// match (OR); different kinds must all match (AND). An empty filter matches
/// everything.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Module names; `built-in` (or `(built-in)`) selects built-in sites.
    /// `-` and `_` are equivalent, as in kernel module names.
    modules: Vec<ModuleMatch>,
    /// Globs on the source file path (`*` also matches `/`).
    files: Option<GlobSet>,
    /// Globs on the function name (a plain name matches exactly).
    funcs: Option<GlobSet>,
}

#[derive(Debug, Clone)]
enum ModuleMatch {
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
            funcs: build_globset(funcs)?,
        })
    }

    /// Does the record pass the filter?
    pub fn matches(&self, r: &Record) -> bool {
        if !self.modules.is_empty()
            && !self.modules.iter().any(|m| match (m, &r.module) {
                (ModuleMatch::BuiltIn, None) => true,
                (ModuleMatch::Name(n), Some(rm)) => *n == normalize_module(rm),
                _ => false,
            })
        {
            return false;
        }
        if let Some(files) = &self.files {
            if !files.is_match(&r.file) {
                return false;
            }
        }
        if let Some(funcs) = &self.funcs {
            if !funcs.is_match(&r.func) {
                return false;
            }
        }
        true
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
    }
}
