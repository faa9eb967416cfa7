//! Turning measurements into the results table, the check lines and CSV rows.

use crate::rndread::{Config, ModeResult, LOGGING, RECORD_BYTES};
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;
use swizzledb::PoolMode;

/// The line every buffer experiment and benchmark prints before its tables: they run without a
/// write-ahead log ([`crate::rndread::LOGGING`]).
pub const LOGGING_NOTE: &str = "logging: off (buffer only; see bench wal for the log's cost)";

/// Writes [`LOGGING_NOTE`] as a line of its own.
///
/// # Errors
/// Errors writing to `out`.
pub fn write_logging_note(out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{LOGGING_NOTE}")
}

/// Median, minimum and maximum of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The middle value (mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

/// Median, min and max of `values`; `None` when empty.
#[must_use]
pub fn summarize(values: &[f64]) -> Option<Summary> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    };
    Some(Summary { median, min: v[0], max: v[n - 1] })
}

/// A distribution-free 95% confidence interval for the median of the population `values` were
/// drawn from: the order statistics `x(k)` and `x(n + 1 - k)` (1-based, ascending), with `k` the
/// largest rank whose binomial tail `P(B(n, 1/2) < k)` is at most 2.5%. It assumes only that the
/// values are independent draws from one distribution. `None` for fewer than 6 values, where
/// even the smallest and largest value cover the median with less than 95% probability.
#[must_use]
pub fn median_interval(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    let k = if n <= 1000 {
        // P(B < k), summed from P(B = 0) = 2^-n (no underflow for n <= 1000).
        let mut pmf = 0.5f64.powi(i32::try_from(n).ok()?);
        let (mut below, mut k) = (0.0, 0);
        while below + pmf <= 0.025 {
            below += pmf;
            pmf *= (n - k) as f64 / (k + 1) as f64;
            k += 1;
        }
        k
    } else {
        // The normal approximation of the binomial.
        ((n as f64 / 2.0 - 1.96 * (n as f64).sqrt() / 2.0).floor()) as usize
    };
    if k == 0 {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some((v[k - 1], v[n - k]))
}

/// `num / den`, if `den` is positive.
#[must_use]
pub fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| num / den)
}

/// `1234567` as `1,234,567`.
#[must_use]
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let groups: Vec<&str> =
        digits.as_bytes().rchunks(3).rev().map(|g| std::str::from_utf8(g).unwrap_or_default()).collect();
    groups.join(",")
}

/// Bytes in binary units: `64 MiB`, `1.5 GiB`, `512 B`.
#[must_use]
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if v.fract() == 0.0 {
        format!("{v} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// Per-mode figures over all of its measurements.
struct Row<'a> {
    result: &'a ModeResult,
    throughput: Option<Summary>,
    pt_per_op: Option<f64>,
    hit_ratio: Option<f64>,
}

impl<'a> Row<'a> {
    fn new(result: &'a ModeResult) -> Row<'a> {
        let tp: Vec<f64> = result.runs.iter().map(|m| m.throughput()).collect();
        let ops: u64 = result.runs.iter().map(|m| m.ops).sum();
        let sum = |f: fn(&swizzledb::Stats) -> u64| result.runs.iter().map(|m| f(&m.stats)).sum();
        let (hits, misses, pt): (u64, u64, u64) =
            (sum(|s| s.hits), sum(|s| s.misses), sum(|s| s.page_table_lookups));
        Row {
            result,
            throughput: summarize(&tp),
            pt_per_op: ratio(pt as f64, ops as f64),
            hit_ratio: ratio(hits as f64, (hits + misses) as f64),
        }
    }

    fn median(&self) -> Option<f64> {
        self.throughput.map(|s| s.median)
    }
}

/// Writes the caption, the table, its legend and the check lines.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_table(out: &mut impl Write, cfg: &Config, results: &[ModeResult]) -> io::Result<()> {
    let rows: Vec<Row<'_>> = results.iter().map(Row::new).collect();
    // Ratios are relative to main-memory if it was measured, else to the first measured mode.
    let preferred = cfg.baseline.unwrap_or(PoolMode::MainMemory);
    let base = rows
        .iter()
        .find(|r| r.result.mode == preferred && r.median().is_some())
        .or_else(|| rows.iter().find(|r| r.median().is_some()));

    let timing = match cfg.timed_ops {
        Some(n) => format!("{} x {} operations timed", cfg.repeat, thousands(n)),
        None => format!("{} x {} s measured after {} s warmup", cfg.repeat, cfg.duration, cfg.warmup),
    };
    writeln!(
        out,
        "{}: {} records ({} of keys and values; {} accessed, {}), {} thread{}, pool {} per mode, \
         {} pages, {}, {timing}",
        cfg.experiment,
        thousands(cfg.records),
        bytes(cfg.records.saturating_mul(RECORD_BYTES)),
        bytes(cfg.working_set.saturating_mul(RECORD_BYTES)),
        cfg.zipf.map_or_else(|| "uniform".to_string(), |s| format!("Zipf s={s}")),
        cfg.threads,
        if cfg.threads == 1 { "" } else { "s" },
        bytes(cfg.pool_bytes as u64),
        bytes(cfg.page_size as u64),
        cfg.policy,
    )?;
    writeln!(out)?;

    let header = ["mode", "median/s", "min/s", "max/s", "ratio", "pt/op", "hit ratio", "load", "load rate"];
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for r in &rows {
        let mut cells = vec![r.result.mode.name().to_string()];
        let rate = |v: f64| thousands(v.round() as u64);
        match r.throughput {
            Some(s) => cells.extend([rate(s.median), rate(s.min), rate(s.max)]),
            None => cells.extend(["FAILED".into(), "-".into(), "-".into()]),
        }
        let base_median = base.and_then(Row::median).unwrap_or(0.0);
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".into(), f);
        cells.push(opt(r.median().and_then(|m| ratio(m, base_median)), &|v| format!("{v:.2}")));
        cells.push(opt(r.pt_per_op, &|v| format!("{v:.2}")));
        cells.push(opt(r.hit_ratio, &|v| format!("{:.2}%", v * 100.0)));
        cells.push(opt(r.result.load_secs, &|v| format!("{v:.prec$} s", prec = if v < 1.0 { 3 } else { 2 })));
        cells.push(opt(r.result.load_secs, &|v| format!("{}/s", rate(r.result.loaded as f64 / v))));
        table.push(cells);
    }
    write_aligned(out, &table)?;

    writeln!(out)?;
    let base_name = base.map_or("-", |b| b.result.mode.name());
    writeln!(
        out,
        "operations/s over {} repetition{}; ratio = median / {base_name} median; pt/op = \
         page-table lookups per operation",
        cfg.repeat,
        if cfg.repeat == 1 { "" } else { "s" },
    )?;
    for r in rows.iter().filter(|r| r.result.error.is_some()) {
        writeln!(out, "{} FAILED: {}", r.result.mode, r.result.error.as_deref().unwrap_or_default())?;
    }

    let check = |mode: PoolMode| -> Option<String> {
        let find = |m: PoolMode| rows.iter().find(|r| r.result.mode == m);
        let (num, den) = (find(mode)?, find(PoolMode::MainMemory)?);
        Some(match (num.median(), den.median()) {
            (Some(n), Some(d)) => ratio(n, d).map_or("n/a".into(), |v| format!("{v:.2}")),
            (None, _) => format!("n/a ({mode} failed)"),
            (_, None) => "n/a (main-memory failed)".into(),
        })
    };
    if cfg.experiment != "rndread" {
        return Ok(());
    }
    let mut first = true;
    for (mode, note) in [(PoolMode::Swizzling, "target >= 0.97"), (PoolMode::Traditional, "papers: 0.6-0.7")]
    {
        if let Some(value) = check(mode) {
            if first {
                writeln!(out)?;
                first = false;
            }
            writeln!(out, "{mode}/main-memory = {value} ({note})")?;
        }
    }
    Ok(())
}

fn median_of(result: &ModeResult) -> Option<f64> {
    let tp: Vec<f64> = result.runs.iter().map(|m| m.throughput()).collect();
    summarize(&tp).map(|s| s.median)
}

fn median_at(point: &[ModeResult], mode: PoolMode) -> Option<f64> {
    point.iter().find(|r| r.mode == mode).and_then(median_of)
}

/// The median of the ratios `num/den` over the points selected by `keep`.
fn ratio_over(
    points: &[(&Config, &[ModeResult])],
    num: PoolMode,
    den: PoolMode,
    keep: impl Fn(&Config) -> bool,
) -> Option<f64> {
    let v: Vec<f64> = points
        .iter()
        .filter(|(c, _)| keep(c))
        .filter_map(|(_, p)| ratio(median_at(p, num)?, median_at(p, den)?))
        .collect();
    summarize(&v).map(|s| s.median)
}

/// Graefe et al. Fig. 10/11: a table of median lookups/s per database size and mode, and the
/// check of the paper's claims.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_fig10_summary(
    out: &mut impl Write,
    configs: &[Config],
    points: &[Vec<ModeResult>],
) -> io::Result<()> {
    let Some(first) = configs.first() else { return Ok(()) };
    let pool = first.pool_bytes as u64;
    let modes: Vec<PoolMode> = first.modes.clone();
    writeln!(out)?;
    writeln!(out, "Fig. 10/11 summary: median lookups/s by database size (pool {})", bytes(pool))?;
    writeln!(out)?;
    let mut table = vec![std::iter::once("data".to_string())
        .chain(modes.iter().map(|m| m.name().to_string()))
        .collect::<Vec<_>>()];
    for (cfg, point) in configs.iter().zip(points) {
        let mut row = vec![bytes(cfg.records.saturating_mul(RECORD_BYTES))];
        for &m in &modes {
            let r = point.iter().find(|r| r.mode == m);
            row.push(match (r.and_then(median_of), r.and_then(|r| r.error.as_deref())) {
                (Some(v), _) => thousands(v.round() as u64),
                (None, Some(e)) if e.contains("main-memory mode") => "memory limit".into(),
                _ => "failed".into(),
            });
        }
        table.push(row);
    }
    write_aligned(out, &table)?;

    let data = |c: &Config| c.records.saturating_mul(RECORD_BYTES);
    let pairs: Vec<(&Config, &[ModeResult])> = configs.iter().zip(points.iter().map(Vec::as_slice)).collect();
    let fits = |c: &Config| data(c) * 2 <= pool;
    let beyond = |c: &Config| data(c) >= pool * 2;
    writeln!(out)?;
    let mark = |ok: bool| if ok { "✓" } else { "✗" };
    if let Some(v) = ratio_over(&pairs, PoolMode::Swizzling, PoolMode::MainMemory, fits) {
        writeln!(out, "in memory: swizzling/main-memory = {v:.2} (paper: 0.97-0.99) {}", mark(v >= 0.95))?;
    }
    if let Some(v) = ratio_over(&pairs, PoolMode::Traditional, PoolMode::MainMemory, fits) {
        let swz = ratio_over(&pairs, PoolMode::Swizzling, PoolMode::MainMemory, fits);
        writeln!(
            out,
            "in memory: traditional/main-memory = {v:.2} (paper: clearly below swizzling) {}",
            mark(swz.is_none_or(|s| v < s))
        )?;
    }
    if let Some(v) = ratio_over(&pairs, PoolMode::Swizzling, PoolMode::Traditional, beyond) {
        writeln!(
            out,
            "beyond the pool: swizzling/traditional = {v:.2} (paper: both degrade alike, swizzling \
             slightly lower) {}",
            mark((0.75..=1.33).contains(&v))
        )?;
    }
    let limit = configs.iter().zip(points).find(|(_, p)| {
        p.iter().any(|r| {
            r.mode == PoolMode::MainMemory
                && r.error.as_deref().is_some_and(|e| e.contains("main-memory mode"))
        })
    });
    if let Some((c, _)) = limit {
        writeln!(
            out,
            "main-memory mode stops at its memory limit: from {} of data on it cannot load (a \
             main-memory database cannot hold more than its memory) ✓",
            bytes(data(c))
        )?;
    }
    Ok(())
}

/// Graefe et al. Fig. 12: swizzling = main-memory > traditional on random inserts.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_fig12_check(out: &mut impl Write, results: &[ModeResult]) -> io::Result<()> {
    let m = |mode| results.iter().find(|r| r.mode == mode).and_then(median_of);
    let (t, s, mm) = (m(PoolMode::Traditional), m(PoolMode::Swizzling), m(PoolMode::MainMemory));
    writeln!(out)?;
    if let (Some(s), Some(mm)) = (s, mm) {
        let v = s / mm;
        let ok = if v >= 0.9 { "✓" } else { "✗" };
        writeln!(out, "inserts: swizzling/main-memory = {v:.2} (paper: equal) {ok}")?;
    }
    if let (Some(t), Some(s)) = (t, s) {
        let v = t / s;
        let ok = if v < 1.0 { "✓" } else { "✗" };
        writeln!(out, "inserts: traditional/swizzling = {v:.2} (paper: traditional below) {ok}")?;
    }
    Ok(())
}

/// Graefe et al. Fig. 13: steady-state throughput (second half of every interval) and the
/// throughput right after each shift (first sample of an interval), per mode, and the check.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_drift_summary(
    out: &mut impl Write,
    samples: &[crate::drift::Sample],
    interval: f64,
    modes: &[PoolMode],
) -> io::Result<()> {
    let in_phase = |s: &crate::drift::Sample| s.t_s - interval * f64::from(s.phase);
    let pick = |mode: PoolMode, steady: bool| -> Option<Summary> {
        let v: Vec<f64> = samples
            .iter()
            .filter(|s| s.mode == mode.name())
            .filter(|s| {
                if steady {
                    in_phase(s) > interval / 2.0
                } else {
                    in_phase(s) <= interval / 4.0 && s.phase > 0
                }
            })
            .map(|s| s.throughput)
            .collect();
        summarize(&v)
    };
    writeln!(out)?;
    let mut table =
        vec![vec!["mode".to_string(), "steady/s".into(), "after shift/s".into(), "recovery".into()]];
    for &m in modes {
        let (st, sh) = (pick(m, true), pick(m, false));
        let Some(st) = st else { continue };
        let cell = |v: Option<Summary>| v.map_or("-".to_string(), |s| thousands(s.median.round() as u64));
        let rec = sh.map_or("-".to_string(), |sh| format!("{:.2}", sh.median / st.median));
        table.push(vec![m.name().to_string(), cell(Some(st)), cell(sh), rec]);
    }
    write_aligned(out, &table)?;
    writeln!(
        out,
        "steady = medians of samples in the second half of each interval; after shift = first quarter"
    )?;
    let (t, s) = (pick(PoolMode::Traditional, true), pick(PoolMode::Swizzling, true));
    if let (Some(t), Some(s)) = (t, s) {
        let v = s.median / t.median;
        let ok = if v > 1.0 { "✓" } else { "✗" };
        writeln!(out, "\ndrift: swizzling/traditional in the steady state = {v:.2} (paper: ~2) {ok}")?;
    }
    Ok(())
}

/// Writes the drift time series (replacing the file).
///
/// # Errors
/// Errors creating or writing the file.
pub fn write_series_csv(path: &Path, samples: &[crate::drift::Sample]) -> io::Result<()> {
    let mut text = String::from("experiment,mode,repetition,t_s,phase,throughput,hit_ratio,logging\n");
    for s in samples {
        text.push_str(&format!(
            "{},{},{},{:.3},{},{:.1},{:.6},{LOGGING}\n",
            s.experiment, s.mode, s.repetition, s.t_s, s.phase, s.throughput, s.hit_ratio
        ));
    }
    std::fs::write(path, text)
}

/// Writes rows with the first column left-aligned and the others right-aligned.
pub(crate) fn write_aligned(out: &mut impl Write, table: &[Vec<String>]) -> io::Result<()> {
    let cols = table.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| table.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0))
        .collect();
    for row in table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c == 0 {
                line.push_str(&format!("{cell:<w$}", w = widths[0]));
            } else {
                line.push_str(&format!("  {cell:>w$}", w = widths[c]));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// One result row: one mode, one repetition (and one sweep point). The CSV and JSON outputs
/// share this schema; `docs/results-schema.md` describes every column.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Record {
    /// Experiment name (`rndread`, `graefe-fig10`, ...).
    pub experiment: String,
    /// Buffer mode.
    pub mode: String,
    /// Replacement policy as configured (also for main-memory mode, which never evicts).
    pub policy: String,
    /// Lookup threads.
    pub threads: usize,
    /// Records in the database.
    pub records: u64,
    /// Buffer-pool bytes (the memory limit in main-memory mode).
    pub pool_bytes: u64,
    /// Bytes of keys and values in the accessed key range (128 per record).
    pub working_set_bytes: u64,
    /// Repetition number, from 0.
    pub repetition: usize,
    /// Seconds measured.
    pub duration_s: f64,
    /// Operations per second.
    pub throughput: f64,
    /// Fixes that found the page resident / all fixes.
    pub hit_ratio: f64,
    /// Page-table lookups per operation.
    pub page_table_lookups_per_op: f64,
    /// Swips swizzled during the measurement.
    pub swizzles: u64,
    /// Swips un-swizzled during the measurement.
    pub unswizzles: u64,
    /// Frames evicted during the measurement.
    pub evictions: u64,
    /// Pages read from the file.
    pub pages_read: u64,
    /// Pages written to the file.
    pub pages_written: u64,
    /// Bytes of frames holding pages at the end of the measurement.
    pub memory_bytes: u64,
    /// Median operation latency (sampled), nanoseconds.
    pub p50_ns: u64,
    /// 99th-percentile latency, nanoseconds.
    pub p99_ns: u64,
    /// 99.9th-percentile latency, nanoseconds.
    pub p999_ns: u64,
    /// When this measurement started, in seconds after the first measurement of its run (shows
    /// the interleaving of modes and repetitions).
    pub started_s: f64,
    /// Whether a write-ahead log was on (never, for these experiments: they measure the buffer).
    pub logging: bool,
}

/// The CSV header: the field names of [`Record`], in order.
pub const CSV_HEADER: &str = "experiment,mode,policy,threads,records,pool_bytes,working_set_bytes,\
repetition,duration_s,throughput,hit_ratio,page_table_lookups_per_op,swizzles,unswizzles,evictions,\
pages_read,pages_written,memory_bytes,p50_ns,p99_ns,p999_ns,started_s,logging";

/// The rows of one run: one per (mode, repetition).
#[must_use]
pub fn records(cfg: &Config, results: &[ModeResult]) -> Vec<Record> {
    let mut rows = Vec::new();
    let first = results.iter().flat_map(|r| r.runs.iter().map(|m| m.started)).min();
    for r in results {
        for m in &r.runs {
            let s = &m.stats;
            rows.push(Record {
                experiment: cfg.experiment.clone(),
                mode: r.mode.name().to_string(),
                policy: cfg.policy.to_string(),
                threads: cfg.threads,
                records: cfg.records,
                pool_bytes: cfg.pool_bytes as u64,
                working_set_bytes: cfg.working_set.saturating_mul(RECORD_BYTES),
                repetition: m.repetition,
                duration_s: m.secs,
                throughput: m.throughput(),
                hit_ratio: ratio(s.hits as f64, (s.hits + s.misses) as f64).unwrap_or(1.0),
                page_table_lookups_per_op: ratio(s.page_table_lookups as f64, m.ops as f64).unwrap_or(0.0),
                swizzles: s.swizzles,
                unswizzles: s.unswizzles,
                evictions: s.evictions,
                pages_read: s.pages_read,
                pages_written: s.pages_written,
                memory_bytes: m.resident_bytes,
                p50_ns: m.latency.p50_ns,
                p99_ns: m.latency.p99_ns,
                p999_ns: m.latency.p999_ns,
                started_s: first.map_or(0.0, |f| m.started.duration_since(f).as_secs_f64()),
                logging: LOGGING,
            });
        }
    }
    rows
}

fn csv_line(r: &Record) -> String {
    format!(
        "{},{},{},{},{},{},{},{},{:.3},{:.1},{:.6},{:.4},{},{},{},{},{},{},{},{},{},{:.3},{}\n",
        r.experiment,
        r.mode,
        r.policy,
        r.threads,
        r.records,
        r.pool_bytes,
        r.working_set_bytes,
        r.repetition,
        r.duration_s,
        r.throughput,
        r.hit_ratio,
        r.page_table_lookups_per_op,
        r.swizzles,
        r.unswizzles,
        r.evictions,
        r.pages_read,
        r.pages_written,
        r.memory_bytes,
        r.p50_ns,
        r.p99_ns,
        r.p999_ns,
        r.started_s,
        r.logging,
    )
}

/// Checks that rows written by [`write_csv`] can be appended to the file at `path`: it is
/// missing, empty, or starts with [`CSV_HEADER`] (a file from a version with other columns
/// would get rows that do not line up with its header).
///
/// # Errors
/// A message naming the file, if it has another header or cannot be read.
pub fn check_csv_appendable(path: &Path) -> Result<(), String> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read --csv {}: {e}", path.display())),
    };
    let mut first = String::new();
    let read = io::BufRead::read_line(&mut io::BufReader::new(file), &mut first)
        .map_err(|e| format!("cannot read --csv {}: {e}", path.display()))?;
    if read == 0 || first.trim_end_matches(['\n', '\r']) == CSV_HEADER {
        Ok(())
    } else {
        Err(format!(
            "--csv {} has other columns than this version writes (docs/results-schema.md); use a new file",
            path.display()
        ))
    }
}

/// Appends `rows` to the CSV file at `path`, writing the header first if the file is new or
/// empty (or if `fresh`, which empties it first).
///
/// # Errors
/// Errors opening or writing the file.
pub fn write_csv(path: &Path, rows: &[Record], fresh: bool) -> io::Result<()> {
    let mut file = OpenOptions::new().create(true).append(!fresh).write(true).truncate(fresh).open(path)?;
    let mut text = String::new();
    if file.metadata()?.len() == 0 {
        text.push_str(CSV_HEADER);
        text.push('\n');
    }
    for r in rows {
        text.push_str(&csv_line(r));
    }
    file.write_all(text.as_bytes())
}

/// Writes `rows` as a JSON document `{"schema": 1, "rows": [...]}` (replacing the file).
///
/// # Errors
/// Errors creating or writing the file.
pub fn write_json(path: &Path, rows: &[Record]) -> io::Result<()> {
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        schema: u32,
        rows: &'a [Record],
    }
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer_pretty(file, &Doc { schema: 1, rows }).map_err(io::Error::other)
}

/// One series per mode from `(x, results)` pairs: median with min..max bars of the throughput.
fn mode_series(modes: &[PoolMode], at: &[(f64, &[ModeResult])]) -> Vec<crate::plot::Series> {
    modes
        .iter()
        .map(|&m| crate::plot::Series {
            name: m.name().to_string(),
            points: at
                .iter()
                .filter_map(|(x, results)| {
                    let r = results.iter().find(|r| r.mode == m)?;
                    let tp: Vec<f64> = r.runs.iter().map(|m| m.throughput()).collect();
                    let s = summarize(&tp)?;
                    Some(crate::plot::Point { x: *x, y: s.median, y_min: s.min, y_max: s.max })
                })
                .collect(),
        })
        .collect()
}

/// The chart of a sweep: throughput against the swept size (log scale), one line per mode.
#[must_use]
pub fn sweep_chart(
    title: &str,
    x_label: &str,
    configs: &[Config],
    points: &[Vec<ModeResult>],
    x_of: impl Fn(&Config) -> u64,
) -> crate::plot::Chart {
    let at: Vec<(f64, &[ModeResult])> =
        configs.iter().zip(points).map(|(c, p)| (x_of(c) as f64, p.as_slice())).collect();
    let first = configs.first();
    let modes = first.map(|c| c.modes.clone()).unwrap_or_default();
    let pool = first.map_or(0, |c| c.pool_bytes as u64);
    crate::plot::Chart {
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: "lookups per second".to_string(),
        x_scale: crate::plot::Scale::Log2,
        series: mode_series(&modes, &at),
        note: first.map(|c| {
            format!(
                "{} thread(s), {} pages, {}, {} repetitions; main-memory is absent where it hit its memory limit",
                c.threads,
                bytes(c.page_size as u64),
                c.policy,
                c.repeat
            )
        }),
        vline: (pool > 0).then(|| (pool as f64, format!("pool = {}", bytes(pool)))),
        marks: None,
    }
}

/// The chart of the insert experiment: inserts/s of each repetition, one line per mode.
#[must_use]
pub fn repetition_chart(title: &str, cfg: &Config, results: &[ModeResult]) -> crate::plot::Chart {
    let series = cfg
        .modes
        .iter()
        .map(|&m| crate::plot::Series {
            name: m.name().to_string(),
            points: results
                .iter()
                .filter(|r| r.mode == m)
                .flat_map(|r| r.runs.iter())
                .map(|run| {
                    let y = run.throughput();
                    crate::plot::Point { x: (run.repetition + 1) as f64, y, y_min: y, y_max: y }
                })
                .collect(),
        })
        .collect();
    crate::plot::Chart {
        title: title.to_string(),
        x_label: "repetition (modes alternate)".to_string(),
        y_label: "inserts per second".to_string(),
        x_scale: crate::plot::Scale::Linear,
        series,
        note: Some(format!(
            "{} records at the end, {} thread(s), pool {}",
            thousands(cfg.records),
            cfg.threads,
            bytes(cfg.pool_bytes as u64)
        )),
        vline: None,
        marks: None,
    }
}

/// The chart of the drift experiment: throughput over time, one line per mode.
#[must_use]
pub fn drift_chart(
    title: &str,
    cfg: &Config,
    samples: &[crate::drift::Sample],
    interval: f64,
) -> crate::plot::Chart {
    let series = cfg
        .modes
        .iter()
        .map(|&m| crate::plot::Series {
            name: m.name().to_string(),
            points: samples
                .iter()
                .filter(|s| s.mode == m.name() && s.repetition == 0)
                .map(|s| crate::plot::Point {
                    x: s.t_s,
                    y: s.throughput,
                    y_min: s.throughput,
                    y_max: s.throughput,
                })
                .collect(),
        })
        .collect();
    crate::plot::Chart {
        title: title.to_string(),
        x_label: "time (s)".to_string(),
        y_label: "lookups per second".to_string(),
        x_scale: crate::plot::Scale::Linear,
        series,
        note: Some(format!(
            "hot set {} in {} of data, pool {}; 25% of the hot set replaced every {interval} s (first repetition)",
            bytes(cfg.working_set * RECORD_BYTES),
            bytes(cfg.records * RECORD_BYTES),
            bytes(cfg.pool_bytes as u64)
        )),
        vline: Some((interval, "first shift".to_string())),
        marks: None,
    }
}

/// The fix() table: ns per fix by mode and latch mode, and the checks.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_fix_table(
    out: &mut impl Write,
    cfg: &Config,
    samples: &[crate::fixcost::FixSample],
) -> io::Result<()> {
    writeln!(
        out,
        "fix(): ns per fix + unfix of a resident child of the root, {} records, {} repetitions",
        thousands(cfg.records),
        cfg.repeat
    )?;
    write_logging_note(out)?;
    writeln!(out)?;
    let mut table =
        vec![vec!["mode".to_string(), "latch".into(), "median ns".into(), "min ns".into(), "max ns".into()]];
    for &m in &cfg.modes {
        for latch in ["shared", "exclusive"] {
            if let Some(s) = crate::fixcost::median(samples, m, latch) {
                table.push(vec![
                    m.name().to_string(),
                    latch.to_string(),
                    format!("{:.1}", s.median),
                    format!("{:.1}", s.min),
                    format!("{:.1}", s.max),
                ]);
            }
        }
    }
    write_aligned(out, &table)?;
    let med = |m, l| crate::fixcost::median(samples, m, l).map(|s| s.median);
    writeln!(out)?;
    if let (Some(s), Some(t)) = (med(PoolMode::Swizzling, "shared"), med(PoolMode::Traditional, "shared")) {
        let v = s / t;
        let ok = if v < 0.85 { "✓" } else { "✗" };
        writeln!(
            out,
            "fix: swizzled/page-table = {v:.2} (Gilbert 2017: about 0.7; Graefe 2014: larger gains) {ok}"
        )?;
    }
    if let (Some(s), Some(mm)) = (med(PoolMode::Swizzling, "shared"), med(PoolMode::MainMemory, "shared")) {
        writeln!(
            out,
            "fix: swizzling/main-memory = {:.2} (the difference is the replacement policy's hit hook)",
            s / mm
        )?;
    }
    Ok(())
}

/// Writes the fix() samples as CSV (replacing the file).
///
/// # Errors
/// Errors writing the file.
pub fn write_fix_csv(path: &Path, samples: &[crate::fixcost::FixSample]) -> io::Result<()> {
    let mut text = String::from("experiment,mode,latch,repetition,fixes,ns_per_fix,logging\n");
    for s in samples {
        text.push_str(&format!(
            "fix,{},{},{},{},{:.3},{}\n",
            s.mode, s.latch, s.repetition, s.fixes, s.ns_per_fix, s.logging
        ));
    }
    std::fs::write(path, text)
}

/// The fix() chart: ns per fix in each repetition, one line per mode and latch mode.
#[must_use]
pub fn fix_chart(cfg: &Config, samples: &[crate::fixcost::FixSample]) -> crate::plot::Chart {
    let mut series = Vec::new();
    for &m in &cfg.modes {
        for latch in ["shared", "exclusive"] {
            series.push(crate::plot::Series {
                name: format!("{m} / {latch}"),
                points: samples
                    .iter()
                    .filter(|s| s.mode == m.name() && s.latch == latch)
                    .map(|s| crate::plot::Point {
                        x: (s.repetition + 1) as f64,
                        y: s.ns_per_fix,
                        y_min: s.ns_per_fix,
                        y_max: s.ns_per_fix,
                    })
                    .collect(),
            });
        }
    }
    crate::plot::Chart {
        title: "Cost of one fix() hit (Graefe et al. 2014; Gilbert 2017)".to_string(),
        x_label: "repetition (modes alternate)".to_string(),
        y_label: "nanoseconds per fix".to_string(),
        x_scale: crate::plot::Scale::Linear,
        series,
        note: Some(format!("children of the root of a {}-record tree, all resident", thousands(cfg.records))),
        vline: None,
        marks: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_min_max() {
        assert_eq!(summarize(&[]), None);
        let s = summarize(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = summarize(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
        assert_eq!(summarize(&[5.0]).unwrap().median, 5.0);
    }

    /// Ranks from the binomial tables: n = 6 gives the extremes (coverage 1 - 2/64), n = 11 the
    /// 2nd and 10th values, n = 25 the 8th and 18th; five values are too few.
    #[test]
    fn median_interval_uses_the_binomial_ranks() {
        let values = |n: usize| (1..=n).rev().map(|i| i as f64).collect::<Vec<_>>();
        assert_eq!(median_interval(&values(5)), None);
        assert_eq!(median_interval(&values(6)), Some((1.0, 6.0)));
        assert_eq!(median_interval(&values(11)), Some((2.0, 10.0)));
        assert_eq!(median_interval(&values(25)), Some((8.0, 18.0)));
        let (lo, hi) = median_interval(&values(2001)).unwrap();
        assert!((955.0..=957.0).contains(&lo) && (1045.0..=1047.0).contains(&hi), "{lo} {hi}");
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(1.0, 2.0), Some(0.5));
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(1.0, -1.0), None);
    }

    /// `docs/results-schema.md` documents every column of the result files written from
    /// [`Record`], of `gilbert-policies.csv` and of `ding-bpwrapper.csv`, each in its section.
    #[test]
    fn results_schema_documents_every_column() {
        let doc = include_str!("../../../docs/results-schema.md");
        let section = |heading: Option<&str>| -> &str {
            let mut sections = doc.split("\n## ");
            match heading {
                None => sections.next().unwrap(),
                Some(h) => sections.find(|s| s.starts_with(h)).unwrap_or_else(|| panic!("no section {h}")),
            }
        };
        for (header, heading) in [
            (CSV_HEADER, None),
            (crate::policies::CSV_HEADER, Some("`gilbert-policies.csv`")),
            (crate::bpwrapper::CSV_HEADER, Some("`ding-bpwrapper.csv`")),
        ] {
            let text = section(heading);
            for column in header.split(',') {
                assert!(text.contains(&format!("`{column}`")), "{column} ({heading:?}) is not documented");
            }
            assert!(header.ends_with(",logging"), "{header}");
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(64 << 20), "64 MiB");
        assert_eq!(bytes(3 << 29), "1.5 GiB");
    }
}
