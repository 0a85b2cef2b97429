//! Helpers shared by the integration tests: the fixtures and running the
//! `allocinfo` binary. Each test crate compiles this module and uses a part
//! of it.
#![allow(dead_code)]

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
    let mut child = Command::new(env!("CARGO_BIN_EXE_allocinfo"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn allocinfo");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
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
