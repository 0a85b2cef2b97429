// SPDX-License-Identifier: GPL-2.0

//! The profiling state: on, off or never ([`Mode`]), and the registered
//! profiler.  The module makes it at load and owns it, as it owns the
//! files that use it; each of them gets it through the data pointer its C
//! interface offers: `vm.mem_profiling` shows and changes it
//! (`ctl_table.data`, below), `/proc/allocinfo`
//! (`procfs.rs`) and the debugfs files (`control.rs`, `reports.rs`) reach
//! the profiler through it.

use kernel::{new_mutex, prelude::*, sync::Arc, sync::Mutex, ThisModule};

use crate::profiler::{DebugChecks, Hooks, NoChecks, Profiler};
use crate::sys::backend::{Adoption, Registration};
use crate::sys::module::ModuleEvents;
use crate::sys::sysctl::{SysctlFile, SysctlValue};
use crate::sysctl::Mode;

/// What the state lock of [`Profiling`] guards.
struct Inner {
    mode: Mode,
    /// While profiling is on or off (not `never`): the registered profiler.
    registration: Option<Registration<Profiler>>,
}

/// The profiling state of the loaded module.
#[pin_data]
pub(crate) struct Profiling {
    /// Taken before the kernel's back-end locks (registering calls back
    /// into the profiler's registry) and before the registry.
    #[pin]
    inner: Mutex<Inner>,
    /// allocprof's module, whose frames the profiler's call chains leave out.
    module: &'static ThisModule,
    /// `debug=1`: the hooks that check what they see are registered, and
    /// `vm.mem_profiling` is read-only ([`Profiling::sysctl_mode`]).
    debug: bool,
}

impl Profiling {
    /// The state to start in: `mode`, no profiler yet (see
    /// [`Profiling::register`]).
    pub(crate) fn new(mode: Mode, debug: bool, module: &'static ThisModule) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Profiling {
                inner <- new_mutex!(Inner {
                    mode,
                    registration: None,
                }),
                module,
                debug,
            }),
            GFP_KERNEL,
        )
    }

    /// Calls `f` with the registration of the profiler (under the state
    /// lock), if there is one: for what needs the kernel's switches too.
    pub(crate) fn with_registration<R>(
        &self,
        f: impl FnOnce(&Registration<Profiler>) -> R,
    ) -> Option<R> {
        let inner = self.inner.lock();
        inner.registration.as_ref().map(f)
    }

    /// Calls `f` with the registered profiler (under the state lock), if
    /// there is one.
    pub(crate) fn with_profiler<R>(&self, f: impl FnOnce(&Profiler) -> R) -> Option<R> {
        let inner = self.inner.lock();
        inner.registration.as_ref().map(|r| f(r.data()))
    }

    /// What the kernel's boot record handed the profiler, if it did.
    pub(crate) fn adoption(&self) -> Option<Adoption> {
        let inner = self.inner.lock();
        inner.registration.as_ref().and_then(|r| r.adoption())
    }

    /// The current profiling state.
    pub(crate) fn mode(&self) -> Mode {
        self.inner.lock().mode
    }

    /// Changes the profiling state, written to `file` (`vm.mem_profiling`),
    /// which `never` makes read-only.
    pub(crate) fn set_mode(&self, new: Mode, file: &SysctlFile<'_>) -> Result {
        let mut inner = self.inner.lock();
        match (inner.mode, new) {
            (Mode::Never, _) => return Err(EPERM),
            (_, Mode::Never) => {
                unregister(&mut inner);
                file.set_read_only();
                pr_info!(
                    "profiling off for good (mem_profiling=never); reload the module to start again\n"
                );
            }
            (old, on_off) => {
                if let Some(r) = &inner.registration {
                    let stop = old == Mode::On && on_off == Mode::Off;
                    let restart = old == Mode::Off && on_off == Mode::On;
                    // Switched on again, the figures start from zero
                    // (`Profiler::restart`), before the kernel counts.
                    if restart {
                        r.data().restart()?;
                    }
                    // The kernel may have shut profiling down for good
                    // (7.3): the mode stays as it was (after a restart,
                    // with its figures zero).
                    r.enable(on_off == Mode::On)?;
                    // Switched off, the kernel forgets which call site each
                    // live allocation came from and stops counting frees:
                    // the figures stay those of the switch, marked.
                    // Switched on, what was allocated while off was not
                    // counted (by the modules loaded meanwhile too): marked
                    // as well; allocprof's own tables are counted from now.
                    if stop || restart {
                        r.data().mark_all_inaccurate();
                    }
                    if restart {
                        Profiler::count_own(r);
                    }
                }
            }
        }
        inner.mode = new;
        Ok(())
    }

    /// Registers a new profiler as the mode given at load says (none for
    /// `never`).  It counts every allocation since boot if it adopted the
    /// kernel's boot record, else those from now on: then every call site
    /// there is now is marked inaccurate (missing allocations).
    /// `load_commands` (`control=`'s) are applied to each module that
    /// loads from then on.
    pub(crate) fn register(&self, load_commands: KVec<u8>) -> Result {
        let mut inner = self.inner.lock();
        let on = match inner.mode {
            Mode::Never => return Ok(()),
            mode => mode == Mode::On,
        };
        let profiler = Profiler::new(self.module, load_commands)?;
        // Debug mode (`debug=1`) registers hooks that check what they see.
        let registration = if self.debug {
            Registration::register::<Hooks<DebugChecks>>(profiler)?
        } else {
            let registration = Registration::register::<Hooks<NoChecks>>(profiler)?;
            // The hooks' common path, in the kernel.
            #[cfg(allocprof_tags)]
            Profiler::count_inline(&registration)?;
            registration
        };
        if registration.adoption().is_none() || !on {
            registration.data().mark_all_inaccurate();
        }
        if let Err(e) = registration.enable(on) {
            pr_err!(
                "the kernel cannot turn profiling on: it shut profiling down for good ({:?})\n",
                e
            );
            return Err(e);
        }
        if on {
            Profiler::count_own(&registration);
        }
        inner.registration = Some(registration);
        Ok(())
    }

    /// The permissions of `/proc/sys/vm/mem_profiling`, which shows and
    /// changes the state: read-only for `never`, and in debug mode, as
    /// upstream's (switching profiling on and off leaves allocations
    /// without tags on purpose).
    pub(crate) fn sysctl_mode(&self) -> u16 {
        if self.mode() == Mode::Never || self.debug {
            0o444
        } else {
            0o644
        }
    }

    /// Unregisters the profiler (waiting for running hooks) and frees it.
    pub(crate) fn unregister(&self) {
        unregister(&mut self.inner.lock());
    }
}

/// [`Profiling::unregister`], under the state lock.
fn unregister(inner: &mut Inner) {
    let Some(registration) = inner.registration.take() else {
        return;
    };
    // Switching off cannot fail.
    let _ = registration.enable(false);
    let untracked = registration.data().untracked_pages();
    drop(registration);
    if untracked != 0 {
        pr_info!(
            "{} page allocations beyond the back-reference array were not counted\n",
            untracked
        );
    }
}

/// Other modules' loads and unloads reach the registered profiler, for
/// their Rust lines in the kernel's pool (`Profiler::module_going`).
impl ModuleEvents for Profiling {
    fn coming(&self) {
        self.with_profiler(Profiler::module_coming);
    }

    fn going(&self, name: &[u8]) {
        self.with_registration(|r| {
            let p = r.data();
            p.module_going(name);
            // Its fault entries went with it.
            r.fail(p.wants_failures());
        });
    }
}

/// `/proc/sys/vm/mem_profiling`: `0`, `1` or `never`.
impl SysctlValue for Profiling {
    fn show(&self, buf: &mut [u8; 16]) -> usize {
        self.mode().write(buf)
    }

    fn store(&self, input: &[u8], file: &SysctlFile<'_>) -> Result {
        self.set_mode(Mode::parse(input)?, file)
    }
}
