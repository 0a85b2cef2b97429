//! Checks that run over every fixture in tests/fixtures/, so that captured
//! files can be added without writing new tests. Files whose name starts with
//! `malformed` are expected to contain malformed lines; every other file must
//! parse cleanly, contain at least one record, and its data lines must be
//! reproduced byte for byte from the parsed records (the kernel's printf
//! format). Files named `*stacks.txt`, `*ages.txt`, `*nodes.txt`,
//! `*memcgs.txt` and `*faults.txt` are allocprof's debugfs files and are read with their own
//! parsers; all others are /proc/allocinfo.

use allocinfo::ages::{parse_ages, AgeBucket};
use allocinfo::faults::{parse_faults, FaultSite};
use allocinfo::memcgs::Memcg;
use allocinfo::nodes::Node;
use allocinfo::parse::{parse_line, parse_str, Line};
use allocinfo::split::{self, Part, PartLine};
use allocinfo::stacks::{parse_stacks, StackRecord};
use std::path::{Path, PathBuf};

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

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn is_malformed(p: &Path) -> bool {
    name(p).starts_with("malformed")
}

/// Which parser reads the file.
enum Kind {
    Allocinfo,
    Stacks,
    Ages,
    Nodes,
    Memcgs,
    Faults,
}

fn kind(p: &Path) -> Kind {
    let n = name(p);
    if n.ends_with("stacks.txt") {
        Kind::Stacks
    } else if n.ends_with("ages.txt") {
        Kind::Ages
    } else if n.ends_with("nodes.txt") {
        Kind::Nodes
    } else if n.ends_with("memcgs.txt") {
        Kind::Memcgs
    } else if n.ends_with("faults.txt") {
        Kind::Faults
    } else {
        Kind::Allocinfo
    }
}

/// The text without its `#` comment lines.
fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn every_wellformed_fixture_parses_cleanly_and_round_trips() {
    for path in fixtures().iter().filter(|p| !is_malformed(p)) {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        let what = path.display();
        match kind(path) {
            Kind::Allocinfo => {
                let parsed = parse_str(&text);
                assert!(parsed.issues.is_empty(), "{what}: {:?}", parsed.issues);
                assert!(!parsed.records.is_empty(), "{what}: no call sites");
                for line in text.lines() {
                    if let Ok(Line::Record(r)) = parse_line(line) {
                        assert_eq!(r.to_line(), format!("{line}\n"), "{what}");
                    }
                }
            }
            Kind::Stacks => {
                let parsed = parse_stacks(&text);
                assert!(parsed.issues.is_empty(), "{what}: {:?}", parsed.issues);
                assert!(!parsed.records.is_empty(), "{what}: no records");
                assert!(parsed.stats.is_some(), "{what}: no statistics line");
                // The last record's empty line is optional.
                let mut want = without_comments(&text);
                if !want.ends_with("\n\n") {
                    want.push('\n');
                }
                let got: String = parsed.records.iter().map(StackRecord::to_text).collect();
                assert_eq!(got, want, "{what}");
            }
            Kind::Ages => parts_round_trip::<AgeBucket>(&text, &what.to_string()),
            Kind::Nodes => parts_round_trip::<Node>(&text, &what.to_string()),
            Kind::Memcgs => {
                parts_round_trip::<Memcg>(&text, &what.to_string());
                let parsed = split::parse::<Memcg>(&text);
                assert!(parsed.header.is_some(), "{what}: no # memcgs: line");
            }
            Kind::Faults => {
                let parsed = parse_faults(&text);
                assert!(parsed.issues.is_empty(), "{what}: {:?}", parsed.issues);
                assert!(!parsed.sites.is_empty(), "{what}: no call sites");
                let got: String = parsed.sites.iter().map(FaultSite::to_line).collect();
                assert_eq!(got, without_comments(&text), "{what}");
            }
        }
    }
}

/// An ages, nodes or memcgs file parses cleanly, with lines and its statistics
/// line, and its lines print again as they are.
fn parts_round_trip<P: Part>(text: &str, what: &str) {
    let parsed = split::parse::<P>(text);
    assert!(parsed.issues.is_empty(), "{what}: {:?}", parsed.issues);
    assert!(!parsed.lines.is_empty(), "{what}: no lines");
    assert!(parsed.stats.is_some(), "{what}: no statistics line");
    let got: String = parsed.lines.iter().map(PartLine::to_line).collect();
    assert_eq!(got, without_comments(text), "{what}");
}

#[test]
fn malformed_fixtures_report_issues() {
    for path in fixtures().iter().filter(|p| is_malformed(p)) {
        let text = std::fs::read_to_string(path).unwrap();
        let issues = match kind(path) {
            Kind::Allocinfo => parse_str(&text).issues.len(),
            Kind::Stacks => parse_stacks(&text).issues.len(),
            Kind::Ages => parse_ages(&text).issues.len(),
            Kind::Nodes => split::parse::<Node>(&text).issues.len(),
            Kind::Memcgs => split::parse::<Memcg>(&text).issues.len(),
            Kind::Faults => parse_faults(&text).issues.len(),
        };
        assert!(issues > 0, "{}", path.display());
    }
}
