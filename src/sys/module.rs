// SPDX-License-Identifier: GPL-2.0

//! The kernel's module notifier (`register_module_notifier()`): other
//! modules loading and going away.

use core::ptr::NonNull;
use kernel::{
    alloc::{flags::GFP_KERNEL, KBox},
    bindings,
    error::{to_result, Result},
    ffi::{c_int, c_ulong, c_void},
    sync::Arc,
};

/// What is told of other modules' loads and unloads.
pub(crate) trait ModuleEvents: Send + Sync + 'static {
    /// A module is about to run its init (`MODULE_STATE_COMING`).
    fn coming(&self);
    /// The module `name` went away (`MODULE_STATE_GOING`: after its exit,
    /// or after its init failed), after the kernel's own notifiers (those
    /// of `lib/alloc_tag_rust.c` among them) saw it go.
    fn going(&self, name: &[u8]);
}

/// A registered notifier block; `value` is what its callback tells.
#[repr(C)]
struct Block<V> {
    nb: bindings::notifier_block,
    value: Arc<V>,
}

/// # Safety
///
/// Called by the module notifier chain with the block of a
/// [`ModuleNotifier<V>`] and, for the states it acts on, a module.
unsafe extern "C" fn notify<V: ModuleEvents>(
    nb: *mut bindings::notifier_block,
    state: c_ulong,
    data: *mut c_void,
) -> c_int {
    // `nb` is the first field of a `Block<V>` (`repr(C)`), which the
    // `ModuleNotifier` unregisters, waiting for running callbacks, before
    // freeing it.
    // SAFETY: So the block, and the `V` it holds a reference on, are live.
    let value = unsafe { &*(*nb.cast::<Block<V>>()).value };
    match state as bindings::module_state {
        bindings::module_state_MODULE_STATE_COMING => value.coming(),
        bindings::module_state_MODULE_STATE_GOING => {
            // SAFETY: For these states `data` is the module, whose `name`
            // is a NUL-terminated array, live during the call.
            let name =
                unsafe { super::compat::c_bytes((*data.cast::<bindings::module>()).name.as_ptr()) };
            value.going(name);
        }
        _ => {}
    }
    bindings::NOTIFY_DONE as c_int
}

/// A module notifier telling a `V`; unregistered on drop, before its
/// reference on the `V` goes.
///
/// # Invariants
///
/// `block` is a leaked `KBox<Block<V>>`, registered with the module
/// notifier chain.
pub(crate) struct ModuleNotifier<V: ModuleEvents> {
    block: NonNull<Block<V>>,
}

// SAFETY: The block is only handed to the kernel (to unregister it), which
// any thread may do; `V` is `Send + Sync`.
unsafe impl<V: ModuleEvents> Send for ModuleNotifier<V> {}
// SAFETY: Nothing is done through a shared reference.
unsafe impl<V: ModuleEvents> Sync for ModuleNotifier<V> {}

impl<V: ModuleEvents> ModuleNotifier<V> {
    /// Registers a notifier telling `value`, called after the kernel's own
    /// (priority -1; theirs is 0).
    pub(crate) fn register(value: Arc<V>) -> Result<Self> {
        let block = KBox::new(
            Block {
                nb: bindings::notifier_block {
                    notifier_call: Some(notify::<V>),
                    next: core::ptr::null_mut(),
                    priority: -1,
                },
                value,
            },
            GFP_KERNEL,
        )?;
        let block = NonNull::from(KBox::leak(block));
        // SAFETY: The block stays where it is until it is taken back after
        // being unregistered (in `drop`, or below).
        let ret = unsafe {
            bindings::register_module_notifier(core::ptr::addr_of_mut!((*block.as_ptr()).nb))
        };
        if let Err(e) = to_result(ret) {
            // SAFETY: Leaked above; the kernel did not keep it.
            drop(unsafe { KBox::from_raw(block.as_ptr()) });
            return Err(e);
        }
        // INVARIANT: Leaked and registered.
        Ok(Self { block })
    }
}

impl<V: ModuleEvents> Drop for ModuleNotifier<V> {
    fn drop(&mut self) {
        // SAFETY: The block is registered (type invariant); once this
        // returns, no callback runs with it any more.
        unsafe {
            bindings::unregister_module_notifier(core::ptr::addr_of_mut!((*self.block.as_ptr()).nb))
        };
        // SAFETY: Leaked from a `KBox` in `register`, no longer used by the
        // kernel.
        drop(unsafe { KBox::from_raw(self.block.as_ptr()) });
    }
}
