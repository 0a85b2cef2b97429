// SPDX-License-Identifier: GPL-2.0

//! `vm.mem_profiling`'s values, and the `mem_profiling=` module parameter;
//! the state the sysctl shows and changes is `state.rs`'s.
//!
//! Values are `0`, `1` and `never`, as upstream's: `0`/`1` turn profiling
//! off and on at run time; `never` turns it off for good (until the module
//! is loaded again): the hooks are unregistered, the memory freed, and the
//! file becomes read-only.  Anything else is refused with `-EINVAL` and
//! changes nothing.  A writer without `CAP_SYS_ADMIN` (root included) gets
//! `-EPERM` and changes nothing, as upstream's handler does.

use core::sync::atomic::{AtomicU8, Ordering};
use kernel::{error::Result, prelude::*};

use crate::sys::param::ParamValue;

/// The profiling state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    Off = 0,
    On = 1,
    Never = 2,
}

impl Mode {
    /// Parses a written value: exactly `0`, `1` or `never`, with at most
    /// one trailing newline (what `echo` adds).
    pub(crate) fn parse(text: &[u8]) -> Result<Self> {
        let text = text.strip_suffix(b"\n").unwrap_or(text);
        match text {
            b"0" => Ok(Mode::Off),
            b"1" => Ok(Mode::On),
            b"never" => Ok(Mode::Never),
            _ => Err(EINVAL),
        }
    }

    /// The text shown, with a newline.
    pub(crate) fn text(self) -> &'static [u8] {
        match self {
            Mode::Off => b"0\n",
            Mode::On => b"1\n",
            Mode::Never => b"never\n",
        }
    }

    /// Writes the text shown into `buf`; returns its length.
    pub(crate) fn write(self, buf: &mut [u8; 16]) -> usize {
        let text = self.text();
        buf[..text.len()].copy_from_slice(text);
        text.len()
    }

    /// The value's name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Off => "0",
            Mode::On => "1",
            Mode::Never => "never",
        }
    }

    fn from_u8(v: u8) -> Self {
        match v {
            0 => Mode::Off,
            1 => Mode::On,
            _ => Mode::Never,
        }
    }
}

/// The `mem_profiling=` value given at load (default `1`).  A static, as
/// C's `module_param()` storage: the kernel parses the parameter before
/// the module's `init` runs, when no state of the module exists yet;
/// `init` reads it once.
static LOAD_MODE: AtomicU8 = AtomicU8::new(Mode::On as u8);

/// The state the module is to start in.
pub(crate) fn load_mode() -> Mode {
    Mode::from_u8(LOAD_MODE.load(Ordering::Relaxed))
}

/// The `mem_profiling=0|1|never` module parameter.
pub(crate) struct MemProfilingParam;

impl ParamValue for MemProfilingParam {
    fn set(text: &[u8]) -> Result {
        let mode = Mode::parse(text).inspect_err(|_| {
            pr_err!("mem_profiling= must be 0, 1 or never\n");
        })?;
        LOAD_MODE.store(mode as u8, Ordering::Relaxed);
        Ok(())
    }

    fn get(buf: &mut [u8]) -> usize {
        let mut text = [0u8; 16];
        let n = load_mode().write(&mut text);
        buf[..n].copy_from_slice(&text[..n]);
        n
    }
}
