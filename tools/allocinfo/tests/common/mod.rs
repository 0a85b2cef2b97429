//! Helpers shared by the integration tests: the fixtures, running the
//! `allocinfo` binary, and the proptest strategy of a call site. Each test
//! crate compiles this module and uses a part of it.
#![allow(dead_code)]

use allocinfo::Record;
use proptest::prelude::*;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The path of fixture `name` in tests/fixtures/.
pub fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_allocinfo"))
        .args(args)
        .output()
        .expect("run allocinfo")
}

pub fn run_stdin(args: &[&str], input: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_allocinfo"));
    cmd.args(args);
    pipe(cmd, input).expect("spawn allocinfo")
}

/// Runs `cmd` with `input` on its standard input; its output, or why it
/// could not start.
pub fn pipe(mut cmd: Command, input: &str) -> std::io::Result<Output> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// Run, require exit 0, return (stdout, stderr).
pub fn ok2(args: &[&str]) -> (String, String) {
    let o = run(args);
    assert_eq!(o.status.code(), Some(0), "{args:?}: stderr: {}", stderr(&o));
    (stdout(&o), stderr(&o))
}

/// Run, require exit 0 and an empty stderr, return stdout.
pub fn ok(args: &[&str]) -> String {
    let (out, err) = ok2(args);
    assert_eq!(err, "", "{args:?}");
    out
}

/// A call site of any counts, as the kernel could print it, without extra pairs.
pub fn site_strategy() -> impl Strategy<Value = Record> {
    let file = "[a-z][a-z0-9_-]{0,8}(/[a-zA-Z0-9_.+-]{1,10}){0,4}\\.[ch]";
    let module = proptest::option::of("[a-z][a-z0-9_]{0,15}");
    let func = "[A-Za-z_][A-Za-z0-9_.]{0,30}";
    (any::<i64>(), any::<u64>(), file, any::<u32>(), module, func).prop_map(
        |(bytes, calls, file, line, module, func)| Record {
            bytes,
            calls,
            file,
            line,
            module,
            func,
            extra: vec![],
        },
    )
}
