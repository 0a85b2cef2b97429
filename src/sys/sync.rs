// SPDX-License-Identifier: GPL-2.0

//! A kernel `struct mutex` that can also be tried, and the test for the
//! context in which trying it is allowed.
//!
//! The `Mutex` of the 6.12 kernel crate has no `try_lock`, and its C mutex
//! is private.  `show_mem` (OOM reports, SysRq-m) runs in any context and
//! must not sleep, so it can only try the lock that guards the call-site
//! registry, as upstream tries the code-tag module list.

use core::{
    cell::UnsafeCell,
    marker::{PhantomData, PhantomPinned},
    ops::{Deref, DerefMut},
};
use kernel::{
    bindings, init::PinInit, pin_init, prelude::pin_data, str::CStr, sync::LockClassKey,
    types::Opaque,
};

/// A mutex, like `kernel::sync::Mutex`, with [`TryMutex::try_lock`].
#[pin_data]
pub(crate) struct TryMutex<T> {
    #[pin]
    mutex: Opaque<bindings::mutex>,
    data: UnsafeCell<T>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The data moves with the mutex; it is `Send`.
unsafe impl<T: Send> Send for TryMutex<T> {}
// SAFETY: The mutex serialises all access to the data, so sharing the
// mutex only ever hands the data to one thread at a time.
unsafe impl<T: Send> Sync for TryMutex<T> {}

impl<T> TryMutex<T> {
    /// A mutex holding `data`, for lockdep in class `key` named `name`.
    pub(crate) fn new(
        data: T,
        name: &'static CStr,
        key: &'static LockClassKey,
    ) -> impl PinInit<Self> {
        // `LockClassKey` is a transparent wrapper of `struct lock_class_key`.
        let key = core::ptr::from_ref(key)
            .cast_mut()
            .cast::<bindings::lock_class_key>();
        pin_init!(Self {
            data: UnsafeCell::new(data),
            _pin: PhantomPinned,
            // SAFETY: `slot` is valid for the call; `name` and `key` are
            // static, as lockdep needs.
            mutex <- Opaque::ffi_init(|slot| unsafe {
                bindings::__mutex_init(slot, name.as_char_ptr(), key)
            }),
        })
    }

    /// Waits for the mutex (may sleep).
    pub(crate) fn lock(&self) -> TryMutexGuard<'_, T> {
        // SAFETY: The mutex was initialised by `new`.
        unsafe { bindings::mutex_lock(self.mutex.get()) };
        TryMutexGuard {
            lock: self,
            _not_send: PhantomData,
        }
    }

    /// Takes the mutex if it is free; never sleeps.  Only in task context
    /// (see [`task_context`]): a mutex must not be tried from interrupts.
    pub(crate) fn try_lock(&self) -> Option<TryMutexGuard<'_, T>> {
        // SAFETY: The mutex was initialised by `new`.
        let locked = unsafe { bindings::mutex_trylock(self.mutex.get()) } != 0;
        // `then`, not `then_some`: a guard built eagerly would be dropped,
        // unlocking a mutex another task holds, when the trylock failed.
        locked.then(|| TryMutexGuard {
            lock: self,
            _not_send: PhantomData,
        })
    }
}

/// The mutex is held; released on drop.
pub(crate) struct TryMutexGuard<'a, T> {
    lock: &'a TryMutex<T>,
    /// A mutex is released by the task that took it.
    _not_send: PhantomData<*mut ()>,
}

impl<T> Deref for TryMutexGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: The mutex is held, so nobody else accesses the data.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for TryMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: The mutex is held, so nobody else accesses the data.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for TryMutexGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: This guard holds the mutex, taken by this task.
        unsafe { bindings::mutex_unlock(self.lock.mutex.get()) };
    }
}

/// Declares a [`TryMutex`] initialiser with a lock class of its own.
#[macro_export]
macro_rules! new_try_mutex {
    ($inner:expr, $name:literal) => {
        $crate::sys::sync::TryMutex::new(
            $inner,
            kernel::c_str!($name),
            kernel::static_lock_class!(),
        )
    };
}

/// Whether the CPU runs a task, not an interrupt (hard, soft or NMI): the
/// kernel's `in_task()`.  A mutex may only be tried there: an interrupt
/// that takes a mutex could deadlock on its `wait_lock`, which the
/// interrupted task may hold with interrupts on.
pub(crate) fn task_context() -> bool {
    // SAFETY: `in_task()` only reads this CPU's preemption count.
    unsafe { bindings::in_task() }
}

/// A spinlock taken with interrupts off (`spin_lock_irqsave()`): for data
/// that allocation hooks share, which run in any context, hardirq
/// included.  6.12's `kernel::sync::SpinLock` has no irqsave form.
#[pin_data]
pub(crate) struct IrqSpinLock<T> {
    #[pin]
    lock: Opaque<bindings::spinlock_t>,
    data: UnsafeCell<T>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The data moves with the lock; it is `Send`.
unsafe impl<T: Send> Send for IrqSpinLock<T> {}
// SAFETY: The lock serialises all access to the data.
unsafe impl<T: Send> Sync for IrqSpinLock<T> {}

impl<T> IrqSpinLock<T> {
    /// A lock holding `data`, for lockdep in class `key` named `name`.
    pub(crate) fn new(
        data: T,
        name: &'static CStr,
        key: &'static LockClassKey,
    ) -> impl PinInit<Self> {
        // `LockClassKey` is a transparent wrapper of `struct lock_class_key`.
        let key = core::ptr::from_ref(key)
            .cast_mut()
            .cast::<bindings::lock_class_key>();
        pin_init!(Self {
            data: UnsafeCell::new(data),
            _pin: PhantomPinned,
            // SAFETY: `slot` is valid for the call; `name` and `key` are
            // static, as lockdep needs.
            lock <- Opaque::ffi_init(|slot| unsafe {
                bindings::__spin_lock_init(slot, name.as_char_ptr(), key)
            }),
        })
    }

    /// Spins for the lock with interrupts off on this CPU; any context.
    pub(crate) fn lock(&self) -> IrqSpinLockGuard<'_, T> {
        // SAFETY: The lock was initialised by `new`.
        let flags = unsafe { bindings::spin_lock_irqsave(self.lock.get()) };
        IrqSpinLockGuard {
            lock: self,
            flags,
            _not_send: PhantomData,
        }
    }
}

/// The lock is held and interrupts are off; both restored on drop.
pub(crate) struct IrqSpinLockGuard<'a, T> {
    lock: &'a IrqSpinLock<T>,
    flags: kernel::ffi::c_ulong,
    /// Released on the CPU that took it, with its interrupt state.
    _not_send: PhantomData<*mut ()>,
}

impl<T> Deref for IrqSpinLockGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: The lock is held, so nobody else accesses the data.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for IrqSpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: The lock is held, so nobody else accesses the data.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for IrqSpinLockGuard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: This guard holds the lock, taken on this CPU with these
        // saved flags.
        unsafe { bindings::spin_unlock_irqrestore(self.lock.lock.get(), self.flags) };
    }
}

/// Declares an [`IrqSpinLock`] initialiser with a lock class of its own.
#[macro_export]
macro_rules! new_irq_spinlock {
    ($inner:expr, $name:literal) => {
        $crate::sys::sync::IrqSpinLock::new(
            $inner,
            kernel::c_str!($name),
            kernel::static_lock_class!(),
        )
    };
}
