// SPDX-License-Identifier: GPL-2.0

//! Locks the 6.12 kernel crate lacks, in the shape of its own
//! `kernel::sync::lock`: one generic [`Lock`] over the data, and a lock
//! kind as a small [`Backend`] (the kernel crate's `Lock` cannot take ours:
//! its state and guard constructor are private, so there is no trying).
//!
//! - [`TryMutex`], a `struct mutex` that can also be tried: `show_mem` (OOM
//!   reports, SysRq-m) runs in any context and must not sleep, so it can
//!   only try the lock that guards the call-site registry, as upstream
//!   tries the code-tag module list; the kernel crate's `Mutex` has no
//!   `try_lock` in 6.12.
//! - [`IrqRawSpinLock`], a `raw_spinlock_t` taken with interrupts off
//!   (`raw_spin_lock_irqsave()`): for data that allocation hooks share,
//!   which run in any context, hardirq and raw spinlocks included; the
//!   kernel crate has no raw spinlock, and 6.12's `SpinLock` no irqsave
//!   form.
//!
//! And the test for the context in which trying a mutex is allowed.

use core::{
    cell::UnsafeCell,
    marker::{PhantomData, PhantomPinned},
    ops::{Deref, DerefMut},
};
use kernel::{
    bindings,
    ffi::{c_char, c_ulong},
    prelude::{pin_data, pin_init, PinInit},
    str::CStr,
    sync::LockClassKey,
    types::Opaque,
};
// 7.3's `CStr` is core's, with the kernel's methods in a trait.
#[cfg(allocprof_tags)]
use kernel::str::CStrExt as _;

/// What `kernel::static_lock_class!()` gives: pinned on 7.3.
#[cfg(not(allocprof_tags))]
pub(crate) type StaticKey = &'static LockClassKey;
/// What `kernel::static_lock_class!()` gives: pinned on 7.3.
#[cfg(allocprof_tags)]
pub(crate) type StaticKey = core::pin::Pin<&'static LockClassKey>;

/// A kind of lock: the C lock object and how to take and release it.
///
/// # Safety
///
/// Between a [`Backend::lock`] (or a successful [`TryBackend::try_lock`])
/// and the [`Backend::unlock`] of its guard state, no other thread or CPU
/// owns the lock.
pub(crate) unsafe trait Backend {
    /// The C lock object.
    type State;
    /// What the owner keeps from taking the lock to releasing it.
    type GuardState;

    /// Initialises the lock object at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for writes for the call; `name` and `key` stay valid
    /// for ever (lockdep keeps them).
    unsafe fn init(ptr: *mut Self::State, name: *const c_char, key: *mut bindings::lock_class_key);

    /// Takes the lock, waiting for it.
    ///
    /// # Safety
    ///
    /// `ptr` was initialised by [`Backend::init`] and is still valid.
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState;

    /// Releases the lock.
    ///
    /// # Safety
    ///
    /// The caller owns the lock, with `state` from the call that took it.
    unsafe fn unlock(ptr: *mut Self::State, state: &Self::GuardState);
}

/// A kind of lock that can also be tried.
///
/// # Safety
///
/// As for [`Backend`]: a `Some` from [`TryBackend::try_lock`] means the
/// caller owns the lock.
pub(crate) unsafe trait TryBackend: Backend {
    /// Takes the lock if it is free; never waits.
    ///
    /// # Safety
    ///
    /// As for [`Backend::lock`].
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState>;
}

/// Data that only the owner of a lock of kind `B` may access.
///
/// # Invariants
///
/// `state` was initialised by `B::init`.
#[pin_data]
pub(crate) struct Lock<T, B: Backend> {
    #[pin]
    state: Opaque<B::State>,
    data: UnsafeCell<T>,
    /// The C lock objects may not move once initialised.
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The data moves with the lock; it is `Send`.
unsafe impl<T: Send, B: Backend> Send for Lock<T, B> {}
// SAFETY: The lock serialises all access to the data, so sharing the lock
// only ever hands the data to one thread at a time.
unsafe impl<T: Send, B: Backend> Sync for Lock<T, B> {}

impl<T, B: Backend> Lock<T, B> {
    /// A lock holding `data`, for lockdep in class `key` named `name`.
    pub(crate) fn new(data: T, name: &'static CStr, key: StaticKey) -> impl PinInit<Self> {
        // `LockClassKey` is a transparent wrapper of `struct lock_class_key`
        // (its `as_ptr` is private to the kernel crate on 6.12).
        #[cfg(allocprof_tags)]
        let key = key.get_ref();
        let key = core::ptr::from_ref(key)
            .cast_mut()
            .cast::<bindings::lock_class_key>();
        // INVARIANT: `state` is initialised by `B::init` before the lock can
        // be used.
        pin_init!(Self {
            data: UnsafeCell::new(data),
            _pin: PhantomPinned,
            // SAFETY: `slot` is valid for the call; `name` and `key` are
            // static, as lockdep needs.
            state <- Opaque::ffi_init(|slot| unsafe { B::init(slot, name.as_char_ptr(), key) }),
        })
    }

    /// Takes the lock, waiting for it (a mutex may sleep; a spinlock spins).
    #[inline]
    pub(crate) fn lock(&self) -> Guard<'_, T, B> {
        // SAFETY: `state` was initialised (type invariant).
        let state = unsafe { B::lock(self.state.get()) };
        // INVARIANT: The lock was just taken, with `state`.
        Guard {
            lock: self,
            state,
            _not_send: PhantomData,
        }
    }
}

impl<T, B: TryBackend> Lock<T, B> {
    /// Takes the lock if it is free; never waits.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<Guard<'_, T, B>> {
        // SAFETY: `state` was initialised (type invariant).
        let state = unsafe { B::try_lock(self.state.get()) }?;
        // INVARIANT: The lock was just taken, with `state`.
        Some(Guard {
            lock: self,
            state,
            _not_send: PhantomData,
        })
    }
}

/// The lock is held; released on drop.
///
/// # Invariants
///
/// This guard owns `lock`, taken with `state`.
#[must_use = "the lock is released at once when the guard is unused"]
pub(crate) struct Guard<'a, T, B: Backend> {
    lock: &'a Lock<T, B>,
    state: B::GuardState,
    /// A lock is released by the task (mutex) or on the CPU, with its
    /// interrupt state (irqsave spinlock), that took it.
    _not_send: PhantomData<*mut ()>,
}

impl<T, B: Backend> Deref for Guard<'_, T, B> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: The lock is held (type invariant), so nobody else
        // accesses the data.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T, B: Backend> DerefMut for Guard<'_, T, B> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: The lock is held (type invariant), so nobody else
        // accesses the data.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T, B: Backend> Drop for Guard<'_, T, B> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: This guard owns the lock, taken with `self.state` (type
        // invariant).
        unsafe { B::unlock(self.lock.state.get(), &self.state) };
    }
}

/// A kernel `struct mutex`, waited for or tried.
pub(crate) struct MutexBackend;

// SAFETY: A `struct mutex` has one owner from `mutex_lock` or a successful
// `mutex_trylock` to `mutex_unlock`.
unsafe impl Backend for MutexBackend {
    type State = bindings::mutex;
    type GuardState = ();

    unsafe fn init(ptr: *mut Self::State, name: *const c_char, key: *mut bindings::lock_class_key) {
        // SAFETY: By the function's safety requirements.
        unsafe { bindings::__mutex_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) {
        // SAFETY: By the function's safety requirements the mutex is
        // initialised.
        unsafe { bindings::mutex_lock(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, _state: &()) {
        // SAFETY: By the function's safety requirements the caller owns the
        // mutex.
        unsafe { bindings::mutex_unlock(ptr) }
    }
}

// SAFETY: `mutex_trylock` returns 1 only when it took the mutex.
unsafe impl TryBackend for MutexBackend {
    /// Only in task context (see [`task_context`]): a mutex must not be
    /// tried from interrupts.
    unsafe fn try_lock(ptr: *mut Self::State) -> Option<()> {
        // SAFETY: By the function's safety requirements the mutex is
        // initialised.
        (unsafe { bindings::mutex_trylock(ptr) } != 0).then_some(())
    }
}

/// A kernel `raw_spinlock_t`, taken with this CPU's interrupts off and
/// released restoring them (`raw_spin_lock_irqsave()`).  Raw, because the
/// allocation hooks that take it run wherever the kernel allocates or
/// frees, and on 7.3 that includes `free_pages_nolock()` and
/// `kfree_nolock()` under the callers' raw spinlocks, where a `spinlock_t`
/// is an invalid wait context (lockdep's `PROVE_RAW_LOCK_NESTING`).
pub(crate) struct IrqRawSpinLockBackend;

// SAFETY: A `raw_spinlock_t` has one owner from `raw_spin_lock_irqsave` to
// `raw_spin_unlock_irqrestore`.
unsafe impl Backend for IrqRawSpinLockBackend {
    type State = bindings::raw_spinlock_t;
    /// The interrupt flags saved when the lock was taken.
    type GuardState = c_ulong;

    /// `raw_spin_lock_init()`: with lockdep's name and class when the
    /// kernel debugs spinlocks.
    #[cfg(CONFIG_DEBUG_SPINLOCK)]
    unsafe fn init(ptr: *mut Self::State, name: *const c_char, key: *mut bindings::lock_class_key) {
        // The wait type is a C `short`; its values are small enum constants.
        let spin = bindings::lockdep_wait_type_LD_WAIT_SPIN as i16;
        // SAFETY: By the function's safety requirements.
        unsafe { bindings::__raw_spin_lock_init(ptr, name, key, spin) }
    }

    /// `raw_spin_lock_init()`: an unlocked `raw_spinlock_t` is all zeroes
    /// when the kernel does not debug spinlocks (`__RAW_SPIN_LOCK_UNLOCKED`
    /// is then `__ARCH_SPIN_LOCK_UNLOCKED` alone, and `src/Kbuild` refuses
    /// PREEMPT_RT).
    #[cfg(not(CONFIG_DEBUG_SPINLOCK))]
    unsafe fn init(
        ptr: *mut Self::State,
        _name: *const c_char,
        _key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: By the function's safety requirements `ptr` is valid for
        // writes.
        unsafe { core::ptr::write_bytes(ptr, 0, 1) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> c_ulong {
        // SAFETY: By the function's safety requirements the lock is
        // initialised.
        unsafe { bindings::_raw_spin_lock_irqsave(ptr) }
    }

    unsafe fn unlock(ptr: *mut Self::State, flags: &c_ulong) {
        // SAFETY: By the function's safety requirements the caller owns the
        // lock, taken on this CPU (the guard is not `Send`) with `flags`.
        unsafe { bindings::_raw_spin_unlock_irqrestore(ptr, *flags) }
    }
}

/// A mutex, like `kernel::sync::Mutex`, with [`Lock::try_lock`].
pub(crate) type TryMutex<T> = Lock<T, MutexBackend>;

/// A raw spinlock taken with interrupts off: any context but NMI.
pub(crate) type IrqRawSpinLock<T> = Lock<T, IrqRawSpinLockBackend>;

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

/// Declares an [`IrqRawSpinLock`] initialiser with a lock class of its own.
#[macro_export]
macro_rules! new_irq_raw_spinlock {
    ($inner:expr, $name:literal) => {
        $crate::sys::sync::IrqRawSpinLock::new(
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
