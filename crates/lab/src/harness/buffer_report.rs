//! Turning measurements into the results table, the check lines and CSV rows.

use crate::harness::buffer::{Config, Measurement, ModeResult, PeerResult, LOGGING, RECORD_BYTES};
use std::io::{self, Write};
use std::path::Path;

use crate::support::stats::{ratio, summarize, Summary};
use crate::support::text::write_aligned;
use crate::support::text::{bytes, thousands};
use swizzledb::PoolMode;

/// The line every buffer experiment and benchmark prints before its tables: they run without a
/// write-ahead log ([`crate::harness::buffer::LOGGING`]).
pub const LOGGING_NOTE: &str = "logging: off (buffer only; see bench wal for the log's cost)";

/// Writes [`LOGGING_NOTE`] as a line of its own.
///
/// # Errors
/// Errors writing to `out`.
pub fn write_logging_note(out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{LOGGING_NOTE}")
}

/// Per-mode (or per peer engine) figures over all of its measurements.
struct Row<'a> {
    /// The mode's name, or the peer engine's.
    label: &'static str,
    /// The buffer mode (none for a peer engine).
    mode: Option<PoolMode>,
    load_secs: Option<f64>,
    loaded: u64,
    error: Option<&'a str>,
    throughput: Option<Summary>,
    pt_per_op: Option<f64>,
    hit_ratio: Option<f64>,
}

fn throughputs(runs: &[Measurement]) -> Option<Summary> {
    let tp: Vec<f64> = runs.iter().map(Measurement::throughput).collect();
    summarize(&tp)
}

impl<'a> Row<'a> {
    fn new(result: &'a ModeResult) -> Row<'a> {
        let ops: u64 = result.runs.iter().map(|m| m.ops).sum();
        let sum = |f: fn(&swizzledb::Stats) -> u64| result.runs.iter().map(|m| f(&m.stats)).sum();
        let (hits, misses, pt): (u64, u64, u64) =
            (sum(|s| s.hits), sum(|s| s.misses), sum(|s| s.page_table_lookups));
        Row {
            label: result.mode.name(),
            mode: Some(result.mode),
            load_secs: result.load_secs,
            loaded: result.loaded,
            error: result.error.as_deref(),
            throughput: throughputs(&result.runs),
            pt_per_op: ratio(pt as f64, ops as f64),
            hit_ratio: ratio(hits as f64, (hits + misses) as f64),
        }
    }

    /// A peer engine: no buffer pool, so no page-table lookups or hit ratio.
    fn peer(result: &'a PeerResult) -> Row<'a> {
        Row {
            label: result.engine.name(),
            mode: None,
            load_secs: result.load_secs,
            loaded: result.loaded,
            error: result.error.as_deref(),
            throughput: throughputs(&result.runs),
            pt_per_op: None,
            hit_ratio: None,
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
    print_table_with_peers(out, cfg, results, &[])
}

/// [`print_table`] with a row per peer engine below the modes.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_table_with_peers(
    out: &mut impl Write,
    cfg: &Config,
    results: &[ModeResult],
    peers: &[PeerResult],
) -> io::Result<()> {
    let rows: Vec<Row<'_>> = results.iter().map(Row::new).chain(peers.iter().map(Row::peer)).collect();
    // Ratios are relative to main-memory if it was measured, else to the first measured mode.
    let preferred = cfg.baseline.unwrap_or(PoolMode::MainMemory);
    let base = rows
        .iter()
        .find(|r| r.mode == Some(preferred) && r.median().is_some())
        .or_else(|| rows.iter().find(|r| r.median().is_some()));

    let timing = match cfg.timed_ops {
        Some(n) => format!("{} x {} operations timed", cfg.repeat, thousands(n)),
        None => format!("{} x {} s measured after {} s warmup", cfg.repeat, cfg.duration, cfg.warmup),
    };
    // The pool, page size and policy describe SwizzleDB's modes; a run of peers alone has none.
    let engine = if cfg.modes.is_empty() {
        String::new()
    } else {
        format!(
            ", pool {} per mode, {} pages, {}",
            bytes(cfg.pool_bytes as u64),
            bytes(cfg.page_size as u64),
            cfg.policy
        )
    };
    writeln!(
        out,
        "{}: {} records ({} of keys and values; {} accessed, {}), {} thread{}{engine}, {timing}",
        cfg.experiment,
        thousands(cfg.records),
        bytes(cfg.records.saturating_mul(RECORD_BYTES)),
        bytes(cfg.working_set.saturating_mul(RECORD_BYTES)),
        cfg.zipf.map_or_else(|| "uniform".to_string(), |s| format!("Zipf s={s}")),
        cfg.threads,
        if cfg.threads == 1 { "" } else { "s" },
    )?;
    writeln!(out)?;

    let header = ["mode", "median/s", "min/s", "max/s", "ratio", "pt/op", "hit ratio", "load", "load rate"];
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for r in &rows {
        let mut cells = vec![r.label.to_string()];
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
        cells.push(opt(r.load_secs, &|v| format!("{v:.prec$} s", prec = if v < 1.0 { 3 } else { 2 })));
        cells.push(opt(r.load_secs, &|v| format!("{}/s", rate(r.loaded as f64 / v))));
        table.push(cells);
    }
    write_aligned(out, &table)?;

    writeln!(out)?;
    let base_name = base.map_or("-", |b| b.label);
    writeln!(
        out,
        "operations/s over {} repetition{}; ratio = median / {base_name} median; pt/op = \
         page-table lookups per operation",
        cfg.repeat,
        if cfg.repeat == 1 { "" } else { "s" },
    )?;
    for p in peers {
        writeln!(
            out,
            "{}: LMDB through heed, the same records, {} per read-only transaction (each lookup \
             thread's own), no buffer pool (pt/op and hit ratio do not apply), map {}, no durability \
             (MDB_NOSYNC|MDB_NOMETASYNC|MDB_WRITEMAP|MDB_MAPASYNC)",
            p.engine,
            match cfg.lmdb_reads_per_txn {
                1 => "one lookup".to_string(),
                n => format!("{} lookups", thousands(u64::from(n))),
            },
            bytes(p.map_bytes)
        )?;
    }
    for r in rows.iter().filter(|r| r.error.is_some()) {
        writeln!(out, "{} FAILED: {}", r.label, r.error.unwrap_or_default())?;
    }

    Ok(())
}

/// `bench lookup`'s summary below its table: each mode's throughput over main-memory's, and
/// over each peer's.
///
/// # Errors
/// Errors writing to `out`.
pub fn print_ratios(out: &mut impl Write, results: &[ModeResult], peers: &[PeerResult]) -> io::Result<()> {
    let rows: Vec<Row<'_>> = results.iter().map(Row::new).chain(peers.iter().map(Row::peer)).collect();
    let check = |mode: PoolMode| -> Option<String> {
        let find = |m: PoolMode| rows.iter().find(|r| r.mode == Some(m));
        let (num, den) = (find(mode)?, find(PoolMode::MainMemory)?);
        Some(match (num.median(), den.median()) {
            (Some(n), Some(d)) => ratio(n, d).map_or("n/a".into(), |v| format!("{v:.2}")),
            (None, _) => format!("n/a ({mode} failed)"),
            (_, None) => "n/a (main-memory failed)".into(),
        })
    };
    let mut first = true;
    for (mode, note) in [(PoolMode::Swizzling, "target >= 0.98"), (PoolMode::Traditional, "papers: 0.6-0.7")]
    {
        if let Some(value) = check(mode) {
            if first {
                writeln!(out)?;
                first = false;
            }
            writeln!(out, "{mode}/main-memory = {value} ({note})")?;
        }
    }
    for p in rows.iter().filter(|r| r.mode.is_none()) {
        for r in rows.iter().filter(|r| r.mode.is_some()) {
            if first {
                writeln!(out)?;
                first = false;
            }
            let value = match (r.median(), p.median()) {
                (Some(n), Some(d)) => ratio(n, d).map_or("n/a".into(), |v| format!("{v:.2}")),
                _ => "n/a (failed)".into(),
            };
            writeln!(out, "{}/{} = {value} (same records, keys and threads, interleaved)", r.label, p.label)?;
        }
    }
    Ok(())
}

pub fn median_of(result: &ModeResult) -> Option<f64> {
    let tp: Vec<f64> = result.runs.iter().map(|m| m.throughput()).collect();
    summarize(&tp).map(|s| s.median)
}

pub fn median_at(point: &[ModeResult], mode: PoolMode) -> Option<f64> {
    point.iter().find(|r| r.mode == mode).and_then(median_of)
}

/// One result row: one mode, one repetition (and one sweep point). The CSV and JSON outputs
/// share this schema; `docs/results-schema.md` describes every column.
#[derive(Clone, Debug, Default, serde::Serialize)]
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
    /// Buffer-pool bytes (the memory limit in main-memory mode); empty for a peer engine.
    pub pool_bytes: Option<u64>,
    /// Bytes of keys and values in the accessed key range (128 per record).
    pub working_set_bytes: u64,
    /// Repetition number, from 0.
    pub repetition: usize,
    /// Seconds measured.
    pub duration_s: f64,
    /// Operations per second.
    pub throughput: f64,
    /// Fixes that found the page resident / all fixes; empty for a peer engine.
    pub hit_ratio: Option<f64>,
    /// Page-table lookups per operation; empty for a peer engine.
    pub page_table_lookups_per_op: Option<f64>,
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
    /// `swizzledb`, or the peer engine (`lmdb`).
    pub engine: &'static str,
    /// Nanoseconds misses spent reading their page (buffer README B29; 0 for a peer engine).
    pub read_nanos: u64,
    /// Misses that found no free frame and waited for the eviction lock (B13).
    pub free_frame_waits: u64,
    /// Nanoseconds those misses waited.
    pub free_frame_wait_nanos: u64,
    /// Dirty eviction victims written after their batch, outside the eviction lock (B29).
    pub victim_writes: u64,
    /// How this measurement's misses were served: `direct` (the file opened with O_DIRECT and
    /// pages read during the measurement), `page-cache` (pages read through the OS page cache;
    /// also a peer engine's memory map), or `none` (no page read: the data was in memory).
    pub io: &'static str,
    /// A cache line's round trip between two threads just before the measurement, in
    /// nanoseconds, where the lookup harness measured two or more threads (as `line_ns` in
    /// `tpcc.csv`); empty otherwise.
    pub line_ns: Option<f64>,
}

/// The `io` column of a measurement that read `pages_read` pages, `direct` saying whether the
/// file was opened with O_DIRECT.
#[must_use]
pub fn io_of(direct: bool, pages_read: u64) -> &'static str {
    match (pages_read, direct) {
        (0, _) => "none",
        (_, true) => "direct",
        (_, false) => "page-cache",
    }
}

/// How a configuration serves misses, for captions and chart notes.
#[must_use]
pub fn io_text(direct: bool) -> &'static str {
    if direct {
        "misses read the device with O_DIRECT (direct I/O)"
    } else {
        "misses read through the OS page cache (a copy, not a device read, once the file is cached)"
    }
}

/// The CSV header: the field names of [`Record`], in order.
pub const CSV_HEADER: &str = "experiment,mode,policy,threads,records,pool_bytes,working_set_bytes,\
repetition,duration_s,throughput,hit_ratio,page_table_lookups_per_op,swizzles,unswizzles,evictions,\
pages_read,pages_written,memory_bytes,p50_ns,p99_ns,p999_ns,started_s,logging,engine,read_nanos,\
free_frame_waits,free_frame_wait_nanos,victim_writes,io,line_ns";

/// The rows of one run: one per (mode, repetition).
#[must_use]
pub fn records(cfg: &Config, results: &[ModeResult]) -> Vec<Record> {
    records_with_peers(cfg, results, &[])
}

/// [`records`], then one row per peer engine and repetition (`mode` and `policy` `-`, the
/// buffer-pool columns empty or 0, `memory_bytes` the database file in use).
#[must_use]
pub fn records_with_peers(cfg: &Config, results: &[ModeResult], peers: &[PeerResult]) -> Vec<Record> {
    let mut rows = Vec::new();
    let first = results
        .iter()
        .flat_map(|r| r.runs.iter().map(|m| m.started))
        .chain(peers.iter().flat_map(|r| r.runs.iter().map(|m| m.started)))
        .min();
    let started_s = |m: &Measurement| first.map_or(0.0, |f| m.started.duration_since(f).as_secs_f64());
    for r in results {
        for m in &r.runs {
            let s = &m.stats;
            rows.push(Record {
                experiment: cfg.experiment.clone(),
                mode: r.mode.name().to_string(),
                policy: cfg.policy.to_string(),
                threads: cfg.threads,
                records: cfg.records,
                pool_bytes: Some(cfg.pool_bytes as u64),
                working_set_bytes: cfg.working_set.saturating_mul(RECORD_BYTES),
                repetition: m.repetition,
                duration_s: m.secs,
                throughput: m.throughput(),
                hit_ratio: Some(ratio(s.hits as f64, (s.hits + s.misses) as f64).unwrap_or(1.0)),
                page_table_lookups_per_op: Some(
                    ratio(s.page_table_lookups as f64, m.ops as f64).unwrap_or(0.0),
                ),
                swizzles: s.swizzles,
                unswizzles: s.unswizzles,
                evictions: s.evictions,
                pages_read: s.pages_read,
                pages_written: s.pages_written,
                memory_bytes: m.resident_bytes,
                p50_ns: m.latency.p50_ns,
                p99_ns: m.latency.p99_ns,
                p999_ns: m.latency.p999_ns,
                started_s: started_s(m),
                logging: LOGGING,
                engine: crate::engine::EngineName::SwizzleDb.name(),
                read_nanos: s.read_nanos,
                free_frame_waits: s.free_frame_waits,
                free_frame_wait_nanos: s.free_frame_wait_nanos,
                victim_writes: s.victim_writes,
                io: io_of(cfg.direct_io, s.pages_read),
                line_ns: m.line_ns,
            });
        }
    }
    for p in peers {
        for m in &p.runs {
            rows.push(Record {
                experiment: cfg.experiment.clone(),
                mode: "-".into(),
                policy: "-".into(),
                threads: cfg.threads,
                records: cfg.records,
                pool_bytes: None,
                working_set_bytes: cfg.working_set.saturating_mul(RECORD_BYTES),
                repetition: m.repetition,
                duration_s: m.secs,
                throughput: m.throughput(),
                hit_ratio: None,
                page_table_lookups_per_op: None,
                swizzles: 0,
                unswizzles: 0,
                evictions: 0,
                pages_read: 0,
                pages_written: 0,
                memory_bytes: m.resident_bytes,
                p50_ns: m.latency.p50_ns,
                p99_ns: m.latency.p99_ns,
                p999_ns: m.latency.p999_ns,
                started_s: started_s(m),
                logging: LOGGING,
                engine: p.engine.name(),
                read_nanos: 0,
                free_frame_waits: 0,
                free_frame_wait_nanos: 0,
                victim_writes: 0,
                io: "page-cache",
                line_ns: m.line_ns,
            });
        }
    }
    rows
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
    if read == 0
        || first.trim_end_matches(['\n', '\r']) == crate::support::output::columns::<Record>().join(",")
    {
        Ok(())
    } else {
        Err(format!(
            "--csv {} has other columns than this version writes (docs/results-schema.md); use a new file",
            path.display()
        ))
    }
}

/// One series per mode from `(x, results)` pairs: median with min..max bars of the throughput.
fn mode_series(modes: &[PoolMode], at: &[(f64, &[ModeResult])]) -> Vec<crate::support::plot::Series> {
    modes
        .iter()
        .map(|&m| crate::support::plot::Series {
            name: m.name().to_string(),
            points: at
                .iter()
                .filter_map(|(x, results)| {
                    let r = results.iter().find(|r| r.mode == m)?;
                    let tp: Vec<f64> = r.runs.iter().map(|m| m.throughput()).collect();
                    let s = summarize(&tp)?;
                    Some(crate::support::plot::Point { x: *x, y: s.median, y_min: s.min, y_max: s.max })
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
) -> crate::support::plot::Chart {
    let at: Vec<(f64, &[ModeResult])> =
        configs.iter().zip(points).map(|(c, p)| (x_of(c) as f64, p.as_slice())).collect();
    let first = configs.first();
    let modes = first.map(|c| c.modes.clone()).unwrap_or_default();
    let pool = first.map_or(0, |c| c.pool_bytes as u64);
    crate::support::plot::Chart {
        title: title.to_string(),
        x_label: x_label.to_string(),
        y_label: "lookups per second".to_string(),
        x_scale: crate::support::plot::Scale::Log2,
        series: mode_series(&modes, &at),
        note: first.map(|c| {
            format!(
                "{} thread(s), {} pages, {}, {} repetitions; {}; main-memory is absent where it hit its memory limit",
                c.threads,
                bytes(c.page_size as u64),
                c.policy,
                c.repeat,
                if c.direct_io { "direct I/O beyond the pool" } else { "page cache beyond the pool" }
            )
        }),
        vline: (pool > 0).then(|| (pool as f64, format!("pool = {}", bytes(pool)))),
        marks: None,
    }
}

/// The chart of the insert experiment: inserts/s of each repetition, one line per mode.
#[must_use]
pub fn repetition_chart(title: &str, cfg: &Config, results: &[ModeResult]) -> crate::support::plot::Chart {
    let series = cfg
        .modes
        .iter()
        .map(|&m| crate::support::plot::Series {
            name: m.name().to_string(),
            points: results
                .iter()
                .filter(|r| r.mode == m)
                .flat_map(|r| r.runs.iter())
                .map(|run| {
                    let y = run.throughput();
                    crate::support::plot::Point { x: (run.repetition + 1) as f64, y, y_min: y, y_max: y }
                })
                .collect(),
        })
        .collect();
    crate::support::plot::Chart {
        title: title.to_string(),
        x_label: "repetition (modes alternate)".to_string(),
        y_label: "inserts per second".to_string(),
        x_scale: crate::support::plot::Scale::Linear,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows' columns are the ones this version has always written, in the same order.
    #[test]
    fn record_columns_are_the_documented_header() {
        assert_eq!(crate::support::output::columns::<Record>().join(","), CSV_HEADER);
    }

    /// A `--csv` file is refused if it has another header; a new file, an empty one or one with
    /// this header is taken.
    #[test]
    fn csv_appendable_checks_header_and_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.csv");
        assert_eq!(check_csv_appendable(&path), Ok(()), "a new file");
        std::fs::write(&path, "").unwrap();
        assert_eq!(check_csv_appendable(&path), Ok(()), "an empty file");
        std::fs::write(&path, format!("{CSV_HEADER}\n")).unwrap();
        assert_eq!(check_csv_appendable(&path), Ok(()), "this version's header");
        std::fs::write(&path, "experiment,mode\n").unwrap();
        assert!(check_csv_appendable(&path).unwrap_err().contains("other columns"));
    }
}
