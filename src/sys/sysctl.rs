// SPDX-License-Identifier: GPL-2.0

//! One sysctl file, e.g. `/proc/sys/vm/mem_profiling`.

use core::{ffi::c_void, marker::PhantomData, ptr::NonNull};
use kernel::{
    alloc::{flags::GFP_KERNEL, KBox},
    bindings,
    error::code::{EINVAL, ENOMEM, EPERM},
    error::Result,
    ffi::c_int,
    str::CStr,
    sync::Arc,
};
// 7.3's `CStr` is core's, with the kernel's methods in a trait.
#[cfg(allocprof_tags)]
use kernel::str::CStrExt as _;

/// The state a sysctl file shows and changes: the file's data, which its
/// handler gets through `ctl_table.data`.
pub(crate) trait SysctlValue: Send + Sync + 'static {
    /// Writes the current value (with its newline) into `buf`; returns the
    /// number of bytes.
    fn show(&self, buf: &mut [u8; 16]) -> usize;
    /// Takes a whole write from a writer with `CAP_SYS_ADMIN` (the
    /// handler refuses the others with `EPERM`, as upstream's
    /// `vm.mem_profiling` does), made to `file`; an error is returned to
    /// the writer unchanged.
    fn store(&self, input: &[u8], file: &SysctlFile<'_>) -> Result;
}

/// The sysctl file a write is being made to, for the value to change what
/// the file allows: valid for the handler's call.
///
/// # Invariants
///
/// `table` is the registered table of a [`Sysctl`], whose handler is
/// running.
pub(crate) struct SysctlFile<'a> {
    table: NonNull<bindings::ctl_table>,
    _call: PhantomData<&'a ()>,
}

impl SysctlFile<'_> {
    /// Makes the file read-only from now on (root included).
    pub(crate) fn set_read_only(&self) {
        let table = self.table.as_ptr();
        // SAFETY: `table` is our registered table, freed only after its handler
        // returns (type invariant), with no reference to it; the sysctl core
        // only reads `mode`, and an aligned 16-bit store cannot tear.
        unsafe { core::ptr::write_volatile(core::ptr::addr_of_mut!((*table).mode), 0o444) };
    }
}

/// # Safety
///
/// Called by the sysctl core with the table of a [`Sysctl<V>`], a kernel
/// buffer of `*lenp` bytes and valid length and position pointers.
unsafe extern "C" fn handler<V: SysctlValue>(
    table: *const bindings::ctl_table,
    write: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut bindings::loff_t,
) -> c_int {
    // SAFETY: Valid for the call, as the sysctl core guarantees.
    let (len, pos) = unsafe { (&mut *lenp, &mut *ppos) };
    // `table` is the table of a `Sysctl<V>`, whose `data` points to the `V`
    // the `Sysctl` holds a reference on (type invariant); the `Sysctl`
    // unregisters the table, which waits for running handlers, before it
    // drops that reference.
    // SAFETY: So `data` is a live `V` during this call.
    let value = unsafe { &*(*table).data.cast::<V>() };
    if write != 0 {
        // As upstream's `proc_do_static_key()`: the file's mode lets root
        // write, the capability decides; without it nothing changes.
        // SAFETY: `capable()` may be called from any process context.
        if !unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as c_int) } {
            return EPERM.to_errno();
        }
        // A value is written in one piece.
        if *pos != 0 {
            return EINVAL.to_errno();
        }
        // SAFETY: The sysctl core copied the write into `buffer`, `*len`
        // bytes long.
        let input = unsafe { core::slice::from_raw_parts(buffer.cast::<u8>(), *len) };
        let Some(table) = NonNull::new(table.cast_mut()) else {
            return EINVAL.to_errno();
        };
        // INVARIANT: The sysctl core hands the handler the table it
        // registered: the `Sysctl<V>`'s, which its `drop` unregisters, and
        // so waits for this call, before freeing it.
        let file = SysctlFile {
            table,
            _call: PhantomData,
        };
        return match value.store(input, &file) {
            Ok(()) => {
                *pos += *len as bindings::loff_t;
                0
            }
            Err(e) => e.to_errno(),
        };
    }
    let mut text = [0u8; 16];
    let n = value.show(&mut text);
    let off = (*pos as usize).min(n);
    let count = (*len).min(n - off);
    // SAFETY: `buffer` has room for `*len` bytes and `count <= *len`.
    unsafe { core::ptr::copy_nonoverlapping(text.as_ptr().add(off), buffer.cast::<u8>(), count) };
    *len = count;
    *pos += count as bindings::loff_t;
    0
}

/// A registered sysctl file showing and changing a `V`; unregistered on
/// drop, before its reference on the `V` goes.
///
/// # Invariants
///
/// `table` is registered (`header`), and its `data` points to `_value`'s
/// `V`.
pub(crate) struct Sysctl<V: SysctlValue> {
    header: NonNull<bindings::ctl_table_header>,
    /// The table the sysctl core keeps using while registered: a leaked
    /// `KBox`, taken back in `drop`.
    table: NonNull<bindings::ctl_table>,
    /// What the handler gets; dropped after `drop` unregistered the table.
    _value: Arc<V>,
}

// SAFETY: The header and table are only used to unregister, which any
// thread may do; `V` is `Send + Sync`.
unsafe impl<V: SysctlValue> Send for Sysctl<V> {}
// SAFETY: No method takes `&self`; `V` is `Sync`.
unsafe impl<V: SysctlValue> Sync for Sysctl<V> {}

impl<V: SysctlValue + 'static> Sysctl<V> {
    /// Registers `/proc/sys/<dir>/<name>` with permissions `mode`, showing
    /// and changing `value`.
    pub(crate) fn register(
        dir: &'static CStr,
        name: &'static CStr,
        mode: u16,
        value: Arc<V>,
    ) -> Result<Self> {
        let table = KBox::new(
            bindings::ctl_table {
                procname: name.as_char_ptr(),
                // The handler's `V`, which `value` keeps alive.
                data: core::ptr::from_ref::<V>(&value).cast_mut().cast::<c_void>(),
                mode,
                proc_handler: Some(handler::<V>),
                // SAFETY: All-zero is a valid rest of a `ctl_table`.
                ..unsafe { core::mem::zeroed() }
            },
            GFP_KERNEL,
        )?;
        let table = NonNull::from(KBox::leak(table));
        // SAFETY: `dir` lives for the whole program; the table stays where it
        // is until we take it back after unregistering it in `drop`.
        let header = unsafe { bindings::register_sysctl_sz(dir.as_char_ptr(), table.as_ptr(), 1) };
        let Some(header) = NonNull::new(header) else {
            // SAFETY: The table was leaked above and the kernel did not keep it.
            drop(unsafe { KBox::from_raw(table.as_ptr()) });
            return Err(ENOMEM);
        };
        // INVARIANT: Registered, with `data` pointing to `value`'s `V`.
        Ok(Self {
            header,
            table,
            _value: value,
        })
    }
}

impl<V: SysctlValue> Drop for Sysctl<V> {
    fn drop(&mut self) {
        // SAFETY: `header` came from `register_sysctl_sz`; after this returns
        // the table is no longer used.
        unsafe { bindings::unregister_sysctl_table(self.header.as_ptr()) };
        // SAFETY: The table was leaked from a `KBox` in `register` and the
        // sysctl core no longer uses it.
        drop(unsafe { KBox::from_raw(self.table.as_ptr()) });
        // `self._value` goes after this: no handler runs any more.
    }
}
