//! YCSB's workload: its mixes and configuration, the keyspace and the [`Ycsb`] workload over
//! any engine. The module `ycsb` describes it.

use super::generator::{self, zeta, KeyChooser, Zipfian};
use super::record::{self, key_into, HEADER, TABLE};
use crate::engine::Engine;
use crate::workloads::{Outcome, Workload, WorkloadError};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The operation kinds, in [`Outcome::kind`] order (every letter counts all five).
pub const KINDS: [&str; 5] = ["read", "update", "insert", "scan", "read-modify-write"];

/// Index of each kind in [`KINDS`].
pub mod kind {
    /// Read one record.
    pub const READ: usize = 0;
    /// Overwrite one record.
    pub const UPDATE: usize = 1;
    /// Insert a new record.
    pub const INSERT: usize = 2;
    /// Read a range of records.
    pub const SCAN: usize = 3;
    /// Read one record and write it back changed.
    pub const READ_MODIFY_WRITE: usize = 4;
}

/// The workload letters.
pub const LETTERS: [char; 6] = ['A', 'B', 'C', 'D', 'E', 'F'];

/// Longest scan (YCSB's `maxscanlength`).
pub const MAX_SCAN: usize = 100;

/// Most records a configuration accepts (their keys were checked to be distinct).
pub const MAX_RECORDS: u64 = 100_000_000;

/// Longest value: what a record may hold on the default 8 KiB page.
pub const MAX_VALUE: usize = 2048;

/// A workload's operation mix, in percent per kind, and its distribution.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Mix {
    /// Percent of each kind, in [`KINDS`] order; they add up to 100.
    pub percent: [u32; 5],
    /// Requests follow `latest` (D) instead of the scrambled zipfian.
    pub latest: bool,
}

impl Mix {
    /// The mix of workload `letter` (`A` to `F`, either case).
    ///
    /// # Errors
    /// [`WorkloadError::Config`] for any other letter.
    pub fn of(letter: char) -> Result<Mix, WorkloadError> {
        let (percent, latest) = match letter.to_ascii_uppercase() {
            'A' => ([50, 50, 0, 0, 0], false),
            'B' => ([95, 5, 0, 0, 0], false),
            'C' => ([100, 0, 0, 0, 0], false),
            'D' => ([95, 0, 5, 0, 0], true),
            'E' => ([0, 0, 5, 95, 0], false),
            'F' => ([50, 0, 0, 0, 50], false),
            _ => {
                return Err(WorkloadError::Config(format!(
                    "unknown YCSB workload {letter:?}; the core workloads are A, B, C, D, E and F"
                )))
            }
        };
        Ok(Mix { percent, latest })
    }

    /// Whether the mix inserts records.
    #[must_use]
    pub fn inserts(&self) -> bool {
        self.percent[kind::INSERT] > 0
    }
}

/// Parses a workload name: one letter A–F, either case.
///
/// # Errors
/// [`WorkloadError::Config`] naming the bad name.
pub fn parse_letter(s: &str) -> Result<char, WorkloadError> {
    let t = s.trim();
    let mut chars = t.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if Mix::of(c).is_ok() => Ok(c.to_ascii_uppercase()),
        _ => Err(WorkloadError::Config(format!(
            "unknown YCSB workload {t:?}; the core workloads are A, B, C, D, E and F"
        ))),
    }
}

/// The table and the workload.
#[derive(Clone, Debug, PartialEq)]
pub struct YcsbConfig {
    /// Which core workload: `A` to `F`.
    pub letter: char,
    /// Records loaded.
    pub records: u64,
    /// Fields per record (YCSB's `fieldcount`, 10).
    pub field_count: u32,
    /// Bytes per field (YCSB's `fieldlength`, 100).
    pub field_length: u32,
    /// The zipfian constant (YCSB's `zipfianconstant`, 0.99), in (0, 1).
    pub theta: f64,
    /// Seed of the loader's and the workers' random generators.
    pub seed: u64,
}

impl YcsbConfig {
    /// Workload `letter` over `records` records of 10 fields of 100 bytes, zipfian constant
    /// 0.99.
    #[must_use]
    pub fn new(letter: char, records: u64) -> Self {
        YcsbConfig {
            letter,
            records,
            field_count: 10,
            field_length: 100,
            theta: generator::DEFAULT_THETA,
            seed: 0x7C5B_0001,
        }
    }

    /// For tests: 2,000 records, otherwise as [`YcsbConfig::new`].
    #[must_use]
    pub fn tiny(letter: char) -> Self {
        YcsbConfig::new(letter, 2_000)
    }

    /// Bytes of a value: header and fields.
    #[must_use]
    pub fn value_bytes(&self) -> usize {
        HEADER + self.field_count as usize * self.field_length as usize
    }

    /// Checks the ranges.
    ///
    /// # Errors
    /// [`WorkloadError::Config`] naming the parameter.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |s: String| Err(WorkloadError::Config(s));
        Mix::of(self.letter)?;
        if !(1..=MAX_RECORDS).contains(&self.records) {
            return bad(format!("--records {} is out of range; use 1 to {MAX_RECORDS}", self.records));
        }
        if self.field_count == 0 || self.field_length == 0 {
            return bad("--field-count and --field-length must be at least 1".into());
        }
        if u64::from(self.field_count) * u64::from(self.field_length) > (MAX_VALUE - HEADER) as u64 {
            return bad(format!(
                "{} fields of {} bytes make a value of more than the {MAX_VALUE} bytes a record may hold \
                 ({HEADER} of them the header); lower --field-count or --field-length",
                self.field_count, self.field_length
            ));
        }
        if !(self.theta > 0.0 && self.theta < 1.0) {
            return bad(format!(
                "--zipf-theta {} is out of range; use a value above 0 and below 1 (YCSB's default is 0.99)",
                self.theta
            ));
        }
        Ok(())
    }

    /// Bytes the loaded table holds in its records, keys included (a lower bound of its size
    /// in pages).
    #[must_use]
    pub fn record_bytes(&self) -> u64 {
        self.records * (self.value_bytes() as u64 + 24)
    }
}

/// What the workloads over one database share: its record count and inserts in flight.
#[derive(Debug)]
struct Keyspace {
    /// The next ordinal an insert takes.
    next: AtomicU64,
    /// Every ordinal below is committed: the records the choosers draw from.
    committed: AtomicU64,
    /// Committed ordinals above `committed` (inserts commit out of order).
    early: Mutex<BTreeSet<u64>>,
    /// Stamp streams handed out, one per worker.
    streams: AtomicU32,
    /// The largest record count zeta was computed for, and zeta, so new workers start there.
    zeta: Mutex<(u64, f64)>,
    /// `load` ran.
    loaded: AtomicBool,
}

impl Keyspace {
    fn commit(&self, ordinal: u64) {
        let mut early = self.early.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut c = self.committed.load(Ordering::Relaxed);
        if ordinal == c {
            c += 1;
            while early.remove(&c) {
                c += 1;
            }
            self.committed.store(c, Ordering::Release);
        } else {
            early.insert(ordinal);
        }
    }

    fn zeta(&self, items: u64, theta: f64) -> f64 {
        let mut z = self.zeta.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if items != z.0 {
            *z = (items, if items > z.0 { zeta(z.0, items, theta, z.1) } else { zeta(0, items, theta, 0.0) });
        }
        z.1
    }
}

/// One YCSB core workload over one database.
#[derive(Debug)]
pub struct Ycsb {
    config: YcsbConfig,
    mix: Mix,
    keys: Arc<Keyspace>,
}

/// A thread's state (`T`: the engine's table handle).
pub struct YcsbWorker<T> {
    table: T,
    rng: SmallRng,
    chooser: KeyChooser,
    stream: u32,
    writes: u32,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl<T> YcsbWorker<T> {
    /// A stamp naming this worker's next write.
    fn stamp(&mut self) -> u64 {
        self.writes = self.writes.wrapping_add(1);
        (u64::from(self.stream) + 1) << 32 | u64::from(self.writes)
    }
}

impl Ycsb {
    /// Workload `config.letter` over a database of `config.records` records (to be loaded).
    ///
    /// # Errors
    /// [`WorkloadError::Config`] if a parameter is out of range or the letter is not A–F.
    pub fn new(mut config: YcsbConfig) -> Result<Ycsb, WorkloadError> {
        config.validate()?;
        config.letter = config.letter.to_ascii_uppercase();
        let keys = Keyspace {
            next: AtomicU64::new(config.records),
            committed: AtomicU64::new(config.records),
            early: Mutex::new(BTreeSet::new()),
            streams: AtomicU32::new(0),
            zeta: Mutex::new((0, 0.0)),
            loaded: AtomicBool::new(false),
        };
        Ok(Ycsb { mix: Mix::of(config.letter)?, config, keys: Arc::new(keys) })
    }

    /// Workload `letter` over the same database (and its record count, inserts included).
    ///
    /// # Errors
    /// [`WorkloadError::Config`] for a letter other than A–F.
    pub fn with_letter(&self, letter: char) -> Result<Ycsb, WorkloadError> {
        let config = YcsbConfig { letter: letter.to_ascii_uppercase(), ..self.config.clone() };
        Ok(Ycsb { mix: Mix::of(letter)?, config, keys: Arc::clone(&self.keys) })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &YcsbConfig {
        &self.config
    }

    /// The operation mix.
    #[must_use]
    pub fn mix(&self) -> Mix {
        self.mix
    }

    /// Records in the database: those loaded and those inserted and committed since.
    #[must_use]
    pub fn records(&self) -> u64 {
        self.keys.committed.load(Ordering::Acquire)
    }

    fn read<E: Engine>(
        &self,
        db: &E,
        w: &mut YcsbWorker<E::Table>,
        ordinal: u64,
    ) -> Result<u32, WorkloadError> {
        key_into(ordinal, &mut w.key);
        let len = self.config.value_bytes();
        let (_, attempts) = db.read(&w.table, &w.key, |v| match v {
            Some(v) => record::check(v, ordinal, len).map(|_| ()),
            None => Err(missing(ordinal)),
        })?;
        Ok(attempts)
    }

    fn update<E: Engine>(
        &self,
        db: &E,
        w: &mut YcsbWorker<E::Table>,
        ordinal: u64,
    ) -> Result<u32, WorkloadError> {
        key_into(ordinal, &mut w.key);
        let stamp = w.stamp();
        record::fill(&mut w.value, self.config.value_bytes(), ordinal, stamp, &mut w.rng);
        match db.update(&w.table, &w.key, &w.value)? {
            (true, attempts) => Ok(attempts),
            // The record should have been there (the adapter wrote nothing).
            (false, _) => Err(missing(ordinal)),
        }
    }

    fn insert<E: Engine>(&self, db: &E, w: &mut YcsbWorker<E::Table>) -> Result<u32, WorkloadError> {
        let ordinal = self.keys.next.fetch_add(1, Ordering::Relaxed);
        key_into(ordinal, &mut w.key);
        record::fill(&mut w.value, self.config.value_bytes(), ordinal, 0, &mut w.rng);
        let attempts = db.insert(&w.table, &w.key, &w.value)?;
        self.keys.commit(ordinal);
        Ok(attempts)
    }

    fn scan<E: Engine>(
        &self,
        db: &E,
        w: &mut YcsbWorker<E::Table>,
        ordinal: u64,
        length: usize,
    ) -> Result<u32, WorkloadError> {
        key_into(ordinal, &mut w.key);
        let len = self.config.value_bytes();
        let mut expected = Vec::with_capacity(24);
        db.scan(&w.table, &w.key, length, |k, v| {
            // Each record is the one its key names.
            let h = record::header(v, len)?;
            key_into(h.ordinal, &mut expected);
            if k == expected {
                Ok(())
            } else {
                Err(misplaced(k, h.ordinal))
            }
        })
    }

    fn read_modify_write<E: Engine>(
        &self,
        db: &E,
        w: &mut YcsbWorker<E::Table>,
        ordinal: u64,
    ) -> Result<u32, WorkloadError> {
        key_into(ordinal, &mut w.key);
        let c = &self.config;
        let field = w.rng.gen_range(0..c.field_count) as usize;
        let mut fresh = vec![0u8; c.field_length as usize];
        w.rng.fill(&mut fresh[..]);
        let stamp = w.stamp();
        let len = c.value_bytes();
        db.read_modify_write(
            &w.table,
            &w.key,
            &mut w.value,
            |v, value| {
                let v = v.ok_or_else(|| missing(ordinal))?;
                record::check(v, ordinal, len)?;
                value.clear();
                value.extend_from_slice(v);
                Ok(())
            },
            |value| record::replace_field(value, field, &fresh, stamp),
        )
    }
}

fn missing(ordinal: u64) -> WorkloadError {
    WorkloadError::Missing {
        table: TABLE,
        key: format!("{} (record {ordinal})", String::from_utf8_lossy(&record::key(ordinal))),
    }
}

fn misplaced(key: &[u8], ordinal: u64) -> WorkloadError {
    WorkloadError::Inconsistent {
        condition: "record header",
        detail: format!(
            "the value under key {} says it is record {ordinal}, whose key is {}",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(&record::key(ordinal))
        ),
    }
}

impl<E: Engine> Workload<E> for Ycsb {
    type Worker = YcsbWorker<E::Table>;

    fn name(&self) -> &'static str {
        "ycsb"
    }

    fn kinds(&self) -> &'static [&'static str] {
        &KINDS
    }

    fn load(&self, db: &E) -> Result<(), WorkloadError> {
        if self.keys.loaded.swap(true, Ordering::AcqRel) {
            return Err(WorkloadError::Config(
                "this Ycsb has loaded a database already and holds its record count; make a new Ycsb \
                 for another database"
                    .into(),
            ));
        }
        let table = db.create_table(TABLE)?;
        let mut rng = SmallRng::seed_from_u64(self.config.seed);
        let (len, records) = (self.config.value_bytes(), self.config.records);
        let mut value = Vec::new();
        let mut first = 0;
        while first < records {
            let last = records.min(first + E::LOAD_BATCH as u64);
            let batch: Vec<(Vec<u8>, Vec<u8>)> = (first..last)
                .map(|o| {
                    record::fill(&mut value, len, o, 0, &mut rng);
                    (record::key(o), value.clone())
                })
                .collect();
            db.load(&table, &batch)?;
            first = last;
        }
        Ok(())
    }

    fn worker(&self, db: &E, thread: usize) -> Result<YcsbWorker<E::Table>, WorkloadError> {
        let stream = self.keys.streams.fetch_add(1, Ordering::Relaxed);
        let records = self.records();
        let zipf = Zipfian::with_zeta(self.config.theta, records, self.keys.zeta(records, self.config.theta));
        Ok(YcsbWorker {
            table: db.table(TABLE)?,
            rng: SmallRng::seed_from_u64(self.config.seed ^ (u64::from(stream) << 32) ^ thread as u64),
            chooser: if self.mix.latest { KeyChooser::Latest(zipf) } else { KeyChooser::Zipfian(zipf) },
            stream,
            writes: 0,
            key: Vec::with_capacity(24),
            value: Vec::with_capacity(self.config.value_bytes()),
        })
    }

    fn run_one(&self, db: &E, w: &mut YcsbWorker<E::Table>) -> Result<Outcome, WorkloadError> {
        let mut r = w.rng.gen_range(0..100);
        let mut kind = 0;
        while r >= self.mix.percent[kind] {
            r -= self.mix.percent[kind];
            kind += 1;
        }
        let records = self.records();
        let attempts = match kind {
            kind::INSERT => self.insert(db, w)?,
            _ => {
                let ordinal = w.chooser.next(&mut w.rng, records);
                match kind {
                    kind::READ => self.read(db, w, ordinal)?,
                    kind::UPDATE => self.update(db, w, ordinal)?,
                    kind::SCAN => {
                        let length = w.rng.gen_range(1..=MAX_SCAN);
                        self.scan(db, w, ordinal, length)?
                    }
                    _ => self.read_modify_write(db, w, ordinal)?,
                }
            }
        };
        Ok(Outcome { kind, attempts, rolled_back: false })
    }

    fn verify(&self, db: &E) -> Result<(), WorkloadError> {
        let records = self.records();
        let next = self.keys.next.load(Ordering::Acquire);
        if next != records {
            return Err(WorkloadError::Config(format!(
                "{} inserts have not committed; verify only after the run stopped",
                next - records
            )));
        }
        let (len, table) = (self.config.value_bytes(), db.table(TABLE)?);
        let mut count = 0u64;
        let mut expected = Vec::with_capacity(24);
        db.for_each(&table, |k, v| {
            let h = record::header(v, len)?;
            key_into(h.ordinal, &mut expected);
            if k != expected {
                return Err(misplaced(k, h.ordinal));
            }
            if h.ordinal >= records {
                return Err(WorkloadError::Inconsistent {
                    condition: "record count",
                    detail: format!(
                        "record {} exists but only {records} were loaded and inserted",
                        h.ordinal
                    ),
                });
            }
            record::full_check(v, h.ordinal, len)?;
            count += 1;
            Ok(())
        })?;
        // Every record is one of 0..records under its own key, and keys are unique: if there
        // are fewer, some are missing; find the first.
        if count < records {
            for o in 0..records {
                key_into(o, &mut expected);
                if db.read(&table, &expected, |v| Ok(v.is_none()))?.0 {
                    return Err(missing(o));
                }
            }
            return Err(WorkloadError::Inconsistent {
                condition: "record count",
                detail: format!("{count} records where {records} were loaded and inserted"),
            });
        }
        Ok(())
    }
}
