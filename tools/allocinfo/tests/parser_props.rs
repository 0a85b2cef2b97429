//! Property tests for the allocinfo parser: it never panics, and well-formed
//! records survive format -> parse unchanged.

mod common;
use common::site_strategy;

use allocinfo::compact;
use allocinfo::parse::{parse_bytes, parse_line, parse_str, Line};
use allocinfo::parsed::Version;
use allocinfo::Record;
use proptest::prelude::*;

fn record_strategy() -> impl Strategy<Value = Record> {
    let extra = proptest::collection::vec(("[a-z_]{1,10}", "[a-z0-9:]{0,6}"), 0..3);
    (site_strategy(), extra).prop_map(|(site, extra)| Record { extra, ..site })
}

/// Lines made of allocinfo-like pieces, to reach deeper parser paths than
/// uniformly random strings do.
fn junk_line() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("func:".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(":".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just("allocinfo - version:".to_string()),
        Just("#".to_string()),
        Just("-".to_string()),
        Just("accurate:no".to_string()),
        "[0-9]{1,25}",
        "[a-z/._]{1,8}",
        "\\PC{1,3}",
    ];
    proptest::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_strings_never_panic(s in any::<String>()) {
        let p = parse_str(&s);
        prop_assert!(p.records.len() + p.issues.len() <= s.lines().count());
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_bytes(&b);
    }

    #[test]
    fn allocinfo_like_junk_never_panics(lines in proptest::collection::vec(junk_line(), 0..8)) {
        let text = lines.join("\n");
        let p = parse_str(&text);
        for issue in &p.issues {
            prop_assert!(issue.line_no >= 1 && issue.line_no <= lines.len());
            let _ = issue.to_string();
        }
    }

    #[test]
    fn record_round_trips(r in record_strategy()) {
        let line = r.to_line();
        prop_assert!(line.ends_with(" \n"));
        let parsed = parse_line(line.trim_end_matches('\n'));
        prop_assert_eq!(parsed, Ok(Line::Record(r.clone())));
    }

    #[test]
    fn file_round_trips_with_headers_anywhere(
        recs in proptest::collection::vec(record_strategy(), 0..20),
        hdr_pos in 0usize..21,
        comment_pos in 0usize..21,
        v2 in any::<bool>(),
    ) {
        let mut lines: Vec<String> = recs.iter().map(Record::to_line).collect();
        let header = if v2 { "allocinfo - version: 2.0\n" } else { "allocinfo - version: 1.0\n" };
        lines.insert(comment_pos.min(lines.len()), "#     <size>  <calls> <tag info>\n".into());
        lines.insert(hdr_pos.min(lines.len()), header.into());
        let p = parse_str(&lines.concat());
        prop_assert!(p.issues.is_empty(), "{:?}", p.issues);
        prop_assert_eq!(p.version.map(|v| v.major), Some(if v2 { 2 } else { 1 }));
        prop_assert_eq!(p.records, recs);
    }

    #[test]
    fn compact_form_round_trips(
        recs in proptest::collection::vec(record_strategy(), 0..30),
        repeat in proptest::collection::vec(any::<prop::sample::Index>(), 0..10),
        v2 in proptest::option::of(any::<bool>()),
    ) {
        // Repeated records and names exercise the references and deltas.
        let mut recs = recs;
        for i in &repeat {
            if !recs.is_empty() {
                let r = recs[i.index(recs.len())].clone();
                recs.push(r);
            }
        }
        let version = v2.map(|v2| Version { major: if v2 { 2 } else { 1 }, minor: 0 });
        let text = compact::encode(version, &recs);
        let p = parse_str(&text);
        prop_assert!(p.issues.is_empty(), "{:?}", p.issues);
        prop_assert_eq!(p.version, version);
        prop_assert_eq!(p.records, recs);
    }

    #[test]
    fn compact_junk_never_panics(lines in proptest::collection::vec(compact_junk_line(), 0..8)) {
        let text = format!("allocinfo compact 1\n{}", lines.join("\n"));
        let p = parse_str(&text);
        prop_assert!(p.records.len() + p.issues.len() <= text.lines().count());
    }
}

fn compact_junk_line() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("'".to_string()),
        Just("=".to_string()),
        Just("-".to_string()),
        Just("+".to_string()),
        Just(" ".to_string()),
        Just(":".to_string()),
        "[0-9]{1,22}",
        "[a-z/._]{1,6}",
        "\\PC{1,2}",
    ];
    proptest::collection::vec(piece, 0..14).prop_map(|v| v.concat())
}
