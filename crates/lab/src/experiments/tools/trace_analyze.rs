//! `swizzledb trace analyze` and `swizzledb trace generate`: miss-ratio curves of every
//! replacement policy and of Belady's OPT over a reference string, and synthetic reference
//! strings in the plain-text trace format. The simulation itself is in `swizzledb-sim`.
//! [`load_requests`] reads any trace format (SwizzleDB's and libCacheSim's, see
//! `docs/trace-format.md`) for `trace analyze` and `trace export`.

use crate::support::output::prepare_out;
use crate::support::{plot, text, units};
use crate::{UnusablePath, Usage};
use clap::Args;
use std::error::Error;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use swizzledb_sim::{
    Analysis, CsvSpec, Input, Layout, Outcome, Pattern, Plan, PolicyKind, ReadOptions, Request,
    RequestReader, StackDistances, Subject, Trace, TraceError, TraceFormat, TraceSource,
};

/// Options of `trace analyze`.
#[derive(Args)]
pub struct AnalyzeArgs {
    /// Trace file, or - for standard input: a recorded SwizzleDB trace, a plain-text trace (one
    /// page id per line; blank lines and text after # are skipped), or libCacheSim's
    /// oracleGeneral, CSV or txt; zstd-compressed or not (see --format)
    #[arg(long, value_name = "FILE", required_unless_present = "pattern", conflicts_with = "pattern")]
    input: Option<PathBuf>,
    #[command(flatten)]
    format: FormatArgs,
    /// Analyze a synthetic trace instead of a file, drawn as by `trace generate` (needs --pages
    /// and --refs)
    #[arg(long, value_name = "SPEC", value_parser = parse_pattern, requires_all = ["pages", "refs"])]
    pattern: Option<Pattern>,
    /// Pages the synthetic trace draws from
    #[arg(long, value_parser = parse_pages, requires = "pattern")]
    pages: Option<u32>,
    /// References in the synthetic trace (1e7, 10M, ...)
    #[arg(long, value_parser = parse_refs, requires = "pattern")]
    refs: Option<usize>,
    /// Seed of the synthetic trace and of policies that draw random numbers
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Cache sizes in pages, comma-separated (each at least 1)
    #[arg(long, default_value = "100,1000,10000", value_parser = parse_sizes)]
    sizes: Sizes,
    /// Replacement policies: all, or a comma-separated list such as lru,sieve,gclock:4 (OPT is
    /// always simulated)
    #[arg(long, default_value = "all", value_parser = parse_policies)]
    policies: Policies,
    /// Simulations run at once [default: the available cores]
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    /// Directory for miss-ratio.csv, stack-distance.csv and the plot miss-ratio.svg/.png
    /// (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Options of `trace generate`.
#[derive(Args)]
pub struct GenerateArgs {
    /// What to draw: uniform, zipf:S (page r-1 has weight 1/r^S), scan (all pages in order),
    /// scan:L (runs of L pages from random starts), loop:N (pages 0..N over and over),
    /// drift:H:E (a hot window of H pages sliding by H/4 every E references), or a mixture such
    /// as zipf:0.9@70%+scan@30%
    #[arg(long, value_name = "SPEC", value_parser = parse_pattern)]
    pattern: Pattern,
    /// Page ids are drawn from 0..pages
    #[arg(long, value_parser = parse_pages)]
    pages: u32,
    /// Number of references (1e7, 10M, ...)
    #[arg(long, value_parser = parse_refs)]
    refs: usize,
    /// Seed: the same pattern, pages, refs and seed give the same trace
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Text file to write: a # header naming the command, then one page id per line
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// How `--input` is read (`trace analyze`, `trace export`).
#[derive(Args, Clone, Debug, Default)]
pub struct FormatArgs {
    /// Input format: auto (by magic number, then by file name: *oracleGeneral* is oracleGeneral,
    /// *.csv is CSV, other text is SwizzleDB text), swizzledb (recorded binary or plain text),
    /// oracle-general, csv (needs --csv-spec) or txt (libCacheSim: one object id per line).
    /// zstd-compressed input is recognized by its magic number in every format
    #[arg(long, value_name = "FORMAT", default_value = "auto", value_parser = parse_format)]
    pub format: FormatChoice,
    /// Columns of a CSV trace in libCacheSim's syntax, numbered from 1, e.g.
    /// "time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true" (keys: obj-id-col
    /// (required), time-col, obj-size-col, delimiter, has-header, obj-id-is-num; each at most
    /// once; delimiter=,, is a comma, an empty delimiter is refused); implies --format csv
    #[arg(long, value_name = "SPEC", value_parser = parse_csv_spec)]
    pub csv_spec: Option<CsvSpec>,
    /// Object ids of txt and CSV traces are unsigned decimal integers (default: any string,
    /// hashed to 64 bits with XXH64)
    #[arg(long)]
    pub numeric_ids: bool,
}

/// `--format`: `auto` or a format.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FormatChoice(pub Option<TraceFormat>);

fn parse_format(input: &str) -> Result<FormatChoice, String> {
    if input.trim().eq_ignore_ascii_case("auto") {
        return Ok(FormatChoice(None));
    }
    input.trim().parse().map(|f| FormatChoice(Some(f))).map_err(|e: TraceError| e.to_string())
}

fn parse_csv_spec(input: &str) -> Result<CsvSpec, String> {
    input.parse().map_err(|e: TraceError| e.to_string())
}

impl FormatArgs {
    fn options(&self) -> ReadOptions {
        ReadOptions { format: self.format.0, csv: self.csv_spec.clone(), numeric_ids: self.numeric_ids }
    }
}

/// A trace read whole by [`load_requests`].
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The requests in order. Times: seconds since the start for a recorded SwizzleDB trace,
    /// the file's own for oracleGeneral and CSV with a time column, 0 otherwise. Sizes: the
    /// recorded trace's page size, the file's own for oracleGeneral and CSV with a size column,
    /// 1 otherwise.
    pub requests: Vec<Request>,
    /// What the input turned out to be.
    pub layout: Layout,
    /// "trace FILE (layout[, zstd])", or "standard input (...)", for messages.
    pub what: String,
    /// Requests of size 0 skipped (libCacheSim skips them too).
    pub skipped_zero_size: u64,
}

/// An opened input: the engine's binary trace (read whole, its fixes in time order) or a
/// reader of any other format.
enum Opened {
    Engine { refs: Vec<(u64, u64)>, page_size: u32 },
    Requests(RequestReader),
}

/// Opens `path` (`-`: standard input) and tells its format.
fn open_input(path: &Path, format: &FormatArgs) -> Result<(Opened, Layout, String), Box<dyn Error>> {
    let input = Input::open(path).map_err(input_error)?;
    let options = format.options();
    let layout = swizzledb_sim::resolve(&input, &options).map_err(input_error)?;
    let what = format!(
        "{} ({layout}{})",
        if input.name() == "standard input" {
            "standard input".to_string()
        } else {
            format!("trace {}", input.name())
        },
        if input.is_zstd() { ", zstd" } else { "" }
    );
    let opened = if layout == Layout::EngineBinary {
        let name = input.name().to_owned();
        let reader = swizzledb_buffer::TraceReader::from_reader(input.into_reader(), &name)
            .map_err(|e| Usage(format!("recorded trace {name}: {e}")))?;
        let page_size = reader.header().page_size;
        // The fix events in time order, as swizzledb_buffer::page_references gives them.
        let mut refs = Vec::new();
        let mut threads = None;
        let mut many = false;
        for e in reader {
            let e = e.map_err(|e| Usage(format!("recorded trace {name}: {e}")))?;
            if e.kind == swizzledb_buffer::EventKind::Fix {
                many |= *threads.get_or_insert(e.thread) != e.thread;
                refs.push((e.time_ns, e.page.get()));
            }
        }
        if many {
            refs.sort_by_key(|&(t, _)| t);
        }
        Opened::Engine { refs, page_size }
    } else {
        Opened::Requests(RequestReader::new(input, layout, &options).map_err(input_error)?)
    };
    Ok((opened, layout, what))
}

/// Reads every request of `path` (`-`: standard input) in the format `format` tells.
///
/// # Errors
/// [`UnusablePath`] for input that is missing or cannot be read; [`Usage`] for input that is
/// malformed or of an unknown format (with the line or byte offset).
pub fn load_requests(path: &Path, format: &FormatArgs) -> Result<Loaded, Box<dyn Error>> {
    let (opened, layout, what) = open_input(path, format)?;
    let (requests, skipped_zero_size) = match opened {
        Opened::Engine { refs, page_size } => {
            let size = u64::from(page_size.max(1));
            let requests =
                refs.into_iter().map(|(ns, id)| Request { time: ns / 1_000_000_000, id, size }).collect();
            (requests, 0)
        }
        Opened::Requests(reader) => reader.collect().map_err(|e| located(&what, e))?,
    };
    Ok(Loaded { requests, layout, what, skipped_zero_size })
}

/// Reads `path` into a dense trace without keeping the requests.
fn load_trace(path: &Path, format: &FormatArgs) -> Result<(Trace, String, u64), Box<dyn Error>> {
    let (opened, _, what) = open_input(path, format)?;
    match opened {
        Opened::Engine { refs, .. } => Ok((Trace::from_pages(refs.into_iter().map(|(_, p)| p))?, what, 0)),
        Opened::Requests(reader) => {
            let (trace, skipped) = reader.into_trace().map_err(|e| located(&what, e))?;
            Ok((trace, what, skipped))
        }
    }
}

/// Opening errors: bad input is a usage error, a failing read of an existing file is not.
fn input_error(e: TraceError) -> Box<dyn Error> {
    match e {
        // Missing, not readable, a directory: exit 3 like the admin commands.
        TraceError::Io { .. } => UnusablePath(e.to_string()).into(),
        e => Usage(e.to_string()).into(),
    }
}

/// Reading errors, prefixed with the input.
fn located(what: &str, e: TraceError) -> Box<dyn Error> {
    match e {
        TraceError::Io { .. } => UnusablePath(format!("{what}: {e}")).into(),
        e => Usage(format!("{what}: {e}")).into(),
    }
}

/// Cache sizes in pages, ascending, without duplicates.
#[derive(Clone, Debug)]
pub struct Sizes(Vec<u64>);

/// The policies to simulate besides OPT, in the order given.
#[derive(Clone, Debug)]
pub struct Policies(Vec<PolicyKind>);

fn parse_pattern(input: &str) -> Result<Pattern, String> {
    input.parse().map_err(|e: swizzledb_sim::GenError| e.to_string())
}

fn parse_pages(input: &str) -> Result<u32, String> {
    let n = units::parse_positive_count(input)?;
    u32::try_from(n).map_err(|_| format!("{n} pages are more than the {} a trace can name", u32::MAX))
}

fn parse_refs(input: &str) -> Result<usize, String> {
    let n = units::parse_positive_count(input)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= swizzledb_sim::MAX_REFS)
        .ok_or_else(|| format!("{n} references are more than the {} a trace holds", swizzledb_sim::MAX_REFS))
}

/// Parses `100,1000,10000` (each part as a count: `1e4`, `10k`, `10_000`).
fn parse_sizes(input: &str) -> Result<Sizes, String> {
    let mut sizes = Vec::new();
    for part in input.split(',') {
        if part.trim().is_empty() {
            return Err(format!(
                "empty cache size in {input:?}; give a comma-separated list such as 100,1000,10000"
            ));
        }
        let size = units::parse_count(part)?;
        if size == 0 {
            return Err(format!("cache size {:?} must be at least 1 page", part.trim()));
        }
        sizes.push(size);
    }
    sizes.sort_unstable();
    sizes.dedup();
    Ok(Sizes(sizes))
}

/// Parses `all` or a comma-separated list of policy names; `opt` is accepted and ignored (OPT
/// always runs).
fn parse_policies(input: &str) -> Result<Policies, String> {
    if input.trim().eq_ignore_ascii_case("all") {
        return Ok(Policies(PolicyKind::all()));
    }
    let mut chosen = Vec::new();
    for part in input.split(',') {
        if part.trim().eq_ignore_ascii_case("opt") {
            continue;
        }
        let kind: PolicyKind = part.parse().map_err(|e| format!("{e}; or all (opt always runs)"))?;
        if !chosen.contains(&kind) {
            chosen.push(kind);
        }
    }
    Ok(Policies(chosen))
}

/// Runs `trace analyze`.
pub fn analyze(args: &AnalyzeArgs) -> Result<ExitCode, Box<dyn Error>> {
    let f = &args.format;
    if args.input.is_none() && (f.format.0.is_some() || f.csv_spec.is_some() || f.numeric_ids) {
        return Err(Usage(
            "--format, --csv-spec and --numeric-ids describe --input; a --pattern has none".into(),
        )
        .into());
    }
    // The file, or else the synthetic trace.
    let source = match (&args.input, &args.pattern, args.pages, args.refs) {
        (Some(path), ..) => Err(path),
        (None, Some(pattern), Some(pages), Some(refs)) => {
            Ok(TraceSource::Generated { pattern: pattern.clone(), pages, refs, seed: args.seed })
        }
        _ => {
            return Err(
                Usage("give --input FILE, or --pattern SPEC with --pages N and --refs M".into()).into()
            )
        }
    };
    let threads = match args.threads {
        Some(t) => usize::from(t),
        None => std::thread::available_parallelism().map_or(1, usize::from),
    };
    prepare_out(args.out.as_deref()).map_err(UnusablePath)?;

    let start = Instant::now();
    let (trace, what) = match source {
        Err(path) => {
            let (trace, what, skipped) = load_trace(path, &args.format)?;
            if skipped > 0 {
                eprintln!("Skipped {} requests of size 0 (as libCacheSim does).", text::thousands(skipped));
            }
            (trace, what)
        }
        Ok(source) => {
            let what = describe(&source);
            (source.load().map_err(|e| Usage(format!("{what}: {e}")))?, what)
        }
    };
    if trace.is_empty() {
        return Err(Usage(format!("{what} holds no references")).into());
    }
    let load_secs = start.elapsed().as_secs_f64();
    eprintln!(
        "Loaded {} references to {} distinct pages in {load_secs:.1} s; simulating on {threads} thread(s) ...",
        text::thousands(trace.len() as u64),
        text::thousands(u64::from(trace.distinct_pages())),
    );
    let mut subjects = vec![Subject::Opt];
    subjects.extend(args.policies.0.iter().map(|&k| Subject::Policy(k)));
    let plan =
        Plan { subjects, sizes: args.sizes.0.clone(), stack_distances: true, seed: args.seed, threads };
    let start = Instant::now();
    let analysis = swizzledb_sim::analyze(&trace, &plan)?;
    let sim_secs = start.elapsed().as_secs_f64();
    eprintln!("Simulated {} runs and the stack distances in {sim_secs:.1} s.", analysis.outcomes.len());
    print_costs(&plan, &analysis, trace.len());
    let stack = analysis.stack.as_ref().expect("planned");

    let mut out = Vec::new();
    writeln!(
        out,
        "{what}: {} references, {} distinct pages (cold misses)\n",
        text::thousands(trace.len() as u64),
        text::thousands(u64::from(trace.distinct_pages()))
    )?;
    print_table(&mut out, &plan, &analysis, stack)?;
    let ok = print_checks(&mut out, &plan, &analysis, stack)?;
    crate::support::output::print(out)?;

    if let Some(dir) = &args.out {
        crate::support::output::write_rows(dir, "miss-ratio", &miss_ratio_rows(&analysis.outcomes))?;
        crate::support::output::write_rows(dir, "stack-distance", &stack_rows(stack))?;
        let chart = curve_chart(&what, &trace, &plan, &analysis, stack);
        crate::support::output::write_plot(Some(dir), "miss-ratio", &chart)?;
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Wall-clock time per run of each subject, and of the shared passes, on stderr (a rough cost:
/// runs share the cores).
fn print_costs(plan: &Plan, analysis: &Analysis, refs: usize) {
    let per_ref = |d: std::time::Duration| d.as_secs_f64() * 1e9 / refs as f64;
    let mut parts = vec![
        format!("stack distances {:.0}", per_ref(analysis.stack_elapsed)),
        format!("OPT next-use pass {:.0}", per_ref(analysis.next_use_elapsed)),
    ];
    for &subject in &plan.subjects {
        let runs: Vec<_> = analysis.outcomes.iter().filter(|o| o.subject == subject).collect();
        let total: std::time::Duration = runs.iter().map(|o| o.elapsed).sum();
        parts.push(format!("{subject} {:.0}", per_ref(total / runs.len().max(1) as u32)));
    }
    eprintln!("Wall-clock ns per reference (mean over sizes): {}.", parts.join(", "));
}

/// How the trace is named in output.
fn describe(source: &TraceSource) -> String {
    match source {
        TraceSource::Text(path) => format!("trace {}", path.display()),
        TraceSource::Generated { pattern, pages, seed, .. } => {
            format!("pattern {pattern} over {} pages (seed {seed})", text::thousands(u64::from(*pages)))
        }
        _ => "trace".to_string(),
    }
}

fn outcome(analysis: &Analysis, subject: Subject, size: u64) -> Option<&Outcome> {
    analysis.outcomes.iter().find(|o| o.subject == subject && o.cache_pages == size)
}

/// The miss ratio of every subject at every size, with the stack-distance LRU curve below.
fn print_table(
    out: &mut impl Write,
    plan: &Plan,
    analysis: &Analysis,
    stack: &StackDistances,
) -> std::io::Result<()> {
    let names: Vec<String> = plan.subjects.iter().map(Subject::to_string).collect();
    let lru_stack = "lru (stack distance)";
    let width = names.iter().map(String::len).chain([lru_stack.len(), 6]).max().unwrap_or(6);
    writeln!(out, "miss ratio by cache size (pages)")?;
    write!(out, "{:<width$}", "policy")?;
    for &size in &plan.sizes {
        write!(out, " {:>12}", text::thousands(size))?;
    }
    writeln!(out)?;
    for (subject, name) in plan.subjects.iter().zip(&names) {
        write!(out, "{name:<width$}")?;
        for &size in &plan.sizes {
            let ratio = outcome(analysis, *subject, size).map_or(f64::NAN, |o| o.counts.miss_ratio());
            write!(out, " {ratio:>12.4}")?;
        }
        writeln!(out)?;
    }
    write!(out, "{lru_stack:<width$}")?;
    for &size in &plan.sizes {
        write!(out, " {:>12.4}", stack.lru_misses(size) as f64 / stack.requests() as f64)?;
    }
    writeln!(out, "\n")
}

/// Prints whether OPT is the floor at every size and whether the stack-distance curve matches
/// the simulated LRU; false if either fails.
fn print_checks(
    out: &mut impl Write,
    plan: &Plan,
    analysis: &Analysis,
    stack: &StackDistances,
) -> std::io::Result<bool> {
    let below = swizzledb_sim::below_opt(&analysis.outcomes);
    if below.is_empty() {
        writeln!(out, "check: OPT has the fewest misses at every size: ok")?;
    } else {
        for o in &below {
            writeln!(
                out,
                "check FAILED: {} has {} misses at {} pages, fewer than OPT",
                o.subject, o.counts.misses, o.cache_pages
            )?;
        }
    }
    let lru = Subject::Policy(PolicyKind::Lru);
    let mut lru_ok = true;
    if plan.subjects.contains(&lru) {
        for &size in &plan.sizes {
            let sim = outcome(analysis, lru, size).map(|o| o.counts.misses);
            if sim != Some(stack.lru_misses(size)) {
                lru_ok = false;
                writeln!(
                    out,
                    "check FAILED: at {size} pages the stack distances give LRU {} misses, the simulated lru {sim:?}",
                    stack.lru_misses(size)
                )?;
            }
        }
        if lru_ok {
            writeln!(out, "check: the stack-distance LRU curve equals the simulated lru at every size: ok")?;
        }
    }
    Ok(below.is_empty() && lru_ok)
}

/// `policy,cache_pages,requests,misses,miss_ratio`, one row per subject and size.
/// One row of `miss-ratio.csv`: one policy (or OPT) at one cache size.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct MissRatioRow {
    pub policy: String,
    pub cache_pages: u64,
    pub requests: u64,
    pub misses: u64,
    pub miss_ratio: f64,
}

fn miss_ratio_rows(outcomes: &[Outcome]) -> Vec<MissRatioRow> {
    outcomes
        .iter()
        .map(|o| MissRatioRow {
            policy: o.subject.to_string(),
            cache_pages: o.cache_pages,
            requests: o.counts.requests,
            misses: o.counts.misses,
            miss_ratio: o.counts.miss_ratio(),
        })
        .collect()
}

/// Distances up to this get a row each; beyond, rows are buckets of 1/64 of an octave.
const EXACT_DISTANCES: u64 = 1024;

/// The histogram bucket of distance `d`: `(first, last)` distance of the bucket.
fn bucket(d: u64) -> (u64, u64) {
    if d <= EXACT_DISTANCES {
        return (d, d);
    }
    let shift = (63 - d.leading_zeros()).saturating_sub(6);
    let first = (d >> shift) << shift;
    // The bucket that starts at EXACT_DISTANCES would overlap its exact row.
    (first.max(EXACT_DISTANCES + 1), first + (1 << shift) - 1)
}

/// One row of `stack-distance.csv`: the references whose LRU stack distance lies in
/// `distance_min..=distance_max` (`inf` for the cold misses), and LRU's misses with
/// `distance_max` frames.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct StackDistanceRow {
    pub distance_min: String,
    pub distance_max: String,
    pub references: u64,
    pub lru_misses: u64,
    pub lru_miss_ratio: f64,
}

/// One row per distance up to 1024 and one per 1/64 of an octave beyond (so 10^7 distinct
/// pages give about 2,000 rows, not 10^7), empty buckets left out; then a row `inf,inf` for the
/// cold misses. `lru_misses` is exact at every row.
fn stack_rows(stack: &StackDistances) -> Vec<StackDistanceRow> {
    let requests = stack.requests() as f64;
    let mut rows = Vec::new();
    let mut row = |(lo, hi): (u64, u64), references: u64| {
        let lru_misses = stack.lru_misses(hi);
        rows.push(StackDistanceRow {
            distance_min: lo.to_string(),
            distance_max: hi.to_string(),
            references,
            lru_misses,
            lru_miss_ratio: lru_misses as f64 / requests,
        });
    };
    let mut open: Option<((u64, u64), u64)> = None;
    for (d, count) in stack.histogram() {
        let b = bucket(d);
        match &mut open {
            Some((current, sum)) if *current == b => *sum += count,
            _ => {
                if let Some((b, sum)) = open.take() {
                    row(b, sum);
                }
                open = Some((b, count));
            }
        }
    }
    if let Some((b, sum)) = open {
        row(b, sum);
    }
    let cold = stack.cold();
    rows.push(StackDistanceRow {
        distance_min: "inf".into(),
        distance_max: "inf".into(),
        references: cold,
        lru_misses: cold,
        lru_miss_ratio: cold as f64 / requests,
    });
    rows
}

/// Points of the exact LRU curve from the histogram: log-spaced between the smallest and the
/// largest size.
const CURVE_POINTS: u32 = 48;

/// Miss ratio against cache size: a line per subject through its sizes, and the exact LRU
/// curve from the stack distances.
fn curve_chart(
    what: &str,
    trace: &Trace,
    plan: &Plan,
    analysis: &Analysis,
    stack: &StackDistances,
) -> plot::Chart {
    let point = |x: u64, y: f64| plot::Point { x: x as f64, y, y_min: y, y_max: y };
    let mut series: Vec<plot::Series> = plan
        .subjects
        .iter()
        .map(|&s| plot::Series {
            name: s.to_string(),
            points: plan
                .sizes
                .iter()
                .filter_map(|&c| outcome(analysis, s, c))
                .map(|o| point(o.cache_pages, o.counts.miss_ratio()))
                .collect(),
        })
        .collect();
    let (lo, hi) = (plan.sizes[0] as f64, plan.sizes[plan.sizes.len() - 1] as f64);
    let mut xs: Vec<u64> = (0..=CURVE_POINTS)
        .map(|i| (lo * (hi / lo).powf(f64::from(i) / f64::from(CURVE_POINTS))).round() as u64)
        .collect();
    xs.dedup();
    series.push(plot::Series {
        name: "lru (stack distance)".to_string(),
        points: xs
            .into_iter()
            .map(|c| point(c, stack.lru_misses(c) as f64 / stack.requests() as f64))
            .collect(),
    });
    plot::Chart {
        title: "Miss ratio by cache size".to_string(),
        x_label: "cache size (pages)".to_string(),
        y_label: "miss ratio".to_string(),
        x_scale: plot::Scale::Log2,
        series,
        note: Some(format!(
            "{what}: {} references, {} distinct pages; OPT is Belady's optimum",
            text::thousands(trace.len() as u64),
            text::thousands(u64::from(trace.distinct_pages()))
        )),
        vline: None,
        marks: None,
    }
}

/// Runs `trace generate`.
pub fn generate(args: &GenerateArgs) -> Result<ExitCode, Box<dyn Error>> {
    let stream = args.pattern.stream(args.pages, args.seed).map_err(|e| Usage(e.to_string()))?;
    if let Some(parent) = args.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            UnusablePath(format!("cannot create the directory of --out {}: {e}", args.out.display()))
        })?;
    }
    let file = std::fs::File::create(&args.out)
        .map_err(|e| UnusablePath(format!("cannot create --out {}: {e}", args.out.display())))?;
    let header = [
        "swizzledb trace: one page id per line".to_string(),
        format!(
            "swizzledb trace generate --pattern {} --pages {} --refs {} --seed {}",
            args.pattern, args.pages, args.refs, args.seed
        ),
    ];
    let start = Instant::now();
    swizzledb_sim::write_text(file, &header, stream.take(args.refs), &args.out.display().to_string())?;
    eprintln!(
        "Wrote {} references to {} in {:.1} s.",
        text::thousands(args.refs as u64),
        args.out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_sort_and_reject_bad_lists() {
        assert_eq!(parse_sizes("1000,100, 1e4,10k").unwrap().0, vec![100, 1000, 10_000]);
        for bad in ["", "100,,200", "0", "100,0", "ten", "100,"] {
            assert!(parse_sizes(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn histogram_buckets_are_exact_then_64_per_octave() {
        assert_eq!(bucket(1), (1, 1));
        assert_eq!(bucket(1024), (1024, 1024));
        assert_eq!(bucket(1025), (1025, 1039));
        assert_eq!(bucket(1040), (1040, 1055));
        assert_eq!(bucket(2047), (2032, 2047));
        assert_eq!(bucket(2048), (2048, 2079));
        // Buckets tile the distances: each starts right after the previous one ends.
        let mut d = 1;
        while d < 1 << 24 {
            let (lo, hi) = bucket(d);
            assert!(lo == d && hi >= lo && bucket(hi) == (lo, hi), "{d}");
            d = hi + 1;
        }
    }

    #[test]
    fn the_simulator_knows_the_engine_trace_magic() {
        assert_eq!(swizzledb_sim::ENGINE_TRACE_MAGIC, swizzledb_buffer::TRACE_MAGIC);
    }

    #[test]
    fn formats_parse_auto_and_names() {
        assert_eq!(parse_format("auto").unwrap(), FormatChoice(None));
        assert_eq!(parse_format("oracle-general").unwrap(), FormatChoice(Some(TraceFormat::OracleGeneral)));
        assert_eq!(parse_format("swizzledb").unwrap(), FormatChoice(Some(TraceFormat::SwizzleDb)));
        assert!(parse_format("lcs").unwrap_err().contains("auto, swizzledb, oracle-general, csv or txt"));
        assert!(parse_csv_spec("obj-id-col=2,has-header=true").is_ok());
        assert!(parse_csv_spec("has-header=true").unwrap_err().contains("obj-id-col is required"));
    }

    /// The chart of every policy (19 series) gives each series its own colour and marker, and
    /// draws every subject's point at a size exactly at that size's x (no nudging).
    #[test]
    fn the_chart_tells_its_series_apart_and_keeps_points_at_their_size() {
        // A skewed reference string over 400 pages.
        let mut state = 12_345u64;
        let pages: Vec<u64> = (0..5_000)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let r = (state >> 33) % 400;
                r * r / 400
            })
            .collect();
        let trace = Trace::from_pages(pages).unwrap();
        let plan = Plan {
            subjects: swizzledb_sim::all_subjects(),
            sizes: vec![10, 40, 160],
            stack_distances: true,
            seed: 1,
            threads: 1,
        };
        let analysis = swizzledb_sim::analyze(&trace, &plan).unwrap();
        let chart = curve_chart("test", &trace, &plan, &analysis, analysis.stack.as_ref().unwrap());
        let n = chart.series.len();
        assert_eq!(n, plan.subjects.len() + 1, "every subject and the exact LRU curve");
        let styles: std::collections::HashSet<_> =
            (0..n).map(plot::style).map(|(c, m)| ((c.0, c.1, c.2), m)).collect();
        assert_eq!(styles.len(), n, "{n} series, {n} distinct (colour, marker) pairs");

        let dir = tempfile::tempdir().unwrap();
        let paths = plot::write_chart(&dir.path().join("miss-ratio"), &chart).unwrap();
        let svg = std::fs::read_to_string(&paths[0]).unwrap();
        // The subjects marked with circles: at each size their circles share one x, and so do
        // their legend entries; nudged points would scatter.
        let circled = (0..plan.subjects.len()).filter(|&i| plot::style(i).1 == plot::Marker::Circle).count();
        assert!(circled >= 2);
        let mut at_x = std::collections::BTreeMap::<i32, usize>::new();
        for (_, x, _) in plot::svg_circles(&svg) {
            *at_x.entry(x).or_default() += 1;
        }
        assert_eq!(at_x.len(), plan.sizes.len() + 1, "one x per size and the legend's: {at_x:?}");
        assert!(at_x.values().all(|&c| c == circled), "{at_x:?}");
    }

    #[test]
    fn policies_parse_all_lists_and_opt() {
        assert_eq!(parse_policies("ALL").unwrap().0, PolicyKind::all());
        assert_eq!(parse_policies("lru,opt,fifo,lru").unwrap().0, vec![PolicyKind::Lru, PolicyKind::Fifo]);
        assert!(parse_policies("opt").unwrap().0.is_empty());
        let err = parse_policies("lru,lfu").unwrap_err();
        assert!(err.contains("\"lfu\"") && err.contains("all"), "{err}");
    }
}
