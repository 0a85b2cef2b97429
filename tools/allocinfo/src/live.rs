//! Reading the running kernel (`--live`): through the ioctl interface of
//! `/proc/allocinfo` when it is offered and the kernel can do part of the
//! filtering, otherwise through the text file.
//!
//! The rules (`--via auto`, the default):
//!
//! 1. No criterion of the filter can be given to the kernel (see
//!    [`pushdown`]): read the text file. The kernel would have to sum every
//!    counter either way, and the text costs fewer system calls.
//! 2. Otherwise open the file and [`walk`] it with the kernel filter. If the
//!    file cannot be opened, or the kernel refuses the ioctl (ENOTTY: no such
//!    ioctl or not a /proc file; EINVAL: a filter it does not know; ENOSYS,
//!    EOPNOTSUPP), read the text file instead, silently. On any other failure
//!    (another errno, or modules loaded or unloaded during 11 reads in a
//!    row) read the text file too, with a warning.
//!
//! `--via ioctl` takes step 2 even without a kernel filter and fails instead
//! of falling back; `--via text` always reads the text file.
//!
//! Either way the caller applies the whole filter to the records (the
//! kernel's answer is a superset), so both ways give the same records. One
//! difference is repaired here: the kernel returns at most the last 63
//! characters of a name. When a returned file or function name is exactly
//! 63 characters long it may have been cut, and the full names are then
//! looked up in the text file.

use crate::filter::Filter;
use crate::ioctl::{
    pushdown, trimmed, walk, AllocinfoTagData, Device, ProcFile, WalkError, STR_MAX,
};
use crate::parse::parse_bytes;
use crate::record::Record;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

/// How to read the live kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    /// The ioctl when part of the filter can be done by the kernel, else the text file.
    Auto,
    /// Always the ioctl; fail if the kernel does not offer it.
    Ioctl,
    /// Always the text file.
    Text,
}

/// What was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// Records from the ioctl, not yet filtered by the criteria the kernel
    /// could not evaluate.
    Records(Vec<Record>),
    /// Nothing yet: read the file as text.
    Text,
}

/// The outcome of [`read_live`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRead {
    pub data: Data,
    /// Which way was taken and why, one line (for `-v`).
    pub note: String,
    /// Problems to report even without `-v`.
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("cannot open {} for the ioctl: {err}", path.display())]
    Open { path: PathBuf, err: io::Error },
    #[error("{}: {err}{}", path.display(), if err.is_refusal() {
        " (the file does not offer this allocinfo ioctl; --via auto or text reads it as text)"
    } else {
        ""
    })]
    Walk { path: PathBuf, err: WalkError },
}

impl LiveError {
    /// The failure without the path, for notes about the path.
    pub fn reason(&self) -> String {
        match self {
            LiveError::Open { err, .. } => format!("cannot open it: {err}"),
            LiveError::Walk { err, .. } => err.to_string(),
        }
    }

    /// A failure that only means "this kernel or file does not offer the
    /// ioctl": fall back to the text file without a warning. (A file that
    /// cannot be opened will fail as text too, with the usual message.)
    pub fn is_expected(&self) -> bool {
        match self {
            LiveError::Open { .. } => true,
            LiveError::Walk { err, .. } => err.is_refusal(),
        }
    }
}

/// Read the live kernel's `path` as `via` says; see the module documentation.
pub fn read_live(path: &Path, filter: &Filter, via: Via) -> Result<LiveRead, LiveError> {
    read_live_with(path, filter, via, ProcFile::open)
}

/// [`read_live`] with another way to open the ioctl device (for tests).
pub fn read_live_with<D: Device>(
    path: &Path,
    filter: &Filter,
    via: Via,
    open: impl FnOnce(&Path) -> io::Result<D>,
) -> Result<LiveRead, LiveError> {
    let pd = pushdown(filter);
    let text = |why: String| LiveRead {
        data: Data::Text,
        note: format!("{}: read as text: {why}", path.display()),
        warnings: vec![],
    };
    match via {
        Via::Text => return Ok(text("--via text".into())),
        Via::Auto if pd.filter.mask == 0 => {
            return Ok(text(if pd.local.is_empty() {
                "no filter for the kernel".into()
            } else {
                format!(
                    "no filter the kernel can evaluate (it compares names exactly, one \
                     value each): {}",
                    pd.local.join(", ")
                )
            }))
        }
        _ => {}
    }

    let walked = match open(path) {
        Err(err) => Err(LiveError::Open {
            path: path.into(),
            err,
        }),
        Ok(mut dev) => walk(&mut dev, &pd.filter).map_err(|err| LiveError::Walk {
            path: path.into(),
            err,
        }),
    };
    let tags = match walked {
        Ok(tags) => tags,
        Err(e) if via == Via::Ioctl => return Err(e),
        Err(e) => {
            let mut r = text(format!("the ioctl was not usable: {}", e.reason()));
            if !e.is_expected() {
                r.warnings
                    .push(format!("{e}; reading the text file instead"));
            }
            return Ok(r);
        }
    };

    let mut records: Vec<Record> = tags.iter().map(AllocinfoTagData::to_record).collect();
    let mut note = format!(
        "{}: read through the ioctl: {} records; kernel filter: {}",
        path.display(),
        records.len(),
        if pd.pushed.is_empty() {
            "none".to_string()
        } else {
            pd.pushed.join(", ")
        }
    );
    if !pd.local.is_empty() {
        note.push_str(&format!("; applied here only: {}", pd.local.join(", ")));
    }
    let mut warnings = vec![];
    let cut = records.iter().filter(|r| maybe_trimmed(r)).count();
    if cut > 0 {
        match std::fs::read(path) {
            Ok(text) => {
                let unresolved = complete_names(&mut records, &parse_bytes(&text).records);
                note.push_str(&format!(
                    "; {} names of 63 characters looked up in the text file",
                    cut
                ));
                if unresolved > 0 {
                    warnings.push(format!(
                        "{}: {unresolved} call sites keep names cut to their last {STR_MAX} \
                         characters (not found in the text file)",
                        path.display()
                    ));
                }
            }
            Err(e) => warnings.push(format!(
                "{}: {cut} call sites may have names cut to their last {STR_MAX} characters \
                 (cannot read the text file: {e})",
                path.display()
            )),
        }
    }
    Ok(LiveRead {
        data: Data::Records(records),
        note,
        warnings,
    })
}

/// May the kernel have cut a name of this record (to its last 63 characters)?
/// Module names are at most 55 characters and never cut.
fn maybe_trimmed(r: &Record) -> bool {
    r.file.len() == STR_MAX || r.func.len() == STR_MAX
}

/// Replace names that the kernel may have cut (exactly 63 characters) by the
/// full names of the same call site in `full` (records of the text file): the
/// site with the same module and line whose names end the same way. Returns
/// how many records could not be completed (not found, or not unique).
pub fn complete_names(records: &mut [Record], full: &[Record]) -> usize {
    type Key = (Option<String>, u32, String, String);
    let mut long: HashMap<Key, Option<(String, String)>> = HashMap::new();
    for r in full
        .iter()
        .filter(|r| r.file.len() >= STR_MAX || r.func.len() >= STR_MAX)
    {
        let key = (r.module.clone(), r.line, trimmed(&r.file), trimmed(&r.func));
        let names = Some((r.file.clone(), r.func.clone()));
        long.entry(key)
            .and_modify(|v| {
                if *v != names {
                    *v = None; // ambiguous
                }
            })
            .or_insert(names);
    }
    let mut unresolved = 0;
    for r in records.iter_mut().filter(|r| maybe_trimmed(r)) {
        let key = (r.module.clone(), r.line, r.file.clone(), r.func.clone());
        match long.get(&key) {
            Some(Some((file, func))) => {
                r.file = file.clone();
                r.func = func.clone();
            }
            _ => unresolved += 1,
        }
    }
    unresolved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ioctl::fake::FakeDevice;
    use crate::parse::parse_str;
    use crate::record::merge_duplicates;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn fixture() -> Vec<Record> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/upstream-6.12.txt"
        );
        parse_str(&std::fs::read_to_string(path).unwrap()).records
    }

    fn never_opened(_: &Path) -> io::Result<FakeDevice> {
        panic!("the ioctl must not be tried")
    }

    #[test]
    fn same_records_through_the_ioctl_and_the_text() {
        let recs = fixture();
        let filters = [
            Filter::new(&s(&["nfs"]), &[], &[]).unwrap(),
            Filter::new(&s(&["built-in"]), &s(&["mm/*"]), &[]).unwrap(),
            Filter::new(&[], &s(&["mm/slub.c"]), &[]).unwrap(),
            Filter::new(&[], &[], &s(&["alloc_slab_page"])).unwrap(),
            Filter::new(&[], &[], &s(&["alloc_*"]))
                .unwrap()
                .with_sizes(Some(1 << 20), None),
            Filter::default().with_sizes(Some(4096), Some(1 << 22)),
            Filter::default().with_lines(&[1977]),
            Filter::default().with_accurate(Some(true)),
            Filter::new(&s(&["virtio_net", "nfs"]), &[], &[])
                .unwrap()
                .with_sizes(None, Some(1 << 30)),
        ];
        for f in &filters {
            let want = merge_duplicates(&f.apply(&recs));
            assert!(!want.is_empty(), "{f:?}");
            let r = read_live_with(Path::new("/proc/allocinfo"), f, Via::Auto, |_| {
                Ok(FakeDevice::new(&recs))
            })
            .unwrap();
            let Data::Records(got) = r.data else {
                panic!("{f:?}: {}", r.note)
            };
            assert!(got.len() <= recs.len());
            assert_eq!(merge_duplicates(&f.apply(&got)), want, "{f:?}");
            assert!(r.warnings.is_empty());
        }
    }

    #[test]
    fn text_without_a_kernel_filter_or_when_asked() {
        let glob = Filter::new(&[], &s(&["drivers/net/*"]), &[]).unwrap();
        let r = read_live_with(Path::new("/p"), &glob, Via::Auto, never_opened).unwrap();
        assert_eq!(r.data, Data::Text);
        assert!(r
            .note
            .starts_with("/p: read as text: no filter the kernel can evaluate"));
        assert!(r.note.ends_with("file 'drivers/net/*'"), "{}", r.note);
        let r = read_live_with(Path::new("/p"), &Filter::default(), Via::Auto, never_opened);
        assert_eq!(
            r.unwrap().note,
            "/p: read as text: no filter for the kernel"
        );
        let exact = Filter::new(&s(&["nfs"]), &[], &[]).unwrap();
        let r = read_live_with(Path::new("/p"), &exact, Via::Text, never_opened).unwrap();
        assert_eq!(r.data, Data::Text);

        // --via ioctl walks even without a kernel filter.
        let recs = fixture();
        let r = read_live_with(Path::new("/p"), &glob, Via::Ioctl, |_| {
            Ok(FakeDevice::new(&recs))
        })
        .unwrap();
        assert_eq!(r.data, Data::Records(recs));
        assert_eq!(
            r.note,
            "/p: read through the ioctl: 39 records; kernel filter: none; \
             applied here only: file 'drivers/net/*'"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn fallback_when_the_ioctl_is_refused_or_fails() {
        let recs = fixture();
        let f = Filter::new(&s(&["nfs"]), &s(&["fs/*"]), &[]).unwrap();
        let refusing = |errno| {
            let recs = recs.clone();
            move |_: &Path| {
                let mut d = FakeDevice::new(&recs);
                d.refuse = Some(errno);
                Ok(d)
            }
        };
        // ENOTTY: silent fallback in auto, an error with --via ioctl.
        let r = read_live_with(Path::new("/p"), &f, Via::Auto, refusing(libc::ENOTTY)).unwrap();
        assert_eq!(r.data, Data::Text);
        assert!(r.warnings.is_empty());
        assert!(r.note.contains("the ioctl was not usable"), "{}", r.note);
        let e =
            read_live_with(Path::new("/p"), &f, Via::Ioctl, refusing(libc::ENOTTY)).unwrap_err();
        assert!(
            e.to_string().starts_with("/p: ioctl CONTENT_ID failed"),
            "{e}"
        );

        // EIO: fallback with a warning.
        let r = read_live_with(Path::new("/p"), &f, Via::Auto, refusing(libc::EIO)).unwrap();
        assert_eq!(r.data, Data::Text);
        assert_eq!(r.warnings.len(), 1);

        // Modules come and go all the time: fallback with a warning.
        let r = read_live_with(Path::new("/p"), &f, Via::Auto, |_| {
            let mut d = FakeDevice::new(&recs);
            d.ids = (0..50).collect();
            Ok(d)
        })
        .unwrap();
        assert_eq!(r.data, Data::Text);
        assert!(r.warnings[0].contains("modules were loaded or unloaded"));

        // Cannot open: the text path reports the problem.
        let r = read_live_with(Path::new("/p"), &f, Via::Auto, |_| {
            Err::<FakeDevice, _>(io::ErrorKind::PermissionDenied.into())
        })
        .unwrap();
        assert_eq!(r.data, Data::Text);
        assert!(r.warnings.is_empty());
        let e = read_live_with(Path::new("/p"), &f, Via::Ioctl, |_| {
            Err::<FakeDevice, _>(io::ErrorKind::PermissionDenied.into())
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("cannot open /p for the ioctl"));
    }

    #[test]
    fn a_regular_file_falls_back_to_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("allocinfo");
        std::fs::write(&path, "allocinfo - version: 1.0\n").unwrap();
        let f = Filter::new(&s(&["nfs"]), &[], &[]).unwrap();
        let r = read_live(&path, &f, Via::Auto).unwrap();
        assert_eq!(r.data, Data::Text);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert!(read_live(&path, &f, Via::Ioctl).is_err());
    }

    #[test]
    fn names_cut_by_the_kernel_are_completed_from_the_text() {
        let long_file = format!(
            "drivers/gpu/drm/amd/display/{}/dcn401_resource.c",
            "x".repeat(40)
        );
        let long_func = format!("dml2_core_calcs_{}", "y".repeat(60));
        let text = format!(
            "allocinfo - version: 1.0\n  4096 1 {long_file}:10 [amdgpu] func:probe \n  \
             8192 2 mm/a.c:3 [amdgpu] func:{long_func} \n  1 1 mm/b.c:4 [amdgpu] func:g \n"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("allocinfo");
        std::fs::write(&path, &text).unwrap();
        let full = parse_str(&text).records;
        let f = Filter::new(&s(&["amdgpu"]), &s(&["drivers/gpu/**"]), &[]).unwrap();
        let r = read_live_with(&path, &f, Via::Auto, |_| Ok(FakeDevice::new(&full))).unwrap();
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert!(r
            .note
            .ends_with("; 2 names of 63 characters looked up in the text file"));
        assert_eq!(r.data, Data::Records(full.clone()));

        // Without the text, the cut names stay, with a warning.
        let mut recs: Vec<Record> = FakeDevice::new(&full)
            .records
            .iter()
            .map(AllocinfoTagData::to_record)
            .collect();
        assert_eq!(recs[0].file.len(), 63);
        assert!(long_file.ends_with(&recs[0].file));
        assert_eq!(complete_names(&mut recs, &full[1..]), 1);
        assert_eq!(recs[1], full[1]);
        std::fs::remove_file(&path).unwrap();
        let r = read_live_with(&path, &f, Via::Auto, |_| Ok(FakeDevice::new(&full))).unwrap();
        assert!(r.warnings[0].contains("2 call sites may have names cut"));
    }
}
