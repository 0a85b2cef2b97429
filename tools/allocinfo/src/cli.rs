//! The command line: every command, its options and their checks (clap).

use allocinfo::diff::Matching;
use allocinfo::faults;
use allocinfo::filter::{validate_glob, Filter};
use allocinfo::group::GroupBy;
use allocinfo::leaks::Share;
use allocinfo::live::Via;
use allocinfo::record::Record;
use allocinfo::units::parse_size;
use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::cmp::Ordering;
use std::path::PathBuf;

/// The kernel's file, what the read commands and `snap` read by default.
pub const DEFAULT_SOURCE: &str = "/proc/allocinfo";

/// allocprof's call chains of the call sites with the `s` flag.
const STACKS_SOURCE: &str = "/sys/kernel/debug/allocprof/stacks";

/// allocprof's age buckets of the call sites with the `a` flag.
const AGES_SOURCE: &str = "/sys/kernel/debug/allocprof/ages";

/// allocprof's pages by node of the call sites with the `n` flag.
const NODES_SOURCE: &str = "/sys/kernel/debug/allocprof/nodes";

/// allocprof's live allocations by memory cgroup of the call sites with the `m` flag.
const MEMCGS_SOURCE: &str = "/sys/kernel/debug/allocprof/memcgs";

/// allocprof's failures and knobs of the call sites with the `f` flag.
const FAULTS_SOURCE: &str = faults::FAULTS_FILE;

const EXIT_CODES: &str = "\
Exit status:
  0  success
  1  runtime error (unreadable input, unwritable output, ...)
  2  usage error (invalid command, option or argument)
  3  malformed input lines and --strict was given";

#[derive(Parser, Debug)]
#[command(
    name = "allocinfo",
    version,
    about = "Inspect Linux /proc/allocinfo (memory allocation profiling): top call sites, \
             totals per subsystem/module, snapshots, diffs and SVG plots",
    long_about = "Inspect Linux /proc/allocinfo (memory allocation profiling, \
                  CONFIG_MEM_ALLOC_PROFILING, kernel 6.10+): top call sites, totals per \
                  subsystem/directory/module/function, timestamped snapshots, diffs between \
                  snapshots and SVG plots.\n\nReads format versions 1.0 and 2.0. Header lines may \
                  appear anywhere (e.g. after `sort -g`) or be missing. Malformed lines are \
                  reported on stderr with their line number and skipped (or rejected with \
                  --strict). Lines of the same call site (file, line, module, function), as \
                  produced by inline helpers in headers, are summed.",
    after_help = EXIT_CODES,
    propagate_version = true
)]
pub struct Cli {
    /// Say on stderr how the input was read (with --live: through the ioctl or as text, and
    /// why); stacks, ages, nodes and memcgs: show the file's statistics line (under the
    /// table, else on stderr).
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Show the call sites with the most memory allocated (or the most live allocations, or
    /// the most allocations per second between two captures: --by rate).
    #[command(after_help = EXIT_CODES)]
    Top(TopArgs),
    /// Totals per subsystem, directory, module or function.
    #[command(after_help = EXIT_CODES)]
    Group(GroupArgs),
    /// Save timestamped copies of /proc/allocinfo (DIR/allocinfo-YYYYmmddTHHMMSSZ.txt).
    #[command(after_help = EXIT_CODES)]
    Snap(SnapArgs),
    /// Compare two snapshots: per-site and per-subsystem growth, new and vanished sites.
    #[command(after_help = EXIT_CODES)]
    Diff(DiffArgs),
    /// Draw SVG charts: top call sites, group totals, or a series of snapshots over time.
    #[command(after_help = EXIT_CODES)]
    Plot(PlotArgs),
    /// Live allocations per call site and call chain, with the task of the latest
    /// allocation (allocprof's debugfs stacks file).
    #[command(after_help = EXIT_CODES)]
    Stacks(StacksArgs),
    /// Live allocations per call site by age, in power-of-two buckets of seconds
    /// (allocprof's debugfs ages file): what is old, what keeps growing.
    #[command(after_help = EXIT_CODES)]
    Ages(AgesArgs),
    /// Live pages per call site by the NUMA node of their memory (allocprof's
    /// debugfs nodes file): where a call site's memory lies.
    #[command(after_help = EXIT_CODES)]
    Nodes(NodesArgs),
    /// Live allocations per call site by the memory cgroup of the context that made them
    /// (allocprof's debugfs memcgs file): which application's memory a call site holds.
    #[command(after_help = EXIT_CODES)]
    Memcgs(MemcgsArgs),
    /// The call sites whose allocations allocprof fails on purpose (the f flag):
    /// failures, allocations asked and knobs (allocprof's debugfs faults file).
    #[command(after_help = EXIT_CODES)]
    Faults(FaultsArgs),
    /// Leak suspects: call sites ranked by steady growth over a series of captures
    /// (least-squares slope of bytes over time, R², steps in which they grew).
    #[command(long_about = LEAKS_ABOUT, after_help = EXIT_CODES)]
    Leaks(LeaksArgs),
}

const LEAKS_ABOUT: &str = "\
Leak suspects: call sites ranked by steady growth over a series of captures of
/proc/allocinfo (files oldest first, a directory of allocinfo-<timestamp>.txt or
.compact snapshots, or --live every --interval seconds).

For each call site, its bytes in every capture (0 where it is missing) are fitted
with a least-squares line over time: the slope is in bytes per second when every
capture has a time (a snapshot name, or --live), else in bytes per capture. R² is
how well the line fits (0 for a site whose bytes never change; those are left out).

A call site is a leak SUSPECT when its slope > 0, R² >= --min-r2 (default 0.9) and
it grew in at least --min-grew (default 2/3) of the steps from one capture to the
next. Suspects rank first, by slope; the other sites after them, by slope x R² (the
growth the line explains). So a site that grows and shrinks (a sawtooth, a cache)
ranks below a steady grower of smaller slope. At least 3 captures are needed.";

/// The choice of call sites by name, shared by all the read commands.
#[derive(Args, Debug, Clone)]
pub struct SiteArgs {
    /// Only call sites of module NAME (repeatable; `built-in` selects code that is not a module).
    #[arg(long, value_name = "NAME")]
    pub module: Vec<String>,
    /// Only call sites whose source file matches GLOB (repeatable), e.g. 'mm/*' or
    /// 'drivers/net/**'. `*` also matches `/`.
    #[arg(long, value_name = "GLOB", value_parser = parse_glob)]
    pub file: Vec<String>,
    /// Only call sites in function NAME (repeatable; globs such as 'kmalloc*' allowed).
    #[arg(long, value_name = "NAME", value_parser = parse_glob)]
    pub func: Vec<String>,
    /// Only call sites at source line N (repeatable).
    #[arg(long, value_name = "N")]
    pub line: Vec<u32>,
}

impl SiteArgs {
    pub fn filter(&self) -> Result<Filter> {
        Ok(Filter::new(&self.module, &self.file, &self.func)
            .context("invalid filter")?
            .with_lines(&self.line))
    }
}

/// Filters and parse options shared by the read commands.
#[derive(Args, Debug, Clone)]
pub struct FilterArgs {
    #[command(flatten)]
    pub site: SiteArgs,
    /// Only kernel lines with at least B bytes allocated (before lines of one site are
    /// summed; the kernel's MIN_SIZE). Same units as --min-bytes.
    #[arg(long, value_name = "B", value_parser = parse_size_u64)]
    pub min_size: Option<u64>,
    /// Only kernel lines with at most B bytes allocated (inclusive; the kernel's MAX_SIZE).
    #[arg(long, value_name = "B", value_parser = parse_size_u64)]
    pub max_size: Option<u64>,
    /// Only call sites whose counters the kernel marks inaccurate (`accurate:no`).
    #[arg(long, conflicts_with = "accurate")]
    pub inaccurate: bool,
    /// Only call sites whose counters are accurate (no `accurate:no`).
    #[arg(long)]
    pub accurate: bool,
    /// Hide rows below B bytes: call sites (top), group totals (group), absolute
    /// changes (diff), peak values (plot series, leaks). Plain integer or IEC suffix:
    /// 4096, 4K, 1M, 2MiB, 1.5G.
    #[arg(long, value_name = "B", value_parser = parse_size_arg)]
    pub min_bytes: Option<i64>,
    /// Fail with exit status 3 on malformed input lines instead of warning and skipping them.
    #[arg(long)]
    pub strict: bool,
}

impl FilterArgs {
    pub fn filter(&self) -> Result<Filter> {
        if let (Some(min), Some(max)) = (self.min_size, self.max_size) {
            if min > max {
                return Err(UsageError(format!(
                    "--min-size {min} is larger than --max-size {max}"
                ))
                .into());
            }
        }
        let accurate = match (self.accurate, self.inaccurate) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        };
        Ok(self
            .site
            .filter()?
            .with_sizes(self.min_size, self.max_size)
            .with_accurate(accurate))
    }
}

/// The filters of the commands that read allocprof's debugfs files.
#[derive(Args, Debug, Clone)]
pub struct SiteFilterArgs {
    #[command(flatten)]
    pub site: SiteArgs,
    /// Hide rows below B bytes. Plain integer or IEC suffix: 4096, 4K, 1M, 2MiB, 1.5G.
    #[arg(long, value_name = "B", value_parser = parse_size_arg)]
    pub min_bytes: Option<i64>,
    /// Fail with exit status 3 on malformed input lines instead of warning and skipping them.
    #[arg(long)]
    pub strict: bool,
}

/// Reading the running kernel instead of a FILE.
#[derive(Args, Debug, Clone)]
pub struct LiveArgs {
    /// Read the running kernel's /proc/allocinfo (see --proc): through its ioctl when part
    /// of the filter can be done by the kernel, else as text (see --via).
    #[arg(long, conflicts_with = "input")]
    pub live: bool,
    /// The file to read with --live [default: /proc/allocinfo].
    #[arg(long, value_name = "PATH")]
    pub proc: Option<PathBuf>,
    /// With --live: auto = the ioctl when the kernel can evaluate part of the filter
    /// (falling back to the text file when the ioctl is refused); ioctl = always the
    /// ioctl, no fallback; text = always the text file [default: auto].
    #[arg(long, value_enum)]
    pub via: Option<Via>,
}

fn parse_glob(s: &str) -> std::result::Result<String, String> {
    validate_glob(s).map_err(|e| e.to_string())
}

fn parse_size_arg(s: &str) -> std::result::Result<i64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

fn parse_size_u64(s: &str) -> std::result::Result<u64, String> {
    parse_size(s)
        .map_err(|e| e.to_string())
        .and_then(|v| u64::try_from(v).map_err(|e| e.to_string()))
}

/// A number of seconds, or with a unit: `90`, `90s`, `10m`, `1h`, `2d`.
fn parse_age_arg(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1),
        Some((i, 'm')) => (&t[..i], 60),
        Some((i, 'h')) => (&t[..i], 3600),
        Some((i, 'd')) => (&t[..i], 86400),
        _ => (t, 1),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("invalid age {s:?} (seconds, or with a unit: 90, 90s, 10m, 1h, 2d)"))
}

fn parse_interval(s: &str) -> std::result::Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("invalid number of seconds {s:?}"))?;
    if !(1.0..=1e9).contains(&v) {
        return Err(
            "interval must be at least 1 second (snapshot names have 1 s resolution)".into(),
        );
    }
    Ok(v)
}

/// Output format of the read commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Human-readable table with IEC sizes.
    Table,
    /// JSON (exact integers).
    Json,
    /// CSV with a header row (exact integers).
    Csv,
    /// Prometheus text exposition format (gauges; counters for faults, top's churn keys and
    /// memcgs' allocations kept without their cgroup), for
    /// node_exporter's textfile collector.
    Prometheus,
}

/// Output format of `stacks`: no Prometheus, whose series cannot be told
/// apart by call chain without a label per frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StacksFormat {
    /// Human-readable table with IEC sizes and the innermost frames.
    Table,
    /// JSON (exact integers, every frame).
    Json,
    /// CSV with a header row (exact integers, every frame in one column).
    Csv,
}

/// Output format of `leaks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LeaksFormat {
    /// Human-readable table with IEC sizes.
    Table,
    /// JSON (exact integers, the slope and R² as numbers, every capture's bytes).
    Json,
    /// CSV with a header row.
    Csv,
}

/// What `top` ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortKey {
    /// Bytes currently allocated.
    Bytes,
    /// Number of live allocations.
    Calls,
}

impl SortKey {
    /// The order of the biggest first: by this count, then by the other.
    pub fn biggest_first(self, a: &Record, b: &Record) -> Ordering {
        match self {
            SortKey::Bytes => b.bytes.cmp(&a.bytes).then(b.calls.cmp(&a.calls)),
            SortKey::Calls => b.calls.cmp(&a.calls).then(b.bytes.cmp(&a.bytes)),
        }
    }
}

/// What `top` ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TopBy {
    /// Bytes currently allocated.
    Bytes,
    /// Number of live allocations.
    Calls,
    /// Allocations per second between two captures, OLD NEW (or --live, --interval
    /// apart), from the allocated: and freed: keys that allocprof's c flag gives a call
    /// site in format 2.0; frees per second beside them.
    Rate,
}

impl TopBy {
    /// The order of a live figure, `None` for `rate`.
    pub fn live_key(self) -> Option<SortKey> {
        match self {
            TopBy::Bytes => Some(SortKey::Bytes),
            TopBy::Calls => Some(SortKey::Calls),
            TopBy::Rate => None,
        }
    }
}

#[derive(Args, Debug)]
pub struct TopArgs {
    /// Number of call sites to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 10)]
    pub n: usize,
    /// Rank by bytes, by number of live allocations, or by allocations per second
    /// between two captures.
    #[arg(long, value_enum, default_value_t = TopBy::Bytes)]
    pub by: TopBy,
    /// Output format (--by rate: table, json or csv).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// With --by rate and --live: seconds between the two captures (at least 1)
    /// [default: 60].
    #[arg(long, value_name = "S", value_parser = parse_interval)]
    pub interval: Option<f64>,
    /// allocinfo file to read (text or compact form; `-` = standard input)
    /// [default: /proc/allocinfo]. With --by rate: two captures, OLD NEW, whose names
    /// give their times (allocinfo-YYYYmmddTHHMMSSZ.txt, as `allocinfo snap` writes them).
    #[arg(value_name = "FILE", num_args = 0..=2)]
    pub input: Vec<String>,
}

#[derive(Args, Debug)]
pub struct GroupArgs {
    /// How to group: subsystem (mm, fs, kernel, drivers/net, arch/x86, ...), dir, module, func.
    #[arg(long, value_enum, default_value_t = GroupBy::Subsystem)]
    pub by: GroupBy,
    /// Number of path components for subsystem/dir (default: subsystem 1, or 2 under
    /// drivers/ and arch/; dir: the whole directory).
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Number of groups to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 0)]
    pub n: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// allocinfo file to read (text or compact form; `-` = standard input).
    #[arg(value_name = "FILE", default_value = DEFAULT_SOURCE)]
    pub input: String,
}

#[derive(Args, Debug)]
pub struct SnapArgs {
    /// Seconds between snapshots (at least 1).
    #[arg(long, value_name = "S", default_value = "60", value_parser = parse_interval)]
    pub interval: f64,
    /// Number of snapshots to take (0 = until interrupted).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub count: u64,
    /// Directory to write snapshots to (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub out: PathBuf,
    /// File to copy.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_SOURCE)]
    pub source: PathBuf,
    /// Write the compact form (DIR/allocinfo-YYYYmmddTHHMMSSZ.compact): a string table
    /// and line deltas, about 60 % of the size of the text, read back by every command of this tool.
    #[arg(long)]
    pub compact: bool,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// Older snapshot.
    #[arg(value_name = "OLD")]
    pub old: String,
    /// Newer snapshot.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// How to group the per-group table.
    #[arg(long, value_enum, default_value_t = GroupBy::Subsystem)]
    pub by: GroupBy,
    /// Number of path components for subsystem/dir grouping (see `group --help`).
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Show at most N site rows and N group rows (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 0)]
    pub n: usize,
    /// How call sites are paired: exact = by file, line, module and function; moved = the
    /// same, then the sites left on both sides by module, file and function when their
    /// line moved (a kernel upgrade): one each, or several in line order when a function
    /// has as many on both sides (else they stay new and vanished). Marked `moved OLD→NEW`.
    /// Then, the same way, the sites of a module by module and function whose file is named
    /// absolute on one side and relative on the other (an external module across kernels:
    /// `/…/modules/a.c` and `modules/a.c`). Marked `path OLDFILE:OLDLINE`.
    #[arg(long = "match", value_enum, value_name = "HOW", default_value_t = Matching::Moved)]
    pub matching: Matching,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub filter: FilterArgs,
}

#[derive(Args, Debug)]
pub struct StacksArgs {
    /// Number of call chains to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 10)]
    pub n: usize,
    /// Rank by bytes or by number of live allocations.
    #[arg(long, value_enum, default_value_t = SortKey::Bytes)]
    pub by: SortKey,
    /// Frames of each chain in the table, innermost first (0 = all; JSON and CSV
    /// always have all).
    #[arg(long, value_name = "K", default_value_t = 4)]
    pub frames: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = StacksFormat::Table)]
    pub format: StacksFormat,
    #[command(flatten)]
    pub filter: SiteFilterArgs,
    /// The stacks file to read (`-` = standard input).
    #[arg(value_name = "FILE", default_value = STACKS_SOURCE)]
    pub input: String,
}

/// What `ages` ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgesSortKey {
    /// Bytes of the site (in the buckets shown).
    Bytes,
    /// Live allocations of the site (in the buckets shown).
    Calls,
    /// The oldest allocations first: by the site's oldest bucket, then by its bytes.
    Age,
}

/// The options `ages`, `nodes` and `memcgs` share.
#[derive(Args, Debug)]
pub struct PartsArgs {
    /// Number of call sites to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 10)]
    pub n: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub filter: SiteFilterArgs,
}

#[derive(Args, Debug)]
pub struct AgesArgs {
    #[command(flatten)]
    pub parts: PartsArgs,
    /// Rank by bytes, by number of live allocations, or by age.
    #[arg(long, value_enum, default_value_t = AgesSortKey::Bytes)]
    pub by: AgesSortKey,
    /// Only the buckets whose allocations are all at least S old (the bucket's lower
    /// bound is at least S): seconds, or with a unit: 90, 10m, 1h, 2d.
    #[arg(long, value_name = "S", value_parser = parse_age_arg)]
    pub min_age: Option<u64>,
    /// The ages file to read (`-` = standard input).
    #[arg(value_name = "FILE", default_value = AGES_SOURCE)]
    pub input: String,
}

#[derive(Args, Debug)]
pub struct NodesArgs {
    #[command(flatten)]
    pub parts: PartsArgs,
    /// Rank by bytes or by number of live allocations (on the nodes shown).
    #[arg(long, value_enum, default_value_t = SortKey::Bytes)]
    pub by: SortKey,
    /// Only node N's figures (a call site without pages there is left out).
    #[arg(long, value_name = "N")]
    pub node: Option<u32>,
    /// The nodes file to read (`-` = standard input).
    #[arg(value_name = "FILE", default_value = NODES_SOURCE)]
    pub input: String,
}

#[derive(Args, Debug)]
pub struct MemcgsArgs {
    #[command(flatten)]
    pub parts: PartsArgs,
    /// Rank by bytes or by number of live allocations (in the cgroups shown).
    #[arg(long, value_enum, default_value_t = SortKey::Bytes)]
    pub by: SortKey,
    /// Only the figures of the cgroups whose path matches GLOB (repeatable; `*` also
    /// matches `/`): the path as the file escapes it (/my\040app) or as it is (/my app).
    /// `-` selects the contexts that charge no cgroup, `?` the allocations kept without
    /// theirs. A call site without allocations there is left out.
    #[arg(long, value_name = "GLOB", value_parser = parse_glob)]
    pub memcg: Vec<String>,
    /// The memcgs file to read (`-` = standard input).
    #[arg(value_name = "FILE", default_value = MEMCGS_SOURCE)]
    pub input: String,
}

/// What `faults` ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FaultsSortKey {
    /// Allocations made to fail.
    Failures,
    /// Allocations that asked whether to fail.
    Asked,
}

#[derive(Args, Debug)]
pub struct FaultsArgs {
    /// Number of call sites to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 10)]
    pub n: usize,
    /// Rank by failures or by allocations asked (then by the other).
    #[arg(long, value_enum, default_value_t = FaultsSortKey::Failures)]
    pub by: FaultsSortKey,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub site: SiteArgs,
    /// Fail with exit status 3 on malformed input lines instead of warning and skipping them.
    #[arg(long)]
    pub strict: bool,
    /// The faults file to read (`-` = standard input).
    #[arg(value_name = "FILE", default_value = FAULTS_SOURCE)]
    pub input: String,
}

#[derive(Args, Debug)]
pub struct PlotArgs {
    #[command(subcommand)]
    pub kind: PlotKind,
}

#[derive(Subcommand, Debug)]
pub enum PlotKind {
    /// Horizontal bar chart of the top call sites.
    #[command(after_help = EXIT_CODES)]
    Top(PlotTopArgs),
    /// Horizontal bar chart of group totals (subsystems by default).
    #[command(after_help = EXIT_CODES)]
    Group(PlotGroupArgs),
    /// Line chart of the top call sites or groups over a series of snapshots.
    #[command(after_help = EXIT_CODES)]
    Series(PlotSeriesArgs),
}

#[derive(Args, Debug)]
pub struct ChartArgs {
    /// SVG file to write.
    #[arg(short = 'o', long, value_name = "FILE.svg")]
    pub out: PathBuf,
    /// Chart title (default: describes the data).
    #[arg(long)]
    pub title: Option<String>,
    /// Width in pixels.
    #[arg(long, default_value_t = 1200)]
    pub width: u32,
    /// Height in pixels (default: fits the number of bars; 600 for series).
    #[arg(long)]
    pub height: Option<u32>,
}

#[derive(Args, Debug)]
pub struct PlotTopArgs {
    /// Number of call sites to draw.
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 20)]
    pub n: usize,
    /// Rank and draw bytes or live allocations.
    #[arg(long, value_enum, default_value_t = SortKey::Bytes)]
    pub by: SortKey,
    #[command(flatten)]
    pub chart: ChartArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// allocinfo file to read (text or compact form; `-` = standard input).
    #[arg(value_name = "FILE", default_value = DEFAULT_SOURCE)]
    pub input: String,
}

#[derive(Args, Debug)]
pub struct PlotGroupArgs {
    /// How to group (see `group --help`).
    #[arg(long, value_enum, default_value_t = GroupBy::Subsystem)]
    pub by: GroupBy,
    /// Number of path components for subsystem/dir grouping.
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Number of groups to draw.
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 20)]
    pub n: usize,
    #[command(flatten)]
    pub chart: ChartArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// allocinfo file to read (text or compact form; `-` = standard input).
    #[arg(value_name = "FILE", default_value = DEFAULT_SOURCE)]
    pub input: String,
}

/// What each line of `plot series` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SeriesBy {
    /// Individual call sites.
    Site,
    /// Subsystems (see `group --help`).
    Subsystem,
    /// Source directories.
    Dir,
    /// Modules, `(built-in)` for the rest.
    Module,
    /// Functions.
    Func,
}

#[derive(Args, Debug)]
pub struct PlotSeriesArgs {
    /// Follow call sites or groups.
    #[arg(long, value_enum, default_value_t = SeriesBy::Site)]
    pub by: SeriesBy,
    /// Number of path components for subsystem/dir grouping.
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Number of lines (the K largest by peak bytes over the series).
    #[arg(short = 'n', long = "limit", value_name = "K", default_value_t = 5)]
    pub n: usize,
    #[command(flatten)]
    pub chart: ChartArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Snapshot files in time order, or directories of `allocinfo-<timestamp>.txt`
    /// snapshots (ordered by their names).
    #[arg(value_name = "FILE|DIR", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LeaksArgs {
    /// Number of call sites to show (0 = all whose bytes changed).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 10)]
    pub n: usize,
    /// A suspect's least-squares fit must have R² of at least R (0 to 1).
    #[arg(long, value_name = "R", default_value = "0.9", value_parser = parse_ratio)]
    pub min_r2: f64,
    /// A suspect must have grown in at least this share of the steps between captures:
    /// a fraction (2/3) or a decimal (0.75).
    #[arg(long, value_name = "SHARE", default_value = "2/3", value_parser = Share::parse)]
    pub min_grew: Share,
    /// allocprof's ages file (format of `allocinfo ages`): show the oldest live
    /// allocations of the call sites it has (those with the a flag).
    #[arg(long, value_name = "FILE")]
    pub ages: Option<String>,
    /// Draw the bytes of the call sites shown (at most 20) over the captures as an SVG
    /// line chart.
    #[arg(long, value_name = "OUT.svg")]
    pub plot: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LeaksFormat::Table)]
    pub format: LeaksFormat,
    #[command(flatten)]
    pub filter: FilterArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// With --live: seconds between captures (at least 1) [default: 60].
    #[arg(long, value_name = "S", value_parser = parse_interval)]
    pub interval: Option<f64>,
    /// With --live: the number of captures (at least 3) [default: 10].
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub count: Option<usize>,
    /// Captures, oldest first (text or compact form), or directories of
    /// `allocinfo-<timestamp>.txt`/`.compact` snapshots (ordered by their names).
    #[arg(value_name = "FILE|DIR")]
    pub input: Vec<PathBuf>,
}

/// A number from 0 to 1.
fn parse_ratio(s: &str) -> std::result::Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("invalid value {s:?} (a number from 0 to 1)")),
    }
}

/// The number of captures of `leaks --live`: at least 3.
fn parse_count(s: &str) -> std::result::Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 3 => Ok(n),
        Ok(n) => Err(format!(
            "{n} captures are too few: a trend needs at least 3"
        )),
        Err(_) => Err(format!("invalid number {s:?}")),
    }
}

/// An invalid combination of arguments found after parsing: exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
