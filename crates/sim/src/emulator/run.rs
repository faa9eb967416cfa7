//! The emulator itself: building and pre-loading the buffer, and the worker threads' loop
//! (README E1–E8).

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::Exp1;

use super::buffer::{Buffer, Lookup};
use super::config::{EmuConfig, EmuError};
use super::partition::Partition;
use super::spin::{spin, spins_per_us};
use crate::generate::{Component, Generator, Pattern};

/// Worker phases: accesses before [`MEASURE`] are not counted.
const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;

/// When the measured phase of [`Emulator::run`] ends.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Stop {
    /// After this many seconds.
    After(f64),
    /// When every thread has made this many measured accesses (deterministic page sequences,
    /// for tests).
    Accesses(u64),
}

/// Lock counters of one measured phase, summed over the partitions (README E8).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LockCounts {
    /// Acquisitions of the BP-Wrappers' locks (`BpStats::lock_acquisitions`).
    pub policy_acquisitions: u64,
    /// Failed non-blocking attempts of batching wrappers (`BpStats::failed_try_locks`).
    pub failed_try_locks: u64,
    /// Blocking acquisitions of the wrappers' locks that had to wait (`BpStats::blocking_waits`).
    pub policy_waits: u64,
    /// Acquisitions of the miss (eviction) locks.
    pub miss_acquisitions: u64,
    /// Acquisitions of the miss locks that had to wait.
    pub miss_waits: u64,
    /// Passes through the miss path (`evict_batch` calls), whether or not they took a miss lock
    /// (only CLOCK's do; BP-Wrapper's own lock serializes theirs).
    pub miss_passes: u64,
}

impl LockCounts {
    /// Acquisitions of every lock.
    #[must_use]
    pub fn acquisitions(&self) -> u64 {
        self.policy_acquisitions + self.miss_acquisitions
    }

    /// Blocking waits on every lock.
    #[must_use]
    pub fn waits(&self) -> u64 {
        self.policy_waits + self.miss_waits
    }

    fn minus(self, before: LockCounts) -> LockCounts {
        LockCounts {
            policy_acquisitions: self.policy_acquisitions - before.policy_acquisitions,
            failed_try_locks: self.failed_try_locks - before.failed_try_locks,
            policy_waits: self.policy_waits - before.policy_waits,
            miss_acquisitions: self.miss_acquisitions - before.miss_acquisitions,
            miss_passes: self.miss_passes - before.miss_passes,
            miss_waits: self.miss_waits - before.miss_waits,
        }
    }
}

/// What one measured phase did.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct RunResult {
    /// Page accesses, summed over the threads.
    pub accesses: u64,
    /// Accesses that found their page resident.
    pub hits: u64,
    /// Accesses that loaded their page.
    pub misses: u64,
    /// Wall-clock seconds of the measured phase.
    pub seconds: f64,
    /// Lock counters of the phase.
    pub locks: LockCounts,
}

impl RunResult {
    /// Accesses per second.
    #[must_use]
    pub fn accesses_per_sec(&self) -> f64 {
        if self.seconds > 0.0 {
            self.accesses as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Hits / accesses (0 without accesses).
    #[must_use]
    pub fn hit_ratio(&self) -> f64 {
        self.per_access(self.hits)
    }

    /// `count` per million accesses (0 without accesses).
    #[must_use]
    pub fn per_million(&self, count: u64) -> f64 {
        self.per_access(count) * 1e6
    }

    fn per_access(&self, count: u64) -> f64 {
        if self.accesses == 0 {
            0.0
        } else {
            count as f64 / self.accesses as f64
        }
    }
}

/// The pages one thread accesses (README E2).
pub enum PageStream {
    /// Zipf-distributed pages (the crate's generator).
    Zipf(Generator),
    /// A loop over the thread's own pages, those congruent to it modulo the thread count, in
    /// ascending order (all-miss mode).
    Loop {
        /// The next page.
        next: u32,
        /// The thread's lowest page (its number), where the loop wraps to.
        first: u32,
        /// The thread count: the distance between the thread's pages.
        stride: u32,
        /// D.
        pages: u32,
    },
}

impl Iterator for PageStream {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        match self {
            PageStream::Zipf(g) => g.next(),
            PageStream::Loop { next, first, stride, pages } => {
                let page = *next;
                *next = if *pages - page <= *stride { *first } else { page + *stride };
                Some(page)
            }
        }
    }
}

impl EmuConfig {
    /// The pages thread `thread` accesses, in order: Zipf over D pages seeded by the run's seed
    /// and the thread, or in all-miss mode a loop over the thread's own pages (those congruent to
    /// `thread` modulo T), starting with the first past the pre-loaded pages `0..C`.
    ///
    /// # Errors
    /// [`EmuError`] if the configuration is invalid.
    pub fn page_stream(&self, thread: usize) -> Result<PageStream, EmuError> {
        self.validate()?;
        if self.all_miss {
            // No two threads share a page, so a thread that runs ahead cannot hit pages another
            // just loaded; the pre-load holds pages 0..C (E7), so each loop starts past them.
            let stride = u32::try_from(self.threads).expect("validated: threads fit in u32");
            let first = u32::try_from(thread).expect("thread < threads");
            let past = u64::from(self.buffer_pages).div_ceil(u64::from(stride)) * u64::from(stride)
                + u64::from(first);
            let next = u32::try_from(past).ok().filter(|&p| p < self.data_pages).unwrap_or(first);
            return Ok(PageStream::Loop { next, first, stride, pages: self.data_pages });
        }
        let pattern = Pattern::single(Component::Zipf { s: self.zipf });
        let generator =
            pattern.stream(self.data_pages, thread_seed(self.seed, thread)).expect("validated: pages >= 1");
        Ok(PageStream::Zipf(generator))
    }
}

/// The seed of thread `thread`'s page stream; its compute times use another.
fn thread_seed(seed: u64, thread: usize) -> u64 {
    seed ^ (thread as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// An emulated buffer with its partitions, ready to run (README E1).
pub struct Emulator {
    pub(super) config: EmuConfig,
    pub(super) buffer: Buffer,
    pub(super) partitions: Vec<Partition>,
    phase: AtomicU8,
    /// Threads that have entered the measured phase; a timed phase starts its clock only once
    /// all have, so a thread the scheduler has not run yet cannot miss the whole phase.
    measuring: std::sync::atomic::AtomicUsize,
}

impl Emulator {
    /// Builds the buffer and its partitions and pre-loads it (E7): every frame gets a page, the
    /// hottest pages last (most recently used), so that a run starts in the steady state.
    ///
    /// # Errors
    /// [`EmuError`] if the configuration is invalid.
    pub fn new(config: &EmuConfig) -> Result<Emulator, EmuError> {
        config.validate()?;
        let n = config.effective_partitions() as u32;
        let c = config.buffer_pages;
        let mut partitions = Vec::with_capacity(n as usize);
        let mut base = 0;
        for k in 0..n {
            let capacity = c / n + u32::from(k < c % n);
            partitions.push(Partition::new(config, k as usize, base, capacity));
            base += capacity;
        }
        let emulator = Emulator {
            config: config.clone(),
            buffer: Buffer::new(config.data_pages, c),
            partitions,
            phase: AtomicU8::new(WARMUP),
            measuring: std::sync::atomic::AtomicUsize::new(0),
        };
        emulator.preload();
        Ok(emulator)
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &EmuConfig {
        &self.config
    }

    /// Partition `k` holds pages `k, k + N, k + 2N, ...`; it loads the first of them (the
    /// hottest under Zipf) into its frames, coldest first; frames left over (D < C) go onto its
    /// free lists.
    fn preload(&self) {
        let n = self.partitions.len() as u32;
        let d = self.config.data_pages;
        for (k, part) in self.partitions.iter().enumerate() {
            let k = k as u32;
            let pages_here = (d - k).div_ceil(n);
            let loaded = part.capacity.min(pages_here);
            for local in (0..loaded).rev() {
                let page = k + local * n;
                let frame = part.base + local;
                self.buffer.exclusive(frame);
                assert!(self.buffer.install(page, frame), "a fresh buffer holds no page");
                part.insert(local, page);
                self.buffer.release(frame);
            }
            for local in loaded..part.capacity {
                part.give_back(local as usize % part.lists.len(), local);
            }
            part.repl.flush();
        }
    }

    fn lock_counts(&self) -> LockCounts {
        let mut sum = LockCounts::default();
        for part in &self.partitions {
            if let Some(s) = part.repl.stats() {
                sum.policy_acquisitions += s.lock_acquisitions;
                sum.failed_try_locks += s.failed_try_locks;
                sum.policy_waits += s.blocking_waits;
            }
            let (acquisitions, waits, passes) = part.evict_lock.counts();
            sum.miss_acquisitions += acquisitions;
            sum.miss_waits += waits;
            sum.miss_passes += passes;
        }
        sum
    }

    /// Runs the threads: `warmup` seconds unmeasured, then the measured phase until `stop`.
    /// Every thread commits its queued accesses before it exits (E8).
    #[must_use]
    pub fn run(&self, warmup: f64, stop: Stop) -> RunResult {
        let spins = spins_per_us() * self.config.compute_us;
        let warmup = if warmup > 0.0 { Some(Duration::from_secs_f64(warmup)) } else { None };
        let limit = match stop {
            Stop::Accesses(n) => Some(n),
            Stop::After(_) => None,
        };
        // Starts the measured phase: snapshot, then switch. Without warm-up this happens before
        // the threads start, so the counters cover exactly their accesses.
        let measure = || {
            let snapshot = (self.lock_counts(), Instant::now());
            self.phase.store(MEASURE, Ordering::SeqCst);
            snapshot
        };
        self.phase.store(WARMUP, Ordering::SeqCst);
        self.measuring.store(0, Ordering::SeqCst);
        std::thread::scope(|s| {
            let early = warmup.is_none().then(measure);
            let workers: Vec<_> =
                (0..self.config.threads).map(|t| s.spawn(move || self.worker(t, spins, limit))).collect();
            let (before, start) = early.unwrap_or_else(|| {
                std::thread::sleep(warmup.unwrap_or_default());
                measure()
            });
            if let Stop::After(seconds) = stop {
                // Every thread makes at least one measured access: it counts itself in, then
                // accesses before it looks at the phase again.
                // (Bounded: a thread that panicked never counts itself in; join reports it.)
                let waiting = Instant::now();
                while self.measuring.load(Ordering::SeqCst) < self.config.threads
                    && waiting.elapsed() < Duration::from_secs(30)
                {
                    std::thread::yield_now();
                }
                std::thread::sleep(Duration::from_secs_f64(seconds.max(0.0)));
                self.phase.store(STOP, Ordering::SeqCst);
            }
            let mut result = RunResult::default();
            for w in workers {
                let (accesses, hits, misses) = w.join().expect("emulator worker panicked");
                result.accesses += accesses;
                result.hits += hits;
                result.misses += misses;
            }
            result.seconds = start.elapsed().as_secs_f64();
            result.locks = self.lock_counts().minus(before);
            result
        })
    }

    /// One thread's loop: access, then compute. Returns (accesses, hits, misses) of the measured
    /// phase.
    fn worker(&self, thread: usize, spins_per_access: f64, limit: Option<u64>) -> (u64, u64, u64) {
        let mut pages = self.config.page_stream(thread).expect("validated in new");
        let mut rng = SmallRng::seed_from_u64(thread_seed(self.config.seed, thread).rotate_left(17));
        let mut victims = Vec::with_capacity(self.config.reclaim.max(1));
        let (mut accesses, mut hits) = (0u64, 0u64);
        let mut measuring = false;
        loop {
            match self.phase.load(Ordering::Relaxed) {
                STOP => break,
                MEASURE if !measuring => {
                    measuring = true;
                    (accesses, hits) = (0, 0);
                    self.measuring.fetch_add(1, Ordering::SeqCst);
                }
                _ => {}
            }
            if measuring && limit == Some(accesses) {
                break;
            }
            let page = pages.next().expect("page streams are endless");
            hits += u64::from(self.access(page, &mut victims));
            accesses += 1;
            if spins_per_access > 0.0 {
                let draw: f64 = rng.sample(Exp1);
                spin((draw * spins_per_access) as u64);
            }
        }
        for part in &self.partitions {
            part.repl.flush();
        }
        if measuring {
            (accesses, hits, accesses - hits)
        } else {
            (0, 0, 0)
        }
    }

    /// Accesses `page` through the buffer; true on a hit (E5, E6).
    #[inline]
    fn access(&self, page: u32, victims: &mut Vec<u32>) -> bool {
        let n = self.partitions.len() as u32;
        let part = &self.partitions[(page % n) as usize];
        loop {
            if let Lookup::Pinned(frame) = self.buffer.lookup(page) {
                part.hit(frame - part.base);
                self.buffer.unpin(frame);
                return true;
            }
            let list = part.list_of(page / n);
            let local = part.take_frame(&self.buffer, list, victims);
            let frame = part.base + local;
            self.buffer.exclusive(frame);
            if self.buffer.install(page, frame) {
                part.insert(local, page);
                self.buffer.release(frame);
                return false;
            }
            // Another thread loaded the page first: the frame goes back, and the page is
            // looked up again.
            self.buffer.release(frame);
            part.give_back(list, local);
        }
    }
}
