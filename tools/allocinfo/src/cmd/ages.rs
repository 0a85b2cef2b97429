//! `allocinfo ages`: live allocations per call site by age, in power-of-two
//! buckets of seconds (allocprof's debugfs ages file).

use super::parts::PartsCmd;
use crate::cli::{AgesArgs, AgesSortKey, SortKey};
use allocinfo::ages::{AgeBucket, AgeSite};
use anyhow::Result;

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
