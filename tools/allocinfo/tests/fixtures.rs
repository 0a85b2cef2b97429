//! Checks that run over every fixture in tests/fixtures/, so that captured
//! files can be added without writing new tests. Files whose name starts with
//! `malformed` are expected to contain malformed lines; every other file must
//! parse cleanly, contain at least one call site, and every data line must be
//! reproduced byte for byte by `Record::to_line` (the kernel's printf format).

use allocinfo::parse::{parse_line, parse_str, Line};
use std::path::PathBuf;

fn fixtures() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    assert!(!v.is_empty());
    v
}

fn is_malformed(p: &std::path::Path) -> bool {
    p.file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("malformed")
}

#[test]
fn every_wellformed_fixture_parses_cleanly_and_round_trips() {
    for path in fixtures().iter().filter(|p| !is_malformed(p)) {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        let parsed = parse_str(&text);
        assert!(
            parsed.issues.is_empty(),
            "{}: {:?}",
            path.display(),
            parsed.issues
        );
        assert!(
            !parsed.records.is_empty(),
            "{}: no call sites",
            path.display()
        );
        for line in text.lines() {
            if let Ok(Line::Record(r)) = parse_line(line) {
                assert_eq!(r.to_line(), format!("{line}\n"), "{}", path.display());
            }
        }
    }
}

#[test]
fn malformed_fixtures_report_issues() {
    for path in fixtures().iter().filter(|p| is_malformed(p)) {
        let parsed = parse_str(&std::fs::read_to_string(path).unwrap());
        assert!(!parsed.issues.is_empty(), "{}", path.display());
    }
}
