// SPDX-License-Identifier: GPL-2.0

//! The `ioctl()` interface of `/proc/allocinfo`
//! (`include/uapi/linux/alloc_tag.h`, upstream's layout): the commands, and
//! the structures as byte buffers read from and written to user space,
//! with their fields at the offsets the header gives them.  Byte arrays,
//! not the structures themselves: `struct allocinfo_counter` has padding,
//! which a Rust value of it may leave uninitialised (so it is no
//! `AsBytes`), while a byte array is `FromBytes` and `AsBytes` as it is.

use core::mem::{offset_of, size_of};
use kernel::bindings;
use kernel::bindings::{
    allocinfo_content_id, allocinfo_counter, allocinfo_filter, allocinfo_get_at, allocinfo_tag,
    allocinfo_tag_data,
};

/// `ALLOCINFO_IOC_CONTENT_ID`: a number that changes when modules come or go.
pub(crate) const IOC_CONTENT_ID: u32 = bindings::ALLOCINFO_IOC_CONTENT_ID;
/// `ALLOCINFO_IOC_GET_AT`: the call site at a position, with a filter.
pub(crate) const IOC_GET_AT: u32 = bindings::ALLOCINFO_IOC_GET_AT;
/// `ALLOCINFO_IOC_GET_NEXT`: the next call site.
pub(crate) const IOC_GET_NEXT: u32 = bindings::ALLOCINFO_IOC_GET_NEXT;

/// The bytes of a name field, NUL included.
pub(crate) const STR_SIZE: usize = bindings::ALLOCINFO_STR_SIZE as usize;

/// The filter's mask bits.
pub(crate) const MASK_MODNAME: u64 = 1 << bindings::ALLOCINFO_FILTER_MODNAME;
pub(crate) const MASK_FUNCTION: u64 = 1 << bindings::ALLOCINFO_FILTER_FUNCTION;
pub(crate) const MASK_FILENAME: u64 = 1 << bindings::ALLOCINFO_FILTER_FILENAME;
pub(crate) const MASK_LINENO: u64 = 1 << bindings::ALLOCINFO_FILTER_LINENO;
pub(crate) const MASK_INACCURATE: u64 = 1 << bindings::ALLOCINFO_FILTER_INACCURATE;
pub(crate) const MASK_MIN_SIZE: u64 = 1 << bindings::ALLOCINFO_FILTER_MIN_SIZE;
pub(crate) const MASK_MAX_SIZE: u64 = 1 << bindings::ALLOCINFO_FILTER_MAX_SIZE;
/// Every bit the interface defines.
pub(crate) const MASKS: u64 = bindings::ALLOCINFO_FILTER_MASKS;

/// `struct allocinfo_content_id`.
pub(crate) type ContentIdBuf = [u8; size_of::<allocinfo_content_id>()];
/// `struct allocinfo_get_at`.
pub(crate) type GetAtBuf = [u8; size_of::<allocinfo_get_at>()];
/// `struct allocinfo_tag_data`.
pub(crate) type TagDataBuf = [u8; size_of::<allocinfo_tag_data>()];

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[off..off + 8]);
    u64::from_ne_bytes(v)
}

fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

/// A name as the interface compares and returns it: its last
/// `STR_SIZE - 1` bytes.
pub(crate) fn name_suffix(name: &[u8]) -> &[u8] {
    &name[name.len().saturating_sub(STR_SIZE - 1)..]
}

/// A name field of the user's filter: its bytes up to the first NUL (all
/// `STR_SIZE` of them if there is none, which then matches no name).
fn name_at(b: &[u8], off: usize) -> &[u8] {
    let field = &b[off..off + STR_SIZE];
    let len = field.iter().position(|&c| c == 0).unwrap_or(STR_SIZE);
    &field[..len]
}

/// The filter of a `GET_AT` call.
pub(crate) struct Filter<'a> {
    pub(crate) mask: u64,
    pub(crate) modname: &'a [u8],
    pub(crate) function: &'a [u8],
    pub(crate) filename: &'a [u8],
    pub(crate) lineno: u64,
    pub(crate) min_size: u64,
    pub(crate) max_size: u64,
    pub(crate) inaccurate: bool,
}

/// `pos` of a `struct allocinfo_get_at`.
pub(crate) fn get_at_pos(b: &GetAtBuf) -> u64 {
    u64_at(b, offset_of!(allocinfo_get_at, pos))
}

/// The filter of a `struct allocinfo_get_at`.
pub(crate) fn get_at_filter(b: &GetAtBuf) -> Filter<'_> {
    let f = offset_of!(allocinfo_get_at, filter);
    let t = f + offset_of!(allocinfo_filter, fields);
    Filter {
        mask: u64_at(b, f + offset_of!(allocinfo_filter, mask)),
        modname: name_at(b, t + offset_of!(allocinfo_tag, modname)),
        function: name_at(b, t + offset_of!(allocinfo_tag, function)),
        filename: name_at(b, t + offset_of!(allocinfo_tag, filename)),
        lineno: u64_at(b, t + offset_of!(allocinfo_tag, lineno)),
        min_size: u64_at(b, f + offset_of!(allocinfo_filter, min_size)),
        max_size: u64_at(b, f + offset_of!(allocinfo_filter, max_size)),
        inaccurate: u64_at(b, f + offset_of!(allocinfo_filter, inaccurate)) != 0,
    }
}

/// The filter part of a `struct allocinfo_get_at`, to keep with the file.
pub(crate) type FilterBuf = [u8; size_of::<allocinfo_filter>()];

/// Copies the filter of `b` out, and back into a `GetAtBuf` for reading.
pub(crate) fn filter_bytes(b: &GetAtBuf) -> FilterBuf {
    let f = offset_of!(allocinfo_get_at, filter);
    let mut out = [0u8; size_of::<allocinfo_filter>()];
    out.copy_from_slice(&b[f..f + size_of::<allocinfo_filter>()]);
    out
}

/// A `GetAtBuf` holding only filter `f` (for reading it back).
pub(crate) fn with_filter(f: &FilterBuf) -> GetAtBuf {
    let mut b = [0u8; size_of::<allocinfo_get_at>()];
    let o = offset_of!(allocinfo_get_at, filter);
    b[o..o + f.len()].copy_from_slice(f);
    b
}

/// One call site as the interface returns it.
pub(crate) struct Record<'a> {
    pub(crate) module: &'a [u8],
    pub(crate) function: &'a [u8],
    pub(crate) file: &'a [u8],
    pub(crate) line: u64,
    pub(crate) bytes: u64,
    pub(crate) calls: u64,
    pub(crate) accurate: bool,
}

fn put_name(b: &mut [u8], off: usize, name: &[u8]) {
    let field = &mut b[off..off + STR_SIZE];
    let s = name_suffix(name);
    field.fill(0);
    field[..s.len()].copy_from_slice(s);
}

/// Writes `r` as a `struct allocinfo_tag_data` at `off` of `b`: names cut
/// to their last `STR_SIZE - 1` bytes, NUL-terminated and zero-padded.
fn put_record(b: &mut [u8], off: usize, r: &Record<'_>) {
    let c = off + offset_of!(allocinfo_tag_data, counter);
    b[off..off + size_of::<allocinfo_tag_data>()].fill(0);
    put_name(b, off + offset_of!(allocinfo_tag, modname), r.module);
    put_name(b, off + offset_of!(allocinfo_tag, function), r.function);
    put_name(b, off + offset_of!(allocinfo_tag, filename), r.file);
    put_u64(b, off + offset_of!(allocinfo_tag, lineno), r.line);
    put_u64(b, c + offset_of!(allocinfo_counter, bytes), r.bytes);
    put_u64(b, c + offset_of!(allocinfo_counter, calls), r.calls);
    b[c + offset_of!(allocinfo_counter, accurate)] = r.accurate.into();
}

/// Sets `data` of a `struct allocinfo_get_at`.
pub(crate) fn set_get_at_data(b: &mut GetAtBuf, data: &TagDataBuf) {
    let o = offset_of!(allocinfo_get_at, data);
    b[o..o + data.len()].copy_from_slice(data);
}

/// A `struct allocinfo_tag_data`.
pub(crate) fn tag_data(r: &Record<'_>) -> TagDataBuf {
    let mut b = [0u8; size_of::<allocinfo_tag_data>()];
    put_record(&mut b, 0, r);
    b
}

/// A `struct allocinfo_content_id`.
pub(crate) fn content_id(id: u64) -> ContentIdBuf {
    id.to_ne_bytes()
}
