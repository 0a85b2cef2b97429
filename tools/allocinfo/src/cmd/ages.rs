//! `allocinfo ages`: live allocations per call site by age, in power-of-two
//! buckets of seconds (allocprof's debugfs ages file).

use super::parts::{PartOutput, PartsCmd};
use crate::cli::{AgesArgs, AgesSortKey, SortKey};
use allocinfo::ages::{AgeBucket, AgeSite};
use anyhow::Result;
use serde::Serialize;

pub fn run(a: AgesArgs, verbose: bool) -> Result<()> {
    let note = match a.min_age {
        Some(m) => format!(", only allocations at least {m}s old"),
        None => String::new(),
    };
    let by = a.by;
    let cmd = PartsCmd {
        args: &a.parts,
        input: &a.input,
        note: &note,
        verbose,
    };
    cmd.run::<AgeBucket>(
        |sites| {
            if let Some(min) = a.min_age {
                for s in sites.iter_mut() {
                    s.retain_min_age(min);
                }
            }
        },
        |x, y| match by {
            AgesSortKey::Bytes => SortKey::Bytes.biggest_first(&x.site, &y.site),
            AgesSortKey::Calls => SortKey::Calls.biggest_first(&x.site, &y.site),
            AgesSortKey::Age => {
                let oldest = |s: &AgeSite| s.oldest().map(|b| (b.part, b.bytes));
                oldest(y)
                    .cmp(&oldest(x))
                    .then(y.site.bytes.cmp(&x.site.bytes))
            }
        },
    )
}

#[derive(Serialize)]
pub struct AgeBucketJson {
    lo_s: u64,
    hi_s: Option<u64>,
}

impl PartOutput for AgeBucket {
    const COLUMNS: [&'static str; 3] = ["Age", "Age bytes", "Age calls"];
    const LAST_FIRST: bool = true;
    const JSON_LIST: &'static str = "buckets";
    const CSV_COLUMNS: &'static [&'static str] = &["lo_s", "hi_s"];
    const METRIC: &'static str = "allocinfo_age";
    const HELP: &'static str = "whose age in seconds is in [age_lo_seconds, age_hi_seconds) \
                                (allocprof debugfs ages).";
    type Json = AgeBucketJson;

    fn json(&self) -> AgeBucketJson {
        AgeBucketJson {
            lo_s: self.lo,
            hi_s: self.hi,
        }
    }

    fn csv(&self) -> Vec<String> {
        vec![
            self.lo.to_string(),
            self.hi.map_or(String::new(), |h| h.to_string()),
        ]
    }

    /// The open bucket's `age_hi_seconds` is `+Inf`.
    fn labels(&self) -> String {
        let hi = self.hi.map_or("+Inf".to_string(), |h| h.to_string());
        format!("age_lo_seconds=\"{}\",age_hi_seconds=\"{hi}\"", self.lo)
    }
}
