//! Every Prometheus output of the tool passes `promtool check metrics`
//! (Debian's `prometheus` package has it; scripts/setup takes it out into the
//! cache and make check passes its path in `PROMTOOL`; else `promtool` on
//! the PATH): exit 0 and nothing printed, no error and no lint warning.
//! Without promtool the tests fail, they are not skipped.

mod common;
use common::{fixture, ok, pipe};
use std::process::{Command, Output};

/// `promtool check metrics` with `text` on its standard input.
fn promtool(text: &str) -> Output {
    let tool = std::env::var("PROMTOOL").unwrap_or_else(|_| "promtool".into());
    let mut cmd = Command::new(&tool);
    cmd.args(["check", "metrics"]);
    pipe(cmd, text).unwrap_or_else(|e| {
        panic!("{tool} (promtool, from Debian's prometheus package: run scripts/setup) cannot run: {e}")
    })
}

#[test]
fn every_prometheus_output_passes_promtool() {
    let (a, b) = (
        fixture("guest-allocprof-a.txt"),
        fixture("guest-allocprof-b.txt"),
    );
    let ages = fixture("guest-allocprof-ages.txt");
    let nodes = fixture("guest-allocprof-nodes.txt");
    let faults = fixture("guest-allocprof-faults.txt");
    let memcgs = fixture("guest-allocprof-memcgs.txt");
    let memcgs73 = fixture("guest-allocprof-7.3-memcgs.txt");
    let churn = fixture("rates/allocinfo-20261128T120100Z.txt");
    let guest_churn = fixture("rates-guest/allocinfo-20261128T192601Z.txt");
    let accounted = fixture("v2-accounted.txt");
    let cases: [(&str, Vec<&str>); 12] = [
        ("top", vec!["top", "-n", "0", "--format", "prometheus", &b]),
        // Gauges and the four churn counters of allocprof's c flag.
        (
            "top with churn",
            vec!["top", "-n", "0", "--format", "prometheus", &churn],
        ),
        (
            "top with churn, a real capture",
            vec!["top", "-n", "0", "--format", "prometheus", &guest_churn],
        ),
        // The accounted bytes of allocprof's m flag on 7.3.
        (
            "top with accounted",
            vec!["top", "--format", "prometheus", &accounted],
        ),
        (
            "group by subsystem",
            vec![
                "group",
                "--by",
                "subsystem",
                "-n",
                "0",
                "--format",
                "prometheus",
                &b,
            ],
        ),
        (
            "group by func",
            vec![
                "group",
                "--by",
                "func",
                "-n",
                "0",
                "--format",
                "prometheus",
                &b,
            ],
        ),
        ("diff", vec!["diff", "--format", "prometheus", &a, &b]),
        ("ages", vec!["ages", "--format", "prometheus", &ages]),
        ("nodes", vec!["nodes", "--format", "prometheus", &nodes]),
        // Gauges by cgroup, the table's figures and its counter.
        ("memcgs", vec!["memcgs", "--format", "prometheus", &memcgs]),
        // Also the accounted bytes.
        (
            "memcgs on 7.3",
            vec!["memcgs", "--format", "prometheus", &memcgs73],
        ),
        // Counters (failures, allocations asked) and gauges (knobs, +Inf).
        ("faults", vec!["faults", "--format", "prometheus", &faults]),
    ];
    for (what, args) in cases {
        let out = ok(&args);
        assert!(out.contains("# TYPE "), "{what}: no metric in {out}");
        let o = promtool(&out);
        assert!(
            o.status.success() && o.stdout.is_empty() && o.stderr.is_empty(),
            "{what}: promtool check metrics exited {:?}: {}{}",
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A negative free (allocprof's frees may be one off) is left out of the
/// counters, with a note, and what is left passes promtool.
#[test]
fn negative_frees_are_left_out_of_the_counters() {
    let text = "allocinfo - version: 2.0\n\
                \x20        640        5 a.c:1 func:f allocated:640/5 freed:-128/-1 \n\
                \x20        640        5 a.c:2 func:g allocated:640/5 freed:0/0 \n";
    let o = common::run_stdin(&["top", "--format", "prometheus", "-"], text);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        common::stderr(&o),
        "allocinfo: note: a.c:1 f: freed:-128/-1 is negative (allocprof's frees can be one off \
         beside a free under way): left out of the frees counters\n"
    );
    let out = common::stdout(&o);
    let frees: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("allocinfo_churn_free"))
        .collect();
    assert_eq!(
        frees,
        [
            "allocinfo_churn_frees_total{file=\"a.c\",line=\"2\",function=\"g\",module=\"\"} 0",
            "allocinfo_churn_freed_bytes_total{file=\"a.c\",line=\"2\",function=\"g\",module=\"\"} 0",
        ]
    );
    assert_eq!(out.matches("allocinfo_churn_allocations_total{").count(), 2);
    let o = promtool(&out);
    assert!(
        o.status.success() && o.stdout.is_empty() && o.stderr.is_empty(),
        "promtool check metrics exited {:?}: {}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The check above can fail: promtool objects to a counter without the
/// `_total` suffix and to a metric without help text.
#[test]
fn promtool_rejects_a_badly_named_metric() {
    let o = promtool("# HELP x_calls c\n# TYPE x_calls counter\nx_calls 1\ny 1\n");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!o.status.success(), "promtool accepted it: {said}");
    assert!(
        said.contains("_total") && said.contains("no help text"),
        "{said}"
    );
}
