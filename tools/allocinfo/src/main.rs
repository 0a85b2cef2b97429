//! `allocinfo`: inspect Linux `/proc/allocinfo` (memory allocation profiling).

use allocinfo::ages::{AgeBucket, AgeSite};
use allocinfo::compact;
use allocinfo::diff::diff;
use allocinfo::faults::{self, FaultSite};
use allocinfo::filter::{validate_glob, Filter};
use allocinfo::group::{group, group_key, GroupBy};
use allocinfo::live::{self, Via};
use allocinfo::nodes::Node;
use allocinfo::output::{self, FaultSummary, Format, PartOutput, StacksFormat, TopSummary};
use allocinfo::parse::parse_bytes;
use allocinfo::parsed::{Parsed, Version};
use allocinfo::plot::{self, ChartOpts, Line, ValueKind, XAxis};
use allocinfo::record::{merge_duplicates, Record};
use allocinfo::snap;
use allocinfo::split::{self, PartSite};
use allocinfo::stacks::{self, StackRecord};
use allocinfo::units::parse_size;
use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Display;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const DEFAULT_SOURCE: &str = "/proc/allocinfo";
/// allocprof's call chains of the call sites with the `s` flag.
const STACKS_SOURCE: &str = "/sys/kernel/debug/allocprof/stacks";
/// allocprof's age buckets of the call sites with the `a` flag.
const AGES_SOURCE: &str = "/sys/kernel/debug/allocprof/ages";
/// allocprof's pages by node of the call sites with the `n` flag.
const NODES_SOURCE: &str = "/sys/kernel/debug/allocprof/nodes";
/// allocprof's failures and knobs of the call sites with the `f` flag.
const FAULTS_SOURCE: &str = faults::FAULTS_FILE;

const EXIT_CODES: &str = "\
Exit status:
  0  success
  1  runtime error (unreadable input, unwritable output, ...)
  2  usage error (invalid command, option or argument)
  3  malformed input lines and --strict was given";

/// Most malformed-line warnings printed per input file.
const MAX_WARNINGS: usize = 20;

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
struct Cli {
    /// Say on stderr how the input was read (with --live: through the ioctl or as text, and
    /// why); stacks and ages: show the file's statistics line (under the table, else on stderr).
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Show the call sites with the most memory allocated (or the most live allocations).
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
    /// The call sites whose allocations allocprof fails on purpose (the f flag):
    /// failures, allocations asked and knobs (allocprof's debugfs faults file).
    #[command(after_help = EXIT_CODES)]
    Faults(FaultsArgs),
}

/// The choice of call sites by name, shared by all the read commands.
#[derive(Args, Debug, Clone)]
struct SiteArgs {
    /// Only call sites of module NAME (repeatable; `built-in` selects code that is not a module).
    #[arg(long, value_name = "NAME")]
    module: Vec<String>,
    /// Only call sites whose source file matches GLOB (repeatable), e.g. 'mm/*' or
    /// 'drivers/net/**'. `*` also matches `/`.
    #[arg(long, value_name = "GLOB", value_parser = parse_glob)]
    file: Vec<String>,
    /// Only call sites in function NAME (repeatable; globs such as 'kmalloc*' allowed).
    #[arg(long, value_name = "NAME", value_parser = parse_glob)]
    func: Vec<String>,
    /// Only call sites at source line N (repeatable).
    #[arg(long, value_name = "N")]
    line: Vec<u32>,
}

impl SiteArgs {
    fn filter(&self) -> Result<Filter> {
        Ok(Filter::new(&self.module, &self.file, &self.func)
            .context("invalid filter")?
            .with_lines(&self.line))
    }
}

/// Filters and parse options shared by the read commands.
#[derive(Args, Debug, Clone)]
struct FilterArgs {
    #[command(flatten)]
    site: SiteArgs,
    /// Only kernel lines with at least B bytes allocated (before lines of one site are
    /// summed; the kernel's MIN_SIZE). Same units as --min-bytes.
    #[arg(long, value_name = "B", value_parser = parse_size_u64)]
    min_size: Option<u64>,
    /// Only kernel lines with at most B bytes allocated (inclusive; the kernel's MAX_SIZE).
    #[arg(long, value_name = "B", value_parser = parse_size_u64)]
    max_size: Option<u64>,
    /// Only call sites whose counters the kernel marks inaccurate (`accurate:no`).
    #[arg(long, conflicts_with = "accurate")]
    inaccurate: bool,
    /// Only call sites whose counters are accurate (no `accurate:no`).
    #[arg(long)]
    accurate: bool,
    /// Hide rows below B bytes: call sites (top), group totals (group), absolute
    /// changes (diff), peak values (plot series). Plain integer or IEC suffix:
    /// 4096, 4K, 1M, 2MiB, 1.5G.
    #[arg(long, value_name = "B", value_parser = parse_size_arg)]
    min_bytes: Option<i64>,
    /// Fail with exit status 3 on malformed input lines instead of warning and skipping them.
    #[arg(long)]
    strict: bool,
}

impl FilterArgs {
    fn filter(&self) -> Result<Filter> {
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
struct SiteFilterArgs {
    #[command(flatten)]
    site: SiteArgs,
    /// Hide rows below B bytes. Plain integer or IEC suffix: 4096, 4K, 1M, 2MiB, 1.5G.
    #[arg(long, value_name = "B", value_parser = parse_size_arg)]
    min_bytes: Option<i64>,
    /// Fail with exit status 3 on malformed input lines instead of warning and skipping them.
    #[arg(long)]
    strict: bool,
}

/// Reading the running kernel instead of a FILE.
#[derive(Args, Debug, Clone)]
struct LiveArgs {
    /// Read the running kernel's /proc/allocinfo (see --proc): through its ioctl when part
    /// of the filter can be done by the kernel, else as text (see --via).
    #[arg(long, conflicts_with = "input")]
    live: bool,
    /// The file to read with --live [default: /proc/allocinfo].
    #[arg(long, value_name = "PATH")]
    proc: Option<PathBuf>,
    /// With --live: auto = the ioctl when the kernel can evaluate part of the filter
    /// (falling back to the text file when the ioctl is refused); ioctl = always the
    /// ioctl, no fallback; text = always the text file [default: auto].
    #[arg(long, value_enum)]
    via: Option<Via>,
}

/// Where the records come from.
#[derive(Debug, Clone)]
enum Input {
    /// A file in the text or compact form, `-` = standard input.
    File(String),
    /// The running kernel.
    Live {
        proc: PathBuf,
        via: Via,
        verbose: bool,
    },
}

impl Input {
    fn new(live: &LiveArgs, file: &str, verbose: bool) -> Result<Input> {
        if !live.live && (live.proc.is_some() || live.via.is_some()) {
            // (clap's `requires` cannot tell an absent flag from a false one.)
            return Err(UsageError("--proc and --via need --live".into()).into());
        }
        Ok(if live.live {
            Input::Live {
                proc: live
                    .proc
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_SOURCE)),
                via: live.via.unwrap_or(Via::Auto),
                verbose,
            }
        } else {
            Input::File(file.to_string())
        })
    }

    /// For titles.
    fn name(&self) -> String {
        match self {
            Input::File(path) => display_name(path),
            Input::Live { proc, .. } => proc.display().to_string(),
        }
    }
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

/// What `top` ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SortKey {
    /// Bytes currently allocated.
    Bytes,
    /// Number of live allocations.
    Calls,
}

#[derive(Args, Debug)]
struct TopArgs {
    /// Number of call sites to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 10)]
    n: usize,
    /// Rank by bytes or by number of live allocations.
    #[arg(long, value_enum, default_value_t = SortKey::Bytes)]
    by: SortKey,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    live: LiveArgs,
    /// allocinfo file to read (text or compact form; `-` = standard input).
    #[arg(value_name = "FILE", default_value = DEFAULT_SOURCE)]
    input: String,
}

#[derive(Args, Debug)]
struct GroupArgs {
    /// How to group: subsystem (mm, fs, kernel, drivers/net, arch/x86, ...), dir, module, func.
    #[arg(long, value_enum, default_value_t = GroupBy::Subsystem)]
    by: GroupBy,
    /// Number of path components for subsystem/dir (default: subsystem 1, or 2 under
    /// drivers/ and arch/; dir: the whole directory).
    #[arg(long, value_name = "N")]
    depth: Option<usize>,
    /// Number of groups to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 0)]
    n: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    live: LiveArgs,
    /// allocinfo file to read (text or compact form; `-` = standard input).
    #[arg(value_name = "FILE", default_value = DEFAULT_SOURCE)]
    input: String,
}

#[derive(Args, Debug)]
struct SnapArgs {
    /// Seconds between snapshots (at least 1).
    #[arg(long, value_name = "S", default_value = "60", value_parser = parse_interval)]
    interval: f64,
    /// Number of snapshots to take (0 = until interrupted).
    #[arg(long, value_name = "N", default_value_t = 1)]
    count: u64,
    /// Directory to write snapshots to (created if missing).
    #[arg(long, value_name = "DIR", default_value = ".")]
    out: PathBuf,
    /// File to copy.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_SOURCE)]
    source: PathBuf,
    /// Write the compact form (DIR/allocinfo-YYYYmmddTHHMMSSZ.compact): a string table
    /// and line deltas, about 60 % of the size of the text, read back by every command of this tool.
    #[arg(long)]
    compact: bool,
}

#[derive(Args, Debug)]
struct DiffArgs {
    /// Older snapshot.
    #[arg(value_name = "OLD")]
    old: String,
    /// Newer snapshot.
    #[arg(value_name = "NEW")]
    new: String,
    /// How to group the per-group table.
    #[arg(long, value_enum, default_value_t = GroupBy::Subsystem)]
    by: GroupBy,
    /// Number of path components for subsystem/dir grouping (see `group --help`).
    #[arg(long, value_name = "N")]
    depth: Option<usize>,
    /// Show at most N site rows and N group rows (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 0)]
    n: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    filter: FilterArgs,
}

#[derive(Args, Debug)]
struct StacksArgs {
    /// Number of call chains to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 10)]
    n: usize,
    /// Rank by bytes or by number of live allocations.
    #[arg(long, value_enum, default_value_t = SortKey::Bytes)]
    by: SortKey,
    /// Frames of each chain in the table, innermost first (0 = all; JSON and CSV
    /// always have all).
    #[arg(long, value_name = "K", default_value_t = 4)]
    frames: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = StacksFormat::Table)]
    format: StacksFormat,
    #[command(flatten)]
    filter: SiteFilterArgs,
    /// The stacks file to read (`-` = standard input).
    #[arg(value_name = "FILE", default_value = STACKS_SOURCE)]
    input: String,
}

/// What `ages` ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AgesSortKey {
    /// Bytes of the site (in the buckets shown).
    Bytes,
    /// Live allocations of the site (in the buckets shown).
    Calls,
    /// The oldest allocations first: by the site's oldest bucket, then by its bytes.
    Age,
}

/// The options `ages` and `nodes` share.
#[derive(Args, Debug)]
struct PartsArgs {
    /// Number of call sites to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 10)]
    n: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    filter: SiteFilterArgs,
}

#[derive(Args, Debug)]
struct AgesArgs {
    #[command(flatten)]
    parts: PartsArgs,
    /// Rank by bytes, by number of live allocations, or by age.
    #[arg(long, value_enum, default_value_t = AgesSortKey::Bytes)]
    by: AgesSortKey,
    /// Only the buckets whose allocations are all at least S old (the bucket's lower
    /// bound is at least S): seconds, or with a unit: 90, 10m, 1h, 2d.
    #[arg(long, value_name = "S", value_parser = parse_age_arg)]
    min_age: Option<u64>,
    /// The ages file to read (`-` = standard input).
    #[arg(value_name = "FILE", default_value = AGES_SOURCE)]
    input: String,
}

#[derive(Args, Debug)]
struct NodesArgs {
    #[command(flatten)]
    parts: PartsArgs,
    /// Rank by bytes or by number of live allocations (on the nodes shown).
    #[arg(long, value_enum, default_value_t = SortKey::Bytes)]
    by: SortKey,
    /// Only node N's figures (a call site without pages there is left out).
    #[arg(long, value_name = "N")]
    node: Option<u32>,
    /// The nodes file to read (`-` = standard input).
    #[arg(value_name = "FILE", default_value = NODES_SOURCE)]
    input: String,
}

/// What `faults` ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FaultsSortKey {
    /// Allocations made to fail.
    Failures,
    /// Allocations that asked whether to fail.
    Asked,
}

#[derive(Args, Debug)]
struct FaultsArgs {
    /// Number of call sites to show (0 = all).
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 10)]
    n: usize,
    /// Rank by failures or by allocations asked (then by the other).
    #[arg(long, value_enum, default_value_t = FaultsSortKey::Failures)]
    by: FaultsSortKey,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    site: SiteArgs,
    /// Fail with exit status 3 on malformed input lines instead of warning and skipping them.
    #[arg(long)]
    strict: bool,
    /// The faults file to read (`-` = standard input).
    #[arg(value_name = "FILE", default_value = FAULTS_SOURCE)]
    input: String,
}

#[derive(Args, Debug)]
struct PlotArgs {
    #[command(subcommand)]
    kind: PlotKind,
}

#[derive(Subcommand, Debug)]
enum PlotKind {
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
struct ChartArgs {
    /// SVG file to write.
    #[arg(short = 'o', long, value_name = "FILE.svg")]
    out: PathBuf,
    /// Chart title (default: describes the data).
    #[arg(long)]
    title: Option<String>,
    /// Width in pixels.
    #[arg(long, default_value_t = 1200)]
    width: u32,
    /// Height in pixels (default: fits the number of bars; 600 for series).
    #[arg(long)]
    height: Option<u32>,
}

#[derive(Args, Debug)]
struct PlotTopArgs {
    /// Number of call sites to draw.
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 20)]
    n: usize,
    /// Rank and draw bytes or live allocations.
    #[arg(long, value_enum, default_value_t = SortKey::Bytes)]
    by: SortKey,
    #[command(flatten)]
    chart: ChartArgs,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    live: LiveArgs,
    /// allocinfo file to read (text or compact form; `-` = standard input).
    #[arg(value_name = "FILE", default_value = DEFAULT_SOURCE)]
    input: String,
}

#[derive(Args, Debug)]
struct PlotGroupArgs {
    /// How to group (see `group --help`).
    #[arg(long, value_enum, default_value_t = GroupBy::Subsystem)]
    by: GroupBy,
    /// Number of path components for subsystem/dir grouping.
    #[arg(long, value_name = "N")]
    depth: Option<usize>,
    /// Number of groups to draw.
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 20)]
    n: usize,
    #[command(flatten)]
    chart: ChartArgs,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    live: LiveArgs,
    /// allocinfo file to read (text or compact form; `-` = standard input).
    #[arg(value_name = "FILE", default_value = DEFAULT_SOURCE)]
    input: String,
}

/// What each line of `plot series` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SeriesBy {
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
struct PlotSeriesArgs {
    /// Follow call sites or groups.
    #[arg(long, value_enum, default_value_t = SeriesBy::Site)]
    by: SeriesBy,
    /// Number of path components for subsystem/dir grouping.
    #[arg(long, value_name = "N")]
    depth: Option<usize>,
    /// Number of lines (the K largest by peak bytes over the series).
    #[arg(short = 'n', long = "limit", value_name = "K", default_value_t = 5)]
    n: usize,
    #[command(flatten)]
    chart: ChartArgs,
    #[command(flatten)]
    filter: FilterArgs,
    /// Snapshot files in time order, or directories of `allocinfo-<timestamp>.txt`
    /// snapshots (ordered by their names).
    #[arg(value_name = "FILE|DIR", required = true, num_args = 1..)]
    files: Vec<PathBuf>,
}

/// An invalid combination of arguments found after parsing: exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

/// Malformed input with --strict: exit status 3.
#[derive(Debug, thiserror::Error)]
#[error("{count} malformed line(s) in {name} (--strict)")]
struct StrictError {
    count: usize,
    name: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(ioe) = e.downcast_ref::<io::Error>() {
                if ioe.kind() == io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("allocinfo: error: {e:#}");
            if e.downcast_ref::<StrictError>().is_some() {
                ExitCode::from(3)
            } else if e.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let v = cli.verbose;
    match cli.command {
        Cmd::Top(a) => cmd_top(a, v),
        Cmd::Group(a) => cmd_group(a, v),
        Cmd::Snap(a) => cmd_snap(a),
        Cmd::Diff(a) => cmd_diff(a),
        Cmd::Plot(p) => match p.kind {
            PlotKind::Top(a) => cmd_plot_top(a, v),
            PlotKind::Group(a) => cmd_plot_group(a, v),
            PlotKind::Series(a) => cmd_plot_series(a),
        },
        Cmd::Stacks(a) => cmd_stacks(a, v),
        Cmd::Ages(a) => cmd_ages(a, v),
        Cmd::Nodes(a) => cmd_nodes(a, v),
        Cmd::Faults(a) => cmd_faults(a),
    }
}

fn write_stdout(s: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(s.as_bytes())?;
    out.flush()?;
    Ok(())
}

fn display_name(path: &str) -> String {
    if path == "-" {
        "<stdin>".to_string()
    } else {
        path.to_string()
    }
}

fn read_input(path: &str) -> Result<Vec<u8>> {
    if path == "-" {
        let mut buf = Vec::new();
        io::stdin()
            .read_to_end(&mut buf)
            .context("cannot read standard input")?;
        return Ok(buf);
    }
    std::fs::read(path).map_err(|e| {
        let hint = if path == DEFAULT_SOURCE && e.kind() == io::ErrorKind::NotFound {
            " (is the kernel built with CONFIG_MEM_ALLOC_PROFILING?)"
        } else {
            ""
        };
        anyhow::anyhow!("cannot read {path}: {e}{hint}")
    })
}

/// Read and parse a file, reporting malformed lines.
fn read_parsed(path: &str, strict: bool) -> Result<Parsed> {
    parse_checked(&read_input(path)?, &display_name(path), strict)
}

/// Report malformed lines on stderr: warnings, or errors (exit status 3) with `strict`.
fn report_issues<I: Display>(issues: &[I], name: &str, strict: bool) -> Result<()> {
    let level = if strict { "error" } else { "warning" };
    for issue in issues.iter().take(MAX_WARNINGS) {
        eprintln!("allocinfo: {level}: {name}: {issue}");
    }
    if issues.len() > MAX_WARNINGS {
        eprintln!(
            "allocinfo: {level}: {name}: ... and {} more malformed lines",
            issues.len() - MAX_WARNINGS
        );
    }
    if strict && !issues.is_empty() {
        return Err(StrictError {
            count: issues.len(),
            name: name.to_string(),
        }
        .into());
    }
    Ok(())
}

/// Parse, reporting malformed lines (as errors with `strict`).
fn parse_checked(data: &[u8], name: &str, strict: bool) -> Result<Parsed> {
    let parsed = parse_bytes(data);
    report_issues(&parsed.issues, name, strict)?;
    if let Some(v) = parsed.version {
        if v.major > Version::MAX_KNOWN_MAJOR {
            eprintln!(
                "allocinfo: warning: {name}: unknown format version {v}, reading it like 2.0"
            );
        }
    }
    Ok(parsed)
}

/// Read (a file, or the live kernel), filter, and merge duplicate sites.
fn load(input: &Input, f: &FilterArgs) -> Result<Vec<Record>> {
    let filter = f.filter()?;
    let records = match input {
        Input::File(path) => read_parsed(path, f.strict)?.records,
        Input::Live { proc, via, verbose } => {
            let r = live::read_live(proc, &filter, *via)?;
            for w in &r.warnings {
                eprintln!("allocinfo: warning: {w}");
            }
            if *verbose {
                eprintln!("allocinfo: {}", r.note);
            }
            match r.data {
                live::Data::Records(recs) => recs,
                live::Data::Text => read_parsed(&proc.to_string_lossy(), f.strict)?.records,
            }
        }
    };
    // The whole filter, also after the ioctl (whose answer is a superset).
    Ok(merge_duplicates(&filter.apply(&records)))
}

/// `load` of a file.
fn load_file(path: &str, f: &FilterArgs) -> Result<Vec<Record>> {
    load(&Input::File(path.to_string()), f)
}

/// The order of the biggest first: by `by`, then by the other count.
fn biggest_first(by: SortKey, a: &Record, b: &Record) -> Ordering {
    match by {
        SortKey::Bytes => b.bytes.cmp(&a.bytes).then(b.calls.cmp(&a.calls)),
        SortKey::Calls => b.calls.cmp(&a.calls).then(b.bytes.cmp(&a.bytes)),
    }
}

fn sort_sites(records: &mut [Record], by: SortKey) {
    records.sort_by(|a, b| biggest_first(by, a, b).then_with(|| a.key().cmp(&b.key())));
}

fn limit<T>(v: &mut Vec<T>, n: usize) {
    if n > 0 {
        v.truncate(n);
    }
}

/// Filtered, min-bytes-trimmed and sorted call sites, plus the pre-limit summary.
fn top_sites(
    input: &Input,
    f: &FilterArgs,
    by: SortKey,
    n: usize,
) -> Result<(Vec<Record>, TopSummary)> {
    let mut recs = load(input, f)?;
    if let Some(min) = f.min_bytes {
        recs.retain(|r| r.bytes >= min);
    }
    let summary = TopSummary::of(&recs);
    sort_sites(&mut recs, by);
    limit(&mut recs, n);
    Ok((recs, summary))
}

fn cmd_top(a: TopArgs, verbose: bool) -> Result<()> {
    let input = Input::new(&a.live, &a.input, verbose)?;
    let (recs, summary) = top_sites(&input, &a.filter, a.by, a.n)?;
    write_stdout(&output::render_top(&recs, summary, a.format)?)
}

fn group_rows(
    input: &Input,
    f: &FilterArgs,
    by: GroupBy,
    depth: Option<usize>,
    n: usize,
) -> Result<Vec<allocinfo::group::GroupRow>> {
    let recs = load(input, f)?;
    let mut rows = group(&recs, by, depth);
    if let Some(min) = f.min_bytes {
        rows.retain(|r| r.bytes >= min);
    }
    limit(&mut rows, n);
    Ok(rows)
}

fn cmd_group(a: GroupArgs, verbose: bool) -> Result<()> {
    let input = Input::new(&a.live, &a.input, verbose)?;
    let rows = group_rows(&input, &a.filter, a.by, a.depth, a.n)?;
    write_stdout(&output::render_group(&rows, a.by, a.format)?)
}

fn cmd_diff(a: DiffArgs) -> Result<()> {
    let old = load_file(&a.old, &a.filter)?;
    let new = load_file(&a.new, &a.filter)?;
    let mut d = diff(&old, &new, a.by, a.depth);
    if let Some(min) = a.filter.min_bytes {
        d.retain_min_bytes(min);
    }
    limit(&mut d.sites, a.n);
    limit(&mut d.groups, a.n);
    write_stdout(&output::render_diff(&d, a.format)?)
}

/// Read one of allocprof's debugfs files (`-` = standard input).
fn read_debugfs(path: &str) -> Result<Vec<u8>> {
    if path == "-" {
        return read_input(path);
    }
    std::fs::read(path).map_err(|e| {
        let hint = match e.kind() {
            io::ErrorKind::NotFound => {
                " (debugfs must be mounted on /sys/kernel/debug, e.g. `mount -t debugfs none \
                 /sys/kernel/debug`, and the allocprof module loaded)"
            }
            io::ErrorKind::PermissionDenied => {
                " (debugfs is readable by root only; it must be mounted on /sys/kernel/debug \
                 and the allocprof module loaded)"
            }
            _ => "",
        };
        anyhow::anyhow!("cannot read {path}: {e}{hint}")
    })
}

/// With `-v`: the statistics line of a debugfs file, under the table or on stderr.
fn append_stats(out: &mut String, stats: Option<&str>, table: bool, verbose: bool) {
    match stats {
        Some(line) if verbose => {
            if table {
                out.push_str(line);
                out.push('\n');
            } else {
                eprintln!("{line}");
            }
        }
        _ => {}
    }
}

fn cmd_stacks(a: StacksArgs, verbose: bool) -> Result<()> {
    let filter = a.filter.site.filter()?;
    let name = display_name(&a.input);
    let parsed = stacks::parse_stacks_bytes(&read_debugfs(&a.input)?);
    report_issues(&parsed.issues, &name, a.filter.strict)?;
    let mut rows: Vec<StackRecord> = parsed
        .records
        .into_iter()
        .filter(|r| filter.matches(&r.site))
        .filter(|r| a.filter.min_bytes.is_none_or(|m| r.site.bytes >= m))
        .collect();
    let summary = TopSummary::of(rows.iter().map(|r| &r.site));
    // Stable: chains that tie keep the kernel's order.
    rows.sort_by(|x, y| biggest_first(a.by, &x.site, &y.site));
    limit(&mut rows, a.n);
    let mut out = output::render_stacks(&rows, summary, a.frames, a.format)?;
    append_stats(
        &mut out,
        parsed.stats.as_deref(),
        a.format == StacksFormat::Table,
        verbose,
    );
    write_stdout(&out)
}

fn cmd_ages(a: AgesArgs, verbose: bool) -> Result<()> {
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
            AgesSortKey::Bytes => biggest_first(SortKey::Bytes, &x.site, &y.site),
            AgesSortKey::Calls => biggest_first(SortKey::Calls, &x.site, &y.site),
            AgesSortKey::Age => {
                let oldest = |s: &AgeSite| s.oldest().map(|b| (b.part, b.bytes));
                oldest(y)
                    .cmp(&oldest(x))
                    .then(y.site.bytes.cmp(&x.site.bytes))
            }
        },
    )
}

fn cmd_nodes(a: NodesArgs, verbose: bool) -> Result<()> {
    let note = match a.node {
        Some(n) => format!(", only node {n}"),
        None => String::new(),
    };
    let cmd = PartsCmd {
        args: &a.parts,
        input: &a.input,
        note: &note,
        verbose,
    };
    cmd.run::<Node>(
        |sites| {
            if let Some(node) = a.node {
                for s in sites.iter_mut() {
                    s.retain_parts(|n| n.0 == node);
                }
            }
        },
        |x, y| biggest_first(a.by, &x.site, &y.site),
    )
}

fn cmd_faults(a: FaultsArgs) -> Result<()> {
    let filter = a.site.filter()?;
    let name = display_name(&a.input);
    let parsed = faults::parse_faults_bytes(&read_debugfs(&a.input)?);
    report_issues(&parsed.issues, &name, a.strict)?;
    let lines: Vec<FaultSite> = parsed
        .sites
        .into_iter()
        .filter(|s| filter.matches_key(&s.site))
        .collect();
    let mut sites = faults::merge_sites(&lines);
    let summary = FaultSummary::of(&sites);
    let key = |s: &FaultSite| match a.by {
        FaultsSortKey::Failures => (s.failed, s.asked),
        FaultsSortKey::Asked => (s.asked, s.failed),
    };
    sites.sort_by(|x, y| key(y).cmp(&key(x)).then_with(|| x.site.cmp(&y.site)));
    limit(&mut sites, a.n);
    write_stdout(&output::render_faults(&sites, summary, a.format)?)
}

/// A run of `ages` or `nodes`: their shared options, the file, the end of
/// the table's last line, `-v`.
struct PartsCmd<'a> {
    args: &'a PartsArgs,
    input: &'a str,
    note: &'a str,
    verbose: bool,
}

impl PartsCmd<'_> {
    /// Reads and parses the file, keeps the lines of the selected call
    /// sites, gathers them per call site, lets `keep` drop parts (a site
    /// left with none goes), drops the sites under `--min-bytes`, sorts
    /// them by `order` (then by identity), cuts to `-n` and prints them.
    fn run<P: PartOutput>(
        &self,
        keep: impl FnOnce(&mut Vec<PartSite<P>>),
        order: impl Fn(&PartSite<P>, &PartSite<P>) -> Ordering,
    ) -> Result<()> {
        let (args, filter) = (self.args, &self.args.filter);
        let filter_sites = filter.site.filter()?;
        let name = display_name(self.input);
        let parsed = split::parse_bytes::<P>(&read_debugfs(self.input)?);
        report_issues(&parsed.issues, &name, filter.strict)?;
        let lines: Vec<_> = parsed
            .lines
            .into_iter()
            .filter(|l| filter_sites.matches(&l.site))
            .collect();
        let mut sites = split::sites(&lines);
        keep(&mut sites);
        sites.retain(|s| !s.parts.is_empty());
        if let Some(min) = filter.min_bytes {
            sites.retain(|s| s.site.bytes >= min);
        }
        let summary = TopSummary::of(sites.iter().map(|s| &s.site));
        sites.sort_by(|x, y| order(x, y).then_with(|| x.site.key().cmp(&y.site.key())));
        limit(&mut sites, args.n);
        let mut out = output::render_parts(&sites, summary, self.note, args.format)?;
        append_stats(
            &mut out,
            parsed.stats.as_deref(),
            args.format == Format::Table,
            self.verbose,
        );
        write_stdout(&out)
    }
}

fn cmd_snap(a: SnapArgs) -> Result<()> {
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    let start = Instant::now();
    let interval = Duration::from_secs_f64(a.interval);
    let mut i: u64 = 0;
    loop {
        let data = std::fs::read(&a.source).map_err(|e| {
            let hint =
                if a.source == Path::new(DEFAULT_SOURCE) && e.kind() == io::ErrorKind::NotFound {
                    " (is the kernel built with CONFIG_MEM_ALLOC_PROFILING?)"
                } else {
                    ""
                };
            anyhow::anyhow!("cannot read {}: {e}{hint}", a.source.display())
        })?;
        let path = if a.compact {
            let name = a.source.to_string_lossy();
            let parsed = parse_checked(&data, &name, false)?;
            let text = compact::encode(parsed.version, &parsed.records);
            write_unique_snapshot(&a.out, text.as_bytes(), snap::COMPACT_SUFFIX)?
        } else {
            write_unique_snapshot(&a.out, &data, snap::SUFFIX)?
        };
        write_stdout(&format!("{}\n", path.display()))?;
        i += 1;
        if a.count != 0 && i >= a.count {
            return Ok(());
        }
        // Sleep until the next slot, measured from the start (no drift).
        let next = interval.mul_f64(i as f64);
        if let Some(wait) = next.checked_sub(start.elapsed()) {
            std::thread::sleep(wait);
        }
    }
}

/// Write a snapshot named after the current time; if a snapshot of this
/// second already exists, wait for the next second.
fn write_unique_snapshot(dir: &Path, data: &[u8], suffix: &str) -> Result<PathBuf> {
    for _ in 0..3 {
        match snap::write_snapshot_with(dir, data, Utc::now(), suffix) {
            Ok(p) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let sub = Utc::now().timestamp_subsec_millis() as u64;
                std::thread::sleep(Duration::from_millis(1000 - sub.min(999)));
            }
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot write snapshot in {}", dir.display()))
            }
        }
    }
    bail!("cannot find a free snapshot name in {}", dir.display())
}

fn chart_opts(c: &ChartArgs, default_title: String) -> ChartOpts {
    ChartOpts {
        title: c.title.clone().unwrap_or(default_title),
        width: c.width.max(200),
        height: c.height,
    }
}

fn site_label(r: &Record) -> String {
    match &r.module {
        Some(m) => format!("{} ({}:{}) [{m}]", r.func, r.file, r.line),
        None => format!("{} ({}:{})", r.func, r.file, r.line),
    }
}

fn cmd_plot_top(a: PlotTopArgs, verbose: bool) -> Result<()> {
    let n = if a.n == 0 { 20 } else { a.n };
    let input = Input::new(&a.live, &a.input, verbose)?;
    let (recs, _) = top_sites(&input, &a.filter, a.by, n)?;
    let (bars, what, kind): (Vec<_>, _, _) = match a.by {
        SortKey::Bytes => (
            recs.iter().map(|r| (site_label(r), r.bytes)).collect(),
            "bytes",
            ValueKind::Bytes,
        ),
        SortKey::Calls => (
            recs.iter()
                .map(|r| (site_label(r), i64::try_from(r.calls).unwrap_or(i64::MAX)))
                .collect(),
            "live allocations",
            ValueKind::Count,
        ),
    };
    let title = format!("Top {} call sites by {what} ({})", bars.len(), input.name());
    plot::bar_chart(&a.chart.out, &chart_opts(&a.chart, title), &bars, kind)?;
    Ok(())
}

fn cmd_plot_group(a: PlotGroupArgs, verbose: bool) -> Result<()> {
    let n = if a.n == 0 { 20 } else { a.n };
    let input = Input::new(&a.live, &a.input, verbose)?;
    let rows = group_rows(&input, &a.filter, a.by, a.depth, n)?;
    let bars: Vec<_> = rows.iter().map(|r| (r.group.clone(), r.bytes)).collect();
    let title = format!("Allocated bytes by {} ({})", a.by.as_str(), input.name());
    plot::bar_chart(
        &a.chart.out,
        &chart_opts(&a.chart, title),
        &bars,
        ValueKind::Bytes,
    )?;
    Ok(())
}

/// Expand directories into their snapshot files.
fn expand_series_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let snaps =
                snap::list_snapshots(p).with_context(|| format!("cannot list {}", p.display()))?;
            if snaps.is_empty() {
                bail!("no allocinfo-<timestamp>.txt snapshots in {}", p.display());
            }
            files.extend(snaps);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

fn cmd_plot_series(a: PlotSeriesArgs) -> Result<()> {
    let files = expand_series_inputs(&a.files)?;
    let n = if a.n == 0 { 5 } else { a.n };
    // Per snapshot: key -> bytes.
    let mut names: HashMap<String, String> = HashMap::new();
    let mut columns: Vec<HashMap<String, i64>> = Vec::new();
    for f in &files {
        let recs = load_file(&f.to_string_lossy(), &a.filter)?;
        let mut col: HashMap<String, i64> = HashMap::new();
        for r in &recs {
            let (key, label) = match a.by {
                SeriesBy::Site => (r.key().to_string(), site_label(r)),
                other => {
                    let by = match other {
                        SeriesBy::Subsystem => GroupBy::Subsystem,
                        SeriesBy::Dir => GroupBy::Dir,
                        SeriesBy::Module => GroupBy::Module,
                        _ => GroupBy::Func,
                    };
                    let k = group_key(r, by, a.depth);
                    (k.clone(), k)
                }
            };
            let e = col.entry(key.clone()).or_insert(0);
            *e = e.saturating_add(r.bytes);
            names.entry(key).or_insert(label);
        }
        columns.push(col);
    }
    let mut peaks: Vec<(String, i64)> = names
        .keys()
        .map(|k| {
            let peak = columns
                .iter()
                .map(|c| c.get(k).copied().unwrap_or(0))
                .max()
                .unwrap_or(0);
            (k.clone(), peak)
        })
        .filter(|(_, p)| a.filter.min_bytes.is_none_or(|m| *p >= m))
        .collect();
    peaks.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    peaks.truncate(n);
    let lines: Vec<Line> = peaks
        .iter()
        .map(|(k, _)| Line {
            name: names[k].clone(),
            values: columns
                .iter()
                .map(|c| c.get(k).copied().unwrap_or(0))
                .collect(),
        })
        .collect();

    let times: Vec<Option<DateTime<Utc>>> = files.iter().map(|f| snap::snapshot_time(f)).collect();
    let opts = chart_opts(
        &a.chart,
        format!(
            "Top {} {} over {} snapshots",
            lines.len(),
            series_what(a.by),
            files.len()
        ),
    );
    let t0_fmt;
    // Without timestamps: one tick per snapshot, labelled with its file name.
    let file_names: Vec<String> = files
        .iter()
        .map(|f| {
            let n = f
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            if n.chars().count() > 24 {
                format!("{}…", n.chars().take(23).collect::<String>())
            } else {
                n.into_owned()
            }
        })
        .collect();
    let idx_fmt = |x: f64| {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        file_names.get(i as usize).cloned().unwrap_or_default()
    };
    let x_axis = if let (Some(Some(t0)), true) = (times.first(), times.iter().all(Option::is_some))
    {
        let t0 = *t0;
        let xs: Vec<f64> = times
            .iter()
            .map(|t| (t.unwrap_or(t0) - t0).num_seconds() as f64)
            .collect();
        let span = xs.iter().copied().fold(0.0, f64::max);
        t0_fmt = move |x: f64| {
            let t = t0 + chrono::Duration::seconds(x.round() as i64);
            if span >= 86400.0 {
                t.format("%m-%d %H:%M").to_string()
            } else {
                t.format("%H:%M:%S").to_string()
            }
        };
        XAxis {
            xs,
            desc: format!(
                "time (UTC), first snapshot {}",
                t0.format("%Y-%m-%d %H:%M:%S")
            ),
            fmt: &t0_fmt,
        }
    } else {
        XAxis {
            xs: (0..files.len()).map(|i| i as f64).collect(),
            desc: "snapshot".to_string(),
            fmt: &idx_fmt,
        }
    };
    plot::line_chart(&a.chart.out, &opts, &x_axis, &lines, ValueKind::Bytes)?;
    Ok(())
}

fn series_what(by: SeriesBy) -> &'static str {
    match by {
        SeriesBy::Site => "call sites",
        SeriesBy::Subsystem => "subsystems",
        SeriesBy::Dir => "directories",
        SeriesBy::Module => "modules",
        SeriesBy::Func => "functions",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
