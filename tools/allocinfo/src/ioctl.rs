//! The binary ioctl interface of `/proc/allocinfo`, as merged upstream in
//! `include/uapi/linux/alloc_tag.h` (the layout with `inaccurate` in
//! `struct allocinfo_filter`, not in `struct allocinfo_tag` as in the v2..v8
//! postings of the series).
//!
//! The structures are defined here with `#[repr(C)]` and checked against the
//! header's sizes and offsets at compile time. [`walk`] reads every record
//! that matches a kernel filter the way the kernel's selftest does; it works
//! on any [`Device`], so that its logic can be tested without a kernel.
//! [`pushdown`] decides which of the tool's filters the kernel can evaluate.

use crate::filter::{Filter, ModuleMatch};
use crate::record::Record;
use std::fs::File;
use std::io;
use std::mem::{offset_of, size_of};
use std::path::Path;

/// `ALLOCINFO_STR_SIZE`: names are NUL-terminated in 64 bytes, so the kernel
/// keeps (and compares) at most their last 63 characters.
pub const STR_SIZE: usize = 64;
/// The most characters of a name the kernel returns or compares.
pub const STR_MAX: usize = STR_SIZE - 1;

/// `struct allocinfo_content_id`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocinfoContentId {
    pub id: u64,
}

/// `struct allocinfo_tag`: the identity of a call site. Longer names are
/// trimmed from the front (the last 63 characters are kept).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocinfoTag {
    pub modname: [u8; STR_SIZE],
    pub function: [u8; STR_SIZE],
    pub filename: [u8; STR_SIZE],
    pub lineno: u64,
}

/// `struct allocinfo_counter` (`__attribute__((aligned(8)))`; the 7 bytes
/// after `accurate` are padding, spelled out so that no byte is undefined).
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocinfoCounter {
    pub bytes: u64,
    pub calls: u64,
    pub accurate: u8,
    pub pad: [u8; 7],
}

/// `struct allocinfo_tag_data`: one record.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocinfoTagData {
    pub tag: AllocinfoTag,
    pub counter: AllocinfoCounter,
}

/// `struct allocinfo_filter`. Only the fields whose bit is set in `mask` are
/// used; all set criteria must match.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocinfoFilter {
    pub mask: u64,
    pub fields: AllocinfoTag,
    pub min_size: u64,
    pub max_size: u64,
    /// With `MASK_INACCURATE`: 0 selects accurate sites, anything else
    /// inaccurate ones.
    pub inaccurate: u64,
}

/// `struct allocinfo_get_at`: `pos` and `filter` in, `data` out.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocinfoGetAt {
    pub pos: u64,
    pub filter: AllocinfoFilter,
    pub data: AllocinfoTagData,
}

// The merged header's layout (computed with gcc on x86-64; every member is a
// multiple of 8 bytes, so it is the same for 32-bit userspace).
const _: () = assert!(size_of::<AllocinfoContentId>() == 8);
const _: () = assert!(size_of::<AllocinfoTag>() == 200);
const _: () = assert!(offset_of!(AllocinfoTag, function) == 64);
const _: () = assert!(offset_of!(AllocinfoTag, filename) == 128);
const _: () = assert!(offset_of!(AllocinfoTag, lineno) == 192);
const _: () = assert!(size_of::<AllocinfoCounter>() == 24);
const _: () = assert!(std::mem::align_of::<AllocinfoCounter>() == 8);
const _: () = assert!(offset_of!(AllocinfoCounter, accurate) == 16);
const _: () = assert!(size_of::<AllocinfoTagData>() == 224);
const _: () = assert!(offset_of!(AllocinfoTagData, counter) == 200);
const _: () = assert!(size_of::<AllocinfoFilter>() == 232);
const _: () = assert!(offset_of!(AllocinfoFilter, fields) == 8);
const _: () = assert!(offset_of!(AllocinfoFilter, min_size) == 208);
const _: () = assert!(offset_of!(AllocinfoFilter, max_size) == 216);
const _: () = assert!(offset_of!(AllocinfoFilter, inaccurate) == 224);
const _: () = assert!(size_of::<AllocinfoGetAt>() == 464);
const _: () = assert!(offset_of!(AllocinfoGetAt, filter) == 8);
const _: () = assert!(offset_of!(AllocinfoGetAt, data) == 240);

// Filter mask bits (`ALLOCINFO_FILTER_MASK_*`).
pub const MASK_MODNAME: u64 = 1 << 0;
pub const MASK_FUNCTION: u64 = 1 << 1;
pub const MASK_FILENAME: u64 = 1 << 2;
pub const MASK_LINENO: u64 = 1 << 3;
pub const MASK_INACCURATE: u64 = 1 << 4;
pub const MASK_MIN_SIZE: u64 = 1 << 5;
pub const MASK_MAX_SIZE: u64 = 1 << 6;
/// `ALLOCINFO_FILTER_MASKS`: every bit the kernel knows.
pub const MASK_ALL: u64 = 0x7f;

// The `_IOC` encoding. Most architectures (x86, arm, arm64, riscv, s390,
// loongarch) use asm-generic's: 2 direction bits at 30, 14 size bits.
// powerpc, mips, sparc and alpha use 3 direction bits at 29, 13 size bits,
// and other values for the directions: `NARROW_IOC`.
const NARROW_IOC: bool = cfg!(any(
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
));
const IOC_SIZEBITS: u32 = if NARROW_IOC { 13 } else { 14 };
const IOC_WRITE: u32 = if NARROW_IOC { 4 } else { 1 };
const IOC_READ: u32 = 2;

/// `_IOC(dir, type, nr, size)` for this architecture.
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: usize) -> u32 {
    assert!(size < (1 << IOC_SIZEBITS));
    (dir << (16 + IOC_SIZEBITS)) | ((size as u32) << 16) | (ty << 8) | nr
}

/// `ALLOCINFO_IOC_BASE`.
pub const IOC_BASE: u32 = 0xA6;
/// `ALLOCINFO_IOC_CONTENT_ID`: `_IOR(0xA6, 0, struct allocinfo_content_id)`.
pub const IOC_CONTENT_ID: u32 = ioc(IOC_READ, IOC_BASE, 0, size_of::<AllocinfoContentId>());
/// `ALLOCINFO_IOC_GET_AT`: `_IOWR(0xA6, 1, struct allocinfo_get_at)`.
pub const IOC_GET_AT: u32 = ioc(
    IOC_READ | IOC_WRITE,
    IOC_BASE,
    1,
    size_of::<AllocinfoGetAt>(),
);
/// `ALLOCINFO_IOC_GET_NEXT`: `_IOR(0xA6, 2, struct allocinfo_tag_data)`.
pub const IOC_GET_NEXT: u32 = ioc(IOC_READ, IOC_BASE, 2, size_of::<AllocinfoTagData>());

/// A name as the kernel stores and compares it: its last 63 bytes,
/// NUL-terminated and zero-padded.
pub fn kernel_str(s: &str) -> [u8; STR_SIZE] {
    let b = s.as_bytes();
    let tail = &b[b.len().saturating_sub(STR_MAX)..];
    let mut out = [0u8; STR_SIZE];
    out[..tail.len()].copy_from_slice(tail);
    out
}

/// The last 63 bytes of a name, as a string (what the ioctl returns for it).
pub fn trimmed(s: &str) -> String {
    let b = s.as_bytes();
    String::from_utf8_lossy(&b[b.len().saturating_sub(STR_MAX)..]).into_owned()
}

/// A name returned by the kernel: the bytes up to the first NUL.
pub fn from_kernel_str(buf: &[u8; STR_SIZE]) -> String {
    let end = buf.iter().position(|&c| c == 0).unwrap_or(STR_SIZE);
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl AllocinfoTag {
    pub const fn zeroed() -> Self {
        AllocinfoTag {
            modname: [0; STR_SIZE],
            function: [0; STR_SIZE],
            filename: [0; STR_SIZE],
            lineno: 0,
        }
    }
}

impl AllocinfoTagData {
    pub const fn zeroed() -> Self {
        AllocinfoTagData {
            tag: AllocinfoTag::zeroed(),
            counter: AllocinfoCounter {
                bytes: 0,
                calls: 0,
                accurate: 0,
                pad: [0; 7],
            },
        }
    }

    /// The record, as the text file would show it (apart from names longer
    /// than 63 characters, which the kernel trims from the front).
    pub fn to_record(&self) -> Record {
        let module = from_kernel_str(&self.tag.modname);
        Record {
            // The kernel prints the same 64-bit sum with %lli.
            bytes: self.counter.bytes as i64,
            calls: self.counter.calls,
            file: from_kernel_str(&self.tag.filename),
            // The kernel's line number is an unsigned int.
            line: u32::try_from(self.tag.lineno).unwrap_or(u32::MAX),
            module: (!module.is_empty()).then_some(module),
            func: from_kernel_str(&self.tag.function),
            extra: if self.counter.accurate == 0 {
                vec![("accurate".into(), "no".into())]
            } else {
                vec![]
            },
        }
    }
}

impl AllocinfoFilter {
    /// No criteria: every record matches.
    pub const fn none() -> Self {
        AllocinfoFilter {
            mask: 0,
            fields: AllocinfoTag::zeroed(),
            min_size: 0,
            max_size: 0,
            inaccurate: 0,
        }
    }
}

/// The kernel part of a [`Filter`]: what the kernel can evaluate, and the
/// criteria it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushdown {
    /// The filter to give to `GET_AT`; `mask == 0` when nothing can be pushed.
    pub filter: AllocinfoFilter,
    /// The criteria given to the kernel, for messages (`module=nfs`, ...).
    pub pushed: Vec<String>,
    /// The criteria the kernel cannot evaluate, for messages.
    pub local: Vec<String>,
}

/// Does a `--file`/`--func` value contain glob syntax (then the kernel,
/// which compares names for equality, cannot evaluate it)?
pub fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// Split `f` into what the kernel can evaluate and what it cannot.
///
/// The kernel takes one value per criterion and compares names for exact
/// equality (on their last 63 characters), so a criterion is pushed only
/// when it has exactly one value and, for names, that value is not a glob.
/// The kernel's answer is a superset of the records that pass `f` (a name
/// longer than 63 characters is matched on its tail only), so the caller
/// must still apply all of `f` to it.
pub fn pushdown(f: &Filter) -> Pushdown {
    let mut k = AllocinfoFilter::none();
    let mut pushed = Vec::new();
    let mut local = Vec::new();
    let quote = |v: &[String]| {
        v.iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(" or ")
    };

    match f.modules.as_slice() {
        [] => {}
        [m] => {
            k.mask |= MASK_MODNAME;
            match m {
                // An empty modname with the MODNAME bit selects built-in code.
                ModuleMatch::BuiltIn => pushed.push("module=built-in".into()),
                ModuleMatch::Name(n) => {
                    k.fields.modname = kernel_str(n);
                    pushed.push(format!("module={n}"));
                }
            }
        }
        more => local.push(format!("module ({} names)", more.len())),
    }
    match f.file_patterns.as_slice() {
        [] => {}
        [p] if !is_glob(p) => {
            k.mask |= MASK_FILENAME;
            k.fields.filename = kernel_str(p);
            pushed.push(format!("file={p}"));
        }
        v => local.push(format!("file {}", quote(v))),
    }
    match f.func_patterns.as_slice() {
        [] => {}
        [p] if !is_glob(p) => {
            k.mask |= MASK_FUNCTION;
            k.fields.function = kernel_str(p);
            pushed.push(format!("func={p}"));
        }
        v => local.push(format!("func {}", quote(v))),
    }
    match f.lines.as_slice() {
        [] => {}
        [l] => {
            k.mask |= MASK_LINENO;
            k.fields.lineno = u64::from(*l);
            pushed.push(format!("line={l}"));
        }
        more => local.push(format!("line ({} values)", more.len())),
    }
    if let Some(accurate) = f.accurate {
        k.mask |= MASK_INACCURATE;
        k.inaccurate = u64::from(!accurate);
        pushed.push(if accurate { "accurate" } else { "inaccurate" }.into());
    }
    if let Some(min) = f.min_size {
        k.mask |= MASK_MIN_SIZE;
        k.min_size = min;
        pushed.push(format!("min-size={min}"));
    }
    if let Some(max) = f.max_size {
        k.mask |= MASK_MAX_SIZE;
        k.max_size = max;
        pushed.push(format!("max-size={max}"));
    }
    Pushdown {
        filter: k,
        pushed,
        local,
    }
}

/// The three commands of the interface on one open file. All state (the
/// position and the sticky filter of `GET_AT`) belongs to the open file.
pub trait Device {
    fn content_id(&mut self) -> io::Result<u64>;
    fn get_at(&mut self, req: &mut AllocinfoGetAt) -> io::Result<()>;
    fn get_next(&mut self, out: &mut AllocinfoTagData) -> io::Result<()>;
}

/// `/proc/allocinfo` opened for the ioctls.
#[derive(Debug)]
pub struct ProcFile(File);

impl ProcFile {
    pub fn open(path: &Path) -> io::Result<Self> {
        File::open(path).map(ProcFile)
    }

    /// `ioctl(fd, cmd, arg)`; `T` is the command's structure.
    fn ioctl<T>(&mut self, cmd: u32, arg: &mut T) -> io::Result<()> {
        sys::ioctl(&self.0, cmd, (arg as *mut T).cast())
    }
}

#[cfg(target_os = "linux")]
mod sys {
    use std::os::fd::AsRawFd;

    pub fn ioctl(f: &std::fs::File, cmd: u32, arg: *mut libc::c_void) -> std::io::Result<()> {
        // SAFETY: `arg` points to a live, exclusively borrowed #[repr(C)]
        // structure of the size encoded in `cmd` (checked above against the
        // uapi header); every bit pattern is valid for its integer fields.
        let rc = unsafe { libc::ioctl(f.as_raw_fd(), cmd as libc::Ioctl, arg) };
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    pub fn ioctl(_: &std::fs::File, _: u32, _: *mut std::ffi::c_void) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

impl Device for ProcFile {
    fn content_id(&mut self) -> io::Result<u64> {
        let mut c = AllocinfoContentId::default();
        self.ioctl(IOC_CONTENT_ID, &mut c)?;
        Ok(c.id)
    }
    fn get_at(&mut self, req: &mut AllocinfoGetAt) -> io::Result<()> {
        self.ioctl(IOC_GET_AT, req)
    }
    fn get_next(&mut self, out: &mut AllocinfoTagData) -> io::Result<()> {
        self.ioctl(IOC_GET_NEXT, out)
    }
}

/// How often [`walk`] reads again when modules came or went during a walk.
pub const MAX_RETRIES: usize = 10;
/// A bound on the records of one walk, so that a kernel that never ends
/// the list cannot make the tool loop forever.
pub const MAX_RECORDS: usize = 10_000_000;

/// `ENOIOCTLCMD`, the kernel's "unknown ioctl" (normally turned into ENOTTY).
pub const ENOIOCTLCMD: i32 = 515;

#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    #[error("ioctl {op} failed: {err}")]
    Ioctl {
        op: &'static str,
        #[source]
        err: io::Error,
    },
    #[error(
        "modules were loaded or unloaded during each of {} reads (CONTENT_ID changed)",
        MAX_RETRIES + 1
    )]
    Unstable,
    #[error("more than {MAX_RECORDS} records: GET_NEXT does not end")]
    Endless,
}

impl WalkError {
    /// Did the kernel refuse the interface itself (no such ioctl, or a
    /// layout or filter it does not know)? Then the text file is the way.
    pub fn is_refusal(&self) -> bool {
        match self {
            WalkError::Ioctl { err, .. } => is_refusal(err),
            _ => false,
        }
    }
}

/// ENOTTY (no such ioctl, e.g. an older kernel, another struct layout, or
/// not a /proc file), ENOIOCTLCMD, EINVAL (mask bits or values this kernel
/// does not accept), ENOSYS and EOPNOTSUPP.
pub fn is_refusal(e: &io::Error) -> bool {
    if e.kind() == io::ErrorKind::Unsupported {
        return true;
    }
    #[cfg(target_os = "linux")]
    if let Some(n) = e.raw_os_error() {
        return [
            libc::ENOTTY,
            libc::EINVAL,
            libc::ENOSYS,
            libc::EOPNOTSUPP,
            ENOIOCTLCMD,
        ]
        .contains(&n);
    }
    false
}

fn is_enoent(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

/// Every record that matches `filter`, read consistently: CONTENT_ID,
/// `GET_AT(pos 0, filter)`, `GET_NEXT` until ENOENT, CONTENT_ID again; if the
/// two ids differ (a module was loaded or unloaded), read again, at most
/// [`MAX_RETRIES`] more times.
pub fn walk<D: Device>(
    dev: &mut D,
    filter: &AllocinfoFilter,
) -> Result<Vec<AllocinfoTagData>, WalkError> {
    let fail = |op| move |err| WalkError::Ioctl { op, err };
    for _ in 0..=MAX_RETRIES {
        let before = dev.content_id().map_err(fail("CONTENT_ID"))?;
        let mut out = Vec::new();
        let mut req = AllocinfoGetAt {
            pos: 0,
            filter: *filter,
            data: AllocinfoTagData::zeroed(),
        };
        match dev.get_at(&mut req) {
            Ok(()) => {
                out.push(req.data);
                loop {
                    let mut d = AllocinfoTagData::zeroed();
                    match dev.get_next(&mut d) {
                        Ok(()) => out.push(d),
                        Err(e) if is_enoent(&e) => break,
                        Err(e) => return Err(fail("GET_NEXT")(e)),
                    }
                    if out.len() > MAX_RECORDS {
                        return Err(WalkError::Endless);
                    }
                }
            }
            // No record at all, or none that matches.
            Err(e) if is_enoent(&e) => {}
            Err(e) => return Err(fail("GET_AT")(e)),
        }
        if dev.content_id().map_err(fail("CONTENT_ID"))? == before {
            return Ok(out);
        }
    }
    Err(WalkError::Unstable)
}

/// Test double: a kernel's records behind the three commands, with the
/// kernel's filter semantics (also used by the tests of `live`).
#[cfg(test)]
pub(crate) mod fake {
    use super::*;

    pub struct FakeDevice {
        pub records: Vec<AllocinfoTagData>,
        /// Returned by successive CONTENT_ID calls (the last one repeats).
        pub ids: Vec<u64>,
        /// Error returned by every ioctl, if set.
        pub refuse: Option<i32>,
        pub calls: Vec<&'static str>,
        filter: AllocinfoFilter,
        next: Option<usize>,
    }

    impl FakeDevice {
        pub fn new(records: &[Record]) -> Self {
            FakeDevice {
                records: records.iter().map(tag_data).collect(),
                ids: vec![7],
                refuse: None,
                calls: vec![],
                filter: AllocinfoFilter::none(),
                next: None,
            }
        }

        fn check(&mut self, op: &'static str) -> io::Result<()> {
            self.calls.push(op);
            match self.refuse {
                Some(e) => Err(io::Error::from_raw_os_error(e)),
                None => Ok(()),
            }
        }

        fn matching(&self, from: usize) -> Option<usize> {
            (from..self.records.len()).find(|&i| matches(&self.filter, &self.records[i]))
        }
    }

    /// The kernel's record for a parsed text record.
    pub fn tag_data(r: &Record) -> AllocinfoTagData {
        let mut d = AllocinfoTagData::zeroed();
        d.tag.modname = kernel_str(r.module.as_deref().unwrap_or(""));
        d.tag.function = kernel_str(&r.func);
        d.tag.filename = kernel_str(&r.file);
        d.tag.lineno = r.line.into();
        d.counter.bytes = r.bytes as u64;
        d.counter.calls = r.calls;
        d.counter.accurate = r.is_accurate().into();
        d
    }

    /// mm/alloc_tag.c's matches_filter(), on the data the kernel returns.
    fn matches(f: &AllocinfoFilter, d: &AllocinfoTagData) -> bool {
        let (m, t) = (f.mask, &f.fields);
        (m & MASK_MODNAME == 0 || d.tag.modname == t.modname)
            && (m & MASK_FUNCTION == 0 || d.tag.function == t.function)
            && (m & MASK_FILENAME == 0 || d.tag.filename == t.filename)
            && (m & MASK_LINENO == 0 || d.tag.lineno == t.lineno)
            && (m & MASK_INACCURATE == 0 || (d.counter.accurate == 0) == (f.inaccurate != 0))
            && (m & MASK_MIN_SIZE == 0 || d.counter.bytes >= f.min_size)
            && (m & MASK_MAX_SIZE == 0 || d.counter.bytes <= f.max_size)
    }

    impl Device for FakeDevice {
        fn content_id(&mut self) -> io::Result<u64> {
            self.check("CONTENT_ID")?;
            let id = self.ids[0];
            if self.ids.len() > 1 {
                self.ids.remove(0);
            }
            Ok(id)
        }
        fn get_at(&mut self, req: &mut AllocinfoGetAt) -> io::Result<()> {
            self.check("GET_AT")?;
            if req.filter.mask & !MASK_ALL != 0 {
                return Err(io::Error::from_raw_os_error(22));
            }
            if req.pos >= self.records.len() as u64 {
                return Err(io::ErrorKind::NotFound.into());
            }
            self.filter = req.filter;
            let mut at = self.matching(0);
            for _ in 0..req.pos {
                at = at.and_then(|i| self.matching(i + 1));
            }
            let i = at.ok_or(io::ErrorKind::NotFound)?;
            req.data = self.records[i];
            self.next = Some(i + 1);
            Ok(())
        }
        fn get_next(&mut self, out: &mut AllocinfoTagData) -> io::Result<()> {
            self.check("GET_NEXT")?;
            match self.matching(self.next.unwrap_or(0)) {
                Some(i) => {
                    *out = self.records[i];
                    self.next = Some(i + 1);
                    Ok(())
                }
                None => {
                    self.next = None;
                    Err(io::ErrorKind::NotFound.into())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::{tag_data, FakeDevice};
    use super::*;
    use crate::parse::parse_str;

    /// asm-generic `_IOC`, written out, independent of `ioc()`.
    fn generic_ioc(dir: u32, nr: u32, size: u32) -> u32 {
        (dir << 30) | (size << 16) | (0xA6 << 8) | nr
    }

    #[test]
    fn ioctl_numbers_from_the_ioc_encoding() {
        assert_eq!(generic_ioc(2, 0, 8), 0x8008_A600);
        assert_eq!(generic_ioc(3, 1, 464), 0xC1D0_A601);
        assert_eq!(generic_ioc(2, 2, 224), 0x80E0_A602);
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "x86"))]
        {
            assert_eq!(IOC_CONTENT_ID, 0x8008_A600);
            assert_eq!(IOC_GET_AT, 0xC1D0_A601);
            assert_eq!(IOC_GET_NEXT, 0x80E0_A602);
        }
        // The v2..v8 postings (tag 208, get_at 472, tag_data 232) had other
        // numbers for the two commands whose structures changed.
        assert_ne!(IOC_GET_AT, ioc(3, 0xA6, 1, 472));
        assert_ne!(IOC_GET_NEXT, ioc(2, 0xA6, 2, 232));
    }

    #[test]
    fn layout_of_the_merged_header() {
        assert_eq!(size_of::<AllocinfoTag>(), 200);
        assert_eq!(size_of::<AllocinfoCounter>(), 24);
        assert_eq!(size_of::<AllocinfoTagData>(), 224);
        assert_eq!(size_of::<AllocinfoFilter>(), 232);
        assert_eq!(size_of::<AllocinfoGetAt>(), 464);
        assert_eq!(offset_of!(AllocinfoGetAt, data), 240);
    }

    #[test]
    fn kernel_strings_keep_the_last_63_characters() {
        let short = kernel_str("mm/slub.c");
        assert_eq!(&short[..10], b"mm/slub.c\0");
        assert!(short[9..].iter().all(|&c| c == 0));
        assert_eq!(from_kernel_str(&short), "mm/slub.c");
        let long: String = (0..100)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let k = kernel_str(&long);
        assert_eq!(k[63], 0);
        assert_eq!(from_kernel_str(&k), &long[37..]);
        assert_eq!(trimmed(&long), &long[37..]);
        assert_eq!(trimmed("x"), "x");
        // 64 bytes without a NUL (never from the kernel): taken whole.
        assert_eq!(from_kernel_str(&[b'z'; 64]).len(), 64);
    }

    #[test]
    fn tag_data_becomes_the_text_record() {
        let p = parse_str(
            "  4096 1 drivers/net/virtio_net.c:2510 [virtio_net] func:add_recvbuf \n  \
             -12 3 mm/percpu.c:1891 func:pcpu_alloc_noprof accurate:no \n",
        );
        for r in &p.records {
            assert_eq!(&tag_data(r).to_record(), r);
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn pushdown_exact_names_sizes_lines_accuracy() {
        let f = Filter::new(&s(&["virtio-net"]), &s(&["drivers/net/virtio_net.c"]), &[])
            .unwrap()
            .with_lines(&[2510])
            .with_sizes(Some(4096), Some(1 << 20))
            .with_accurate(Some(false));
        let p = pushdown(&f);
        assert_eq!(
            p.filter.mask,
            MASK_MODNAME
                | MASK_FILENAME
                | MASK_LINENO
                | MASK_MIN_SIZE
                | MASK_MAX_SIZE
                | MASK_INACCURATE
        );
        assert_eq!(from_kernel_str(&p.filter.fields.modname), "virtio_net");
        assert_eq!(
            from_kernel_str(&p.filter.fields.filename),
            "drivers/net/virtio_net.c"
        );
        assert_eq!(p.filter.fields.lineno, 2510);
        assert_eq!((p.filter.min_size, p.filter.max_size), (4096, 1 << 20));
        assert_eq!(p.filter.inaccurate, 1);
        assert!(p.local.is_empty());
        assert_eq!(
            p.pushed,
            s(&[
                "module=virtio_net",
                "file=drivers/net/virtio_net.c",
                "line=2510",
                "inaccurate",
                "min-size=4096",
                "max-size=1048576"
            ])
        );
        let acc = pushdown(&Filter::default().with_accurate(Some(true)));
        assert_eq!(
            (acc.filter.mask, acc.filter.inaccurate),
            (MASK_INACCURATE, 0)
        );
    }

    #[test]
    fn pushdown_leaves_globs_and_alternatives_to_userspace() {
        let f = Filter::new(&[], &s(&["drivers/net/*"]), &s(&["kmalloc_reserve"])).unwrap();
        let p = pushdown(&f);
        assert_eq!(p.filter.mask, MASK_FUNCTION);
        assert_eq!(p.pushed, s(&["func=kmalloc_reserve"]));
        assert_eq!(p.local, s(&["file 'drivers/net/*'"]));

        let f = Filter::new(&s(&["a", "b"]), &s(&["x.c", "y.c"]), &s(&["f{1,2}"]))
            .unwrap()
            .with_lines(&[1, 2]);
        let p = pushdown(&f);
        assert_eq!(p.filter.mask, 0);
        assert!(p.pushed.is_empty());
        assert_eq!(
            p.local,
            s(&[
                "module (2 names)",
                "file 'x.c' or 'y.c'",
                "func 'f{1,2}'",
                "line (2 values)"
            ])
        );
        assert_eq!(pushdown(&Filter::default()).filter, AllocinfoFilter::none());
        for g in ["*", "a?", "[ab]", "{a,b}", "a\\*"] {
            assert!(is_glob(g), "{g}");
        }
        assert!(!is_glob("fs/ext4/super.c"));
    }

    #[test]
    fn pushdown_built_in_is_an_empty_modname() {
        let p = pushdown(&Filter::new(&s(&["built-in"]), &[], &[]).unwrap());
        assert_eq!(p.filter.mask, MASK_MODNAME);
        assert_eq!(p.filter.fields.modname, [0; STR_SIZE]);
        assert_eq!(p.pushed, s(&["module=built-in"]));
    }

    fn sample() -> Vec<Record> {
        parse_str(
            "   100 1 mm/a.c:1 func:fa \n   200 2 mm/b.c:2 func:fb accurate:no \n   \
             300 3 drivers/net/c.c:3 [cm] func:fc \n   400 4 mm/b.c:9 func:fb \n",
        )
        .records
    }

    #[test]
    fn walk_reads_all_matching_records_in_order() {
        let recs = sample();
        let mut dev = FakeDevice::new(&recs);
        let got = walk(&mut dev, &AllocinfoFilter::none()).unwrap();
        let got: Vec<Record> = got.iter().map(|d| d.to_record()).collect();
        assert_eq!(got, recs);
        assert_eq!(
            dev.calls,
            [
                "CONTENT_ID",
                "GET_AT",
                "GET_NEXT",
                "GET_NEXT",
                "GET_NEXT",
                "GET_NEXT",
                "CONTENT_ID"
            ]
        );

        let f = Filter::new(&[], &s(&["mm/b.c"]), &[]).unwrap();
        let got = walk(&mut dev, &pushdown(&f).filter).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].to_record(), recs[3]);

        let f = Filter::default().with_sizes(Some(200), Some(300));
        let got = walk(&mut dev, &pushdown(&f).filter).unwrap();
        assert_eq!(
            got.iter().map(|d| d.counter.bytes).collect::<Vec<_>>(),
            [200, 300]
        );

        // Nothing matches: GET_AT gives ENOENT, the answer is empty.
        let f = Filter::new(&s(&["nope"]), &[], &[]).unwrap();
        assert!(walk(&mut dev, &pushdown(&f).filter).unwrap().is_empty());
        assert!(walk(&mut FakeDevice::new(&[]), &AllocinfoFilter::none())
            .unwrap()
            .is_empty());
    }

    #[test]
    fn walk_retries_while_the_content_id_changes() {
        let recs = sample();
        let mut dev = FakeDevice::new(&recs);
        dev.ids = vec![1, 2, 2, 3, 3, 3];
        let got = walk(&mut dev, &AllocinfoFilter::none()).unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(dev.calls.iter().filter(|c| **c == "GET_AT").count(), 3);

        let mut dev = FakeDevice::new(&recs);
        dev.ids = (0..100).collect();
        let e = walk(&mut dev, &AllocinfoFilter::none()).unwrap_err();
        assert!(matches!(e, WalkError::Unstable));
        assert_eq!(
            dev.calls.iter().filter(|c| **c == "GET_AT").count(),
            MAX_RETRIES + 1
        );
        assert!(!e.is_refusal());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn refusals_are_recognised() {
        let mut dev = FakeDevice::new(&sample());
        dev.refuse = Some(libc::ENOTTY);
        let e = walk(&mut dev, &AllocinfoFilter::none()).unwrap_err();
        assert!(e.is_refusal(), "{e}");
        assert!(e.to_string().starts_with("ioctl CONTENT_ID failed"));
        let mut bad = AllocinfoFilter::none();
        bad.mask = 1 << 7;
        let e = walk(&mut FakeDevice::new(&sample()), &bad).unwrap_err();
        assert!(e.is_refusal() && e.to_string().starts_with("ioctl GET_AT"));
        assert!(!is_refusal(&io::Error::from_raw_os_error(14))); // EFAULT
    }

    #[test]
    fn a_regular_file_refuses_the_ioctl() {
        let mut t = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut t, b"allocinfo - version: 1.0\n").unwrap();
        let mut dev = ProcFile::open(t.path()).unwrap();
        let e = walk(&mut dev, &AllocinfoFilter::none()).unwrap_err();
        assert!(e.is_refusal(), "{e}");
    }
}
