//! The log manager: reservation, publication, the writer (group commit), open and truncation.
//! README rules W1..W15 are the contract; comments cite them.

use super::{CommitWait, Damage, LogStats, OpenReport, Recovery};
use crate::error::{LogError, Result};
use crate::frame::{self, FIRST_LSN, FRAME_ROOM, HEADER};
use crate::master;
use crate::publish::{Completed, Padded, Striped};
use crate::ring::Ring;
use crate::segment::{self, FrameReader, Segments, Step};
use parking_lot::{Condvar, Mutex};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use swizzledb_io::{OpenMode, OsFs, Vfs};
use swizzledb_sync::Lsn;

/// How to open a log.
#[derive(Clone, Debug)]
pub struct LogConfig {
    /// The directory of the segment files and the master record; created if missing.
    pub dir: PathBuf,
    /// Bytes per segment file (W1): a multiple of 8 between 4 KiB and 1 GiB. A log must always be
    /// opened with the segment size it was created with. Default 16 MiB.
    pub segment_bytes: u64,
    /// Bytes of the in-memory ring buffer (W4): a multiple of 8, at least 4 KiB. Default 4 MiB.
    pub buffer_bytes: usize,
    /// How often the background flusher makes the completed prefix durable (for asynchronous
    /// commit, W6); `None` runs no flusher. Default 5 ms.
    pub flush_interval: Option<Duration>,
    /// The file system all I/O goes through. Default [`OsFs`].
    pub vfs: Arc<dyn Vfs>,
    /// What `open` does with damage in the durable log (W8). Default [`Recovery::Strict`].
    pub recovery: Recovery,
    /// How many segment files truncation keeps as spares for new segments to reuse (W15); 0
    /// removes every truncated segment. Default 4.
    pub spare_segments: usize,
    /// How a committer waits for its sync round (W6 steps 6 and 7). Default
    /// [`CommitWait::Adaptive`].
    pub commit_wait: CommitWait,
}

impl LogConfig {
    /// The default configuration for a log in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> LogConfig {
        LogConfig {
            dir: dir.into(),
            segment_bytes: 16 << 20,
            buffer_bytes: 4 << 20,
            flush_interval: Some(Duration::from_millis(5)),
            vfs: Arc::new(OsFs),
            recovery: Recovery::Strict,
            spare_segments: 4,
            commit_wait: CommitWait::Adaptive,
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |reason: String| Err(LogError::BadConfig { reason });
        if !self.segment_bytes.is_multiple_of(HEADER) || !(4096..=1 << 30).contains(&self.segment_bytes) {
            return bad(format!(
                "segment_bytes = {} must be a multiple of 8 between 4096 and 2^30",
                self.segment_bytes
            ));
        }
        if !self.buffer_bytes.is_multiple_of(HEADER as usize) || self.buffer_bytes < 4096 {
            return bad(format!(
                "buffer_bytes = {} must be a multiple of 8 and at least 4096",
                self.buffer_bytes
            ));
        }
        if self.flush_interval == Some(Duration::ZERO) {
            return bad("flush_interval must not be zero (use None for no background flusher)".into());
        }
        Ok(())
    }

    /// The largest body this configuration accepts (W2).
    pub fn max_body(&self) -> usize {
        let by_buffer = self.buffer_bytes / 4;
        let by_segment = self.segment_bytes.saturating_sub(2 * HEADER) as usize;
        by_buffer.min(by_segment).min(frame::PAD_FLAG as usize - 1)
    }
}

#[derive(Debug, Default)]
struct Counters {
    /// Bumped by every appender: striped, so that they share no cache line (W12).
    appends: Striped,
    body_bytes: Striped,
    buffer_full_waits: AtomicU64,
    flush_requests: AtomicU64,
    flush_already_durable: AtomicU64,
    flush_led: AtomicU64,
    flush_joined: AtomicU64,
    flush_failed: AtomicU64,
    fsyncs: AtomicU64,
    background_fsyncs: AtomicU64,
    file_syncs: AtomicU64,
    segments_created: AtomicU64,
    segments_recycled: AtomicU64,
    segments_prepared: AtomicU64,
    busy_waits: AtomicU64,
}

fn bump(c: &AtomicU64, by: u64) {
    c.fetch_add(by, Ordering::Relaxed);
}

/// State owned by whoever holds the writer mutex (the leader, W6).
#[derive(Debug, Default)]
struct Writer {
    /// Segments written since their last sync.
    dirty: BTreeSet<u64>,
    /// Bytes copied out of the ring for one write-out.
    scratch: Vec<u8>,
}

/// Why a flush returned `Ok`.
enum Served {
    AlreadyDurable,
    Led,
    Joined,
}

/// The last leader's round, as the next leader's gathering reads it (W6 step 4).
#[derive(Debug, Default)]
struct Gather {
    /// `requests` when the last round started, and when it ended.
    at_start: u64,
    at_end: u64,
    /// Requests that arrived between the two last rounds' starts: about how many that round
    /// served and woke.
    served: u64,
    /// How long the last round took.
    took: Duration,
}

impl Gather {
    /// W6 step 4: the count of requests the next leader waits for, and for how long at most;
    /// `None` (no wait) when the last round served fewer than two requests.
    fn target(&self) -> Option<(u64, Duration)> {
        (self.served >= 2).then(|| (self.at_end + self.served, self.took.min(MAX_GATHER)))
    }
}

/// The longest a leader gathers before its round (W6 step 4).
const MAX_GATHER: Duration = Duration::from_millis(1);

/// W6 step 6: rounds that took at most this long are waited out by spinning, not parking. A park
/// and its wake-up cost two context switches (tens of microseconds in a virtual machine), more
/// than a whole round on a device whose syncs are that fast.
const MAX_SPIN: Duration = Duration::from_micros(50);

/// W6 step 7: the longest a crowd's keeper keeps its core awake for one round, by yielding it
/// in a loop, before it sleeps like the others; and rounds longer than this have no keeper.
const MAX_KEEP: Duration = Duration::from_millis(1);

/// W6 step 6: how long a thread that waits for a round (a follower, or a leader gathering) spins
/// before it parks: twice the last round's time when that was at most [`MAX_SPIN`] and fewer
/// other threads wait for a round (`crowd`, the leader not counted) than the machine has cores
/// besides the leader's (`slots`); otherwise not at all. A crowd parks: spinners would take
/// the cores that woken committers need, and a spinner leads a round for itself at once, where
/// the woken threads' next commits would have shared one.
fn spin_budget(last_round: Duration, crowd: usize, slots: usize) -> Duration {
    if last_round > MAX_SPIN || crowd >= slots {
        return Duration::ZERO;
    }
    (last_round * 2).min(MAX_SPIN)
}

/// W6 step 7: how long a crowd's keeper may keep its core awake — twice the last round's
/// time, capped at [`MAX_KEEP`] — when that round took at most `MAX_KEEP`, the waiters are a
/// crowd (`crowd`, as in [`spin_budget`], is at least the `slots` step 6 may spin on) and there
/// is a core besides the leader's; otherwise not at all.
fn keep_budget(last_round: Duration, crowd: usize, slots: usize) -> Duration {
    if last_round > MAX_KEEP || slots == 0 || crowd < slots {
        return Duration::ZERO;
    }
    (last_round * 2).min(MAX_KEEP)
}

/// Spins until `done` holds or `budget` passed; returns whether `done` held.
fn spin_until(budget: Duration, done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + budget;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        for _ in 0..16 {
            std::hint::spin_loop();
        }
    }
}

/// Whether a flush leader is running a round (W6 step 3).
#[derive(Debug, Default)]
struct Group {
    leading: bool,
}

/// log2 of the step of [`LogManager::end_near`] for segments of `segment_bytes`: a sixteenth of
/// a segment, between 4 KiB and 1 MiB.
fn granule_shift(segment_bytes: u64) -> u32 {
    (segment_bytes / 16).clamp(4096, 1 << 20).ilog2()
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    vfs: Arc<dyn Vfs>,
    segment_bytes: u64,
    max_body: usize,
    ring: Ring,
    /// Where the log began when opened: `next - start` bytes were reserved since.
    start: u64,
    /// The reservation point (W4 step 1), the completed prefix and its waiters (W5).
    completed: Completed,
    /// Every byte below this LSN is in a segment file (not necessarily durable). Written only
    /// under the writer mutex; the ring space below it may be reused (W4).
    written: Padded<AtomicU64>,
    /// Every record below this LSN is durable (W6): the end of the last sync round's marker, so
    /// that a round with nothing new after it does nothing. Written only under the writer mutex.
    durable: Padded<AtomicU64>,
    /// What the last sync round synced: the start of its marker, the claim the marker makes
    /// (W8). `durable()` returns this, so that the layer above (the archive) never counts on
    /// the marker itself, which is not synced and may be lost with a crash.
    synced: Padded<AtomicU64>,
    /// The first LSN still kept (moved by truncation, W9).
    oldest: AtomicU64,
    /// W12: the log's end rounded down to a multiple of `1 << granule_shift`, moved (by
    /// fetch-max) only by the reservation that crosses such a multiple: what readers that need
    /// the end only roughly read, on a line of its own, instead of `next`'s, which every append
    /// writes.
    end_near: Padded<AtomicU64>,
    /// log2 of `end_near`'s step: a sixteenth of a segment, between 4 KiB and 1 MiB.
    granule_shift: u32,
    /// The writer: held for one write-out or sync round (W6).
    writer: Padded<Mutex<Writer>>,
    /// Whether a flush leader is running a round (W6).
    group: Padded<Mutex<Group>>,
    /// Flush rounds led to their end; moved under the group mutex, and a waiter waits for it to
    /// move (W6 step 3).
    ended: Padded<AtomicU64>,
    /// `ended`'s low 32 bits, moved right after it: the word waiters sleep on, so that the
    /// leader wakes them all with one system call (W6 step 5).
    bell: Padded<AtomicU32>,
    /// Waiters that may be asleep on `bell` (counted before they look at `ended` a last time):
    /// with none, the leader makes no system call.
    sleepers: Padded<AtomicU32>,
    /// Whether a waiter keeps its core awake for the round (W6 step 7): at most one does.
    keeper: Padded<AtomicBool>,
    /// Flush requests that found their record not yet durable, ever (W6 step 4, gathering).
    requests: Padded<AtomicU64>,
    /// While a leader gathers, the count of `requests` it waits for (else 0): the request that
    /// reaches it signals `gathered`.
    gather_want: Padded<AtomicU64>,
    /// What the leader's last round saw (W6 step 4); taken only by the leader.
    gather: Padded<Mutex<Gather>>,
    gathered: Condvar,
    /// How long the last sync round led by a committer took, in nanoseconds (W6 step 6).
    last_round_ns: Padded<AtomicU64>,
    /// Threads inside `flush` past its count of requests (W6 step 3), leader included, and how
    /// many besides the leader may spin (the cores besides the leader's).
    in_flush: Padded<AtomicUsize>,
    spin_slots: usize,
    /// Segment files by start LSN. Lock order: `writer` before `files`.
    files: Mutex<Segments>,
    /// Truncated segment files kept for new segments to reuse (W15), at most `max_spares`, and
    /// the number the next one's name takes. Lock order: `files` before `spares`.
    spares: Mutex<Spares>,
    max_spares: usize,
    /// Set with the first failed write or sync (W11); `failure` holds its description.
    failed: AtomicBool,
    failure: Mutex<Option<String>>,
    /// Serializes `write_master` (one temporary file).
    master: Mutex<()>,
    /// Tells the background flusher to stop.
    stop: Mutex<bool>,
    stop_signal: Condvar,
    counters: Counters,
    /// What `open` cut (W7, W8).
    opened: OpenReport,
}

/// Spare segment files (W15): truncated segments renamed `<16 hex digits>.spare`, each file
/// handle kept open, for the next new segments to take instead of creating a file.
#[derive(Debug, Default)]
struct Spares {
    files: Vec<(PathBuf, Arc<dyn swizzledb_io::VfsFile>)>,
    next_name: u64,
}

/// A spare being prepared by the background flusher (W15): zeros written up to `done`.
struct Preparing {
    path: PathBuf,
    file: Arc<dyn swizzledb_io::VfsFile>,
    done: u64,
}

/// Bytes of zeros the background flusher writes into a spare it prepares per step (W15).
const PREPARE_CHUNK: u64 = 1 << 20;

/// What a step of preparing a spare writes (W15).
static ZEROS: [u8; PREPARE_CHUNK as usize] = [0; PREPARE_CHUNK as usize];

/// W15: the spare files a crash (or a manager dropped without `close`) left in `dir`, removed:
/// spares live only as long as one open of the log.
fn remove_spares(vfs: &dyn Vfs, dir: &Path) -> Result<()> {
    let listing = vfs.list(dir).map_err(|e| LogError::io("listing", dir, e))?;
    let mut removed = false;
    for path in listing.into_iter().filter(|p| segment::is_spare(p)) {
        vfs.remove(&path).map_err(|e| LogError::io("removing", &path, e))?;
        removed = true;
    }
    if removed {
        vfs.sync_dir(dir).map_err(|e| LogError::io("syncing directory", dir, e))?;
    }
    Ok(())
}

/// The segment files in `dir`, by start offset, each checked against `segment_bytes` (a log
/// opened with another segment size is refused, not misread).
///
/// # Errors
/// `BadConfig` for a segment that does not fit `segment_bytes`; `Io`.
fn list_segments(vfs: &dyn Vfs, dir: &Path, segment_bytes: u64) -> Result<Segments> {
    let mut files = Segments::new();
    let listing = vfs.list(dir).map_err(|e| LogError::io("listing", dir, e))?;
    for path in listing {
        let Some(start) = segment::parse_name(&path) else { continue };
        if !start.is_multiple_of(segment_bytes) {
            return Err(LogError::BadConfig {
                reason: format!(
                    "segment {} does not start at a multiple of segment_bytes = {segment_bytes}: open the log \
                     with the segment size it was created with",
                    path.display()
                ),
            });
        }
        let f = vfs.open(&path, OpenMode::EXISTING).map_err(|e| LogError::io("opening", &path, e))?;
        let len = f.len().map_err(|e| LogError::io("reading the length of", &path, e))?;
        if len > segment_bytes {
            return Err(LogError::BadConfig {
                reason: format!(
                    "segment {} holds {len} bytes, more than segment_bytes = {segment_bytes}: open the log \
                     with the segment size it was created with",
                    path.display()
                ),
            });
        }
        files.insert(start, f);
    }
    Ok(files)
}

/// The write-ahead log. See the crate documentation and README for the protocol.
#[derive(Debug)]
pub struct LogManager {
    inner: Arc<Inner>,
    /// The background flusher, until [`LogManager::stop_background`] (W16).
    flusher: Mutex<Option<JoinHandle<()>>>,
    closed: bool,
}

impl LogManager {
    /// Opens the log in `config.dir` (created if missing), finds its end (W7), cuts any torn
    /// tail, and starts the background flusher.
    ///
    /// # Errors
    /// `BadConfig` for an impossible configuration or segment files that do not match
    /// `segment_bytes`; `Corrupted` if a segment is missing or a later segment holds valid
    /// records after a damaged frame, and `DurableDamage` if a sync marker proves the damaged
    /// frame was durable (W8; with [`Recovery::PointInTime`] both cut the log instead); `Io`.
    pub fn open(config: LogConfig) -> Result<LogManager> {
        config.validate()?;
        let LogConfig {
            dir,
            segment_bytes,
            buffer_bytes,
            flush_interval,
            vfs,
            recovery,
            spare_segments,
            commit_wait,
        } = config.clone();
        let max_body = config.max_body();
        vfs.create_dir_all(&dir).map_err(|e| LogError::io("creating directory", &dir, e))?;
        remove_spares(&*vfs, &dir)?;
        let mut files = list_segments(&*vfs, &dir, segment_bytes)?;

        // W7: the end is the first frame that does not validate, scanning from the first frame
        // of the newest segment whose first frame validates: by W6 every segment before it is
        // complete on disk, so the scan reads one or two segments, not the whole log.
        let oldest = files.keys().next().map_or(FIRST_LSN, |&s| segment::first_frame(s));
        let mut scan_from = oldest;
        for &start in files.keys().rev() {
            let mut probe = FrameReader::new(files.clone(), segment_bytes, segment::first_frame(start));
            if let Step::Record { .. } | Step::Pad | Step::Mark =
                probe.next_step().map_err(|e| LogError::io("reading", &dir, e))?
            {
                scan_from = segment::first_frame(start);
                break;
            }
        }
        // W8: no segment is missing before it (a gap there is damage, not a torn tail).
        let starts: Vec<u64> =
            files.range(..=segment::start_of(scan_from, segment_bytes)).map(|(&s, _)| s).collect();
        if let Some(w) = starts.windows(2).find(|w| w[1] != w[0] + segment_bytes) {
            return Err(LogError::Corrupted {
                lsn: Lsn(w[0] + segment_bytes),
                reason: format!(
                    "segment {} is missing, yet the later segment {} holds valid records",
                    segment::file_name(w[0] + segment_bytes),
                    segment::file_name(w[1])
                ),
            });
        }
        let mut reader = FrameReader::new(files.clone(), segment_bytes, scan_from);
        let bad_reason = loop {
            match reader.next_step().map_err(|e| LogError::io("reading", &dir, e))? {
                Step::Record { .. } | Step::Pad | Step::Mark => {}
                Step::Invalid { reason } => break reason,
            }
        };
        let end = reader.pos();
        let end_seg = segment::start_of(end, segment_bytes);

        // W8: a later segment whose first frame validates means damage in the middle.
        let mut later_valid = None;
        for (&start, _) in files.range(end_seg + 1..) {
            let mut probe = FrameReader::new(files.clone(), segment_bytes, segment::first_frame(start));
            if let Step::Record { .. } | Step::Pad | Step::Mark =
                probe.next_step().map_err(|e| LogError::io("reading", &dir, e))?
            {
                later_valid = Some(start);
                break;
            }
        }
        if let (Some(start), Recovery::Strict) = (later_valid, recovery) {
            return Err(LogError::Corrupted {
                lsn: Lsn(end),
                reason: format!(
                    "the frame there does not validate ({bad_reason}), yet the later segment {} holds valid \
                     records",
                    segment::file_name(start)
                ),
            });
        }
        // W8: a valid sync marker beyond the end witnessing a durable point above it means the
        // bad frame had been synced: damage in the durable log, not a torn tail.
        let beyond = reader.search_beyond(end).map_err(|e| LogError::io("reading", &dir, e))?;
        let proven = beyond.durable.max(later_valid.unwrap_or(0));
        let damage = (proven > end).then(|| Damage {
            lsn: Lsn(end),
            durable: Lsn(proven),
            records_beyond: beyond.records,
            bytes_beyond: beyond.end.saturating_sub(end),
            reason: bad_reason,
        });
        let mut opened = OpenReport::default();
        let mut end = end;
        match (damage, recovery) {
            (Some(d), Recovery::Strict) => return Err(LogError::DurableDamage(Box::new(d))),
            (Some(d), Recovery::PointInTime) => {
                end = cut_damage(&*vfs, &dir, &mut files, segment_bytes, d.lsn.0, beyond.last_segment)?;
                opened.damage = Some(d);
            }
            (None, _) => {
                opened.torn_bytes = cut_tail(&*vfs, &dir, &mut files, segment_bytes, end, beyond.dirty_end)?;
            }
        }
        // W13: the end segment allocated whole again, after the cut (zeros never validate, W2).
        let end_seg = segment::start_of(end, segment_bytes);
        if let Some(f) = files.get(&end_seg) {
            let path = segment::path(&dir, end_seg);
            f.allocate(0, segment_bytes).map_err(|e| LogError::io("allocating", &path, e))?;
        }

        let shift = granule_shift(segment_bytes);
        let inner = Arc::new(Inner {
            dir,
            vfs,
            segment_bytes,
            max_body,
            ring: Ring::new(buffer_bytes),
            start: end,
            completed: Completed::new(end),
            written: Padded(AtomicU64::new(end)),
            durable: Padded(AtomicU64::new(end)),
            synced: Padded(AtomicU64::new(end)),
            oldest: AtomicU64::new(oldest.min(end)),
            end_near: Padded(AtomicU64::new(end >> shift << shift)),
            granule_shift: shift,
            writer: Padded(Mutex::new(Writer::default())),
            group: Padded(Mutex::new(Group::default())),
            ended: Padded(AtomicU64::new(0)),
            bell: Padded(AtomicU32::new(0)),
            sleepers: Padded(AtomicU32::new(0)),
            keeper: Padded(AtomicBool::new(false)),
            requests: Padded(AtomicU64::new(0)),
            gather_want: Padded(AtomicU64::new(0)),
            gather: Padded(Mutex::new(Gather::default())),
            gathered: Condvar::new(),
            last_round_ns: Padded(AtomicU64::new(u64::MAX)),
            in_flush: Padded(AtomicUsize::new(0)),
            spin_slots: match commit_wait {
                CommitWait::Adaptive => std::thread::available_parallelism().map_or(1, |n| n.get()) - 1,
                // No core to spin on: steps 6 and 7 never wait awake.
                CommitWait::Sleep => 0,
            },
            files: Mutex::new(files),
            spares: Mutex::new(Spares::default()),
            max_spares: spare_segments,
            failed: AtomicBool::new(false),
            failure: Mutex::new(None),
            master: Mutex::new(()),
            stop: Mutex::new(false),
            stop_signal: Condvar::new(),
            counters: Counters::default(),
            opened,
        });
        let flusher = match flush_interval {
            None => None,
            Some(interval) => {
                let inner = Arc::clone(&inner);
                let handle = std::thread::Builder::new()
                    .name("swizzledb-wal-flusher".into())
                    .spawn(move || inner.background(interval))
                    .map_err(|e| LogError::io("starting the flusher thread for", PathBuf::new(), e))?;
                Some(handle)
            }
        };
        Ok(LogManager { inner, flusher: Mutex::new(flusher), closed: false })
    }

    /// Appends a record and returns its LSN (the byte offset of its frame, W3). The record is
    /// durable only after a `flush` covering it returns, or the background flusher's next round.
    ///
    /// # Errors
    /// `RecordTooLarge` (W2), `Failed` after an I/O failure (W11), or the `Io` error of a
    /// write-out this call had to run because the buffer was full.
    pub fn append(&self, body: &[u8]) -> Result<Lsn> {
        let ring = &self.inner.ring;
        self.inner.append(body.len(), |lsn| ring.store_frame(lsn, frame::record_header(lsn, body), body))
    }

    /// [`LogManager::append`] of the body `frame[FRAME_ROOM..]`; the log writes over the
    /// [`FRAME_ROOM`] bytes in front of it. The record is the same; its checksum is computed
    /// in one pass over the frame's bytes instead of two (W2), which for the short bodies of
    /// most records is most of the checksum's cost.
    ///
    /// # Errors
    /// As [`LogManager::append`]; `NoFrameRoom` if `frame` is shorter than [`FRAME_ROOM`].
    pub fn append_framed(&self, frame: &mut [u8]) -> Result<Lsn> {
        if frame.len() < FRAME_ROOM {
            return Err(LogError::NoFrameRoom { len: frame.len(), room: FRAME_ROOM });
        }
        let ring = &self.inner.ring;
        self.inner.append(frame.len() - FRAME_ROOM, |lsn| {
            let header = frame::record_header_in_room(lsn, frame);
            ring.store_frame(lsn, header, &frame[FRAME_ROOM..]);
        })
    }

    /// Returns when every record with an LSN `<= lsn` is durable (W6). `Lsn(0)` ("never logged")
    /// returns at once.
    ///
    /// # Errors
    /// `NotAppended` if `lsn` is at or beyond `end()`; `Failed`/`Io` (W11).
    pub fn flush(&self, lsn: Lsn) -> Result<()> {
        self.inner.flush(lsn, true)
    }

    /// [`LogManager::flush`] for a caller that holds what other threads may need (a page
    /// latch, for the write-ahead rule): if it becomes the leader, its round starts without
    /// gathering (W6 step 4).
    ///
    /// # Errors
    /// As [`LogManager::flush`].
    pub fn flush_urgent(&self, lsn: Lsn) -> Result<()> {
        self.inner.flush(lsn, false)
    }

    /// Makes every record appended before this call durable.
    ///
    /// # Errors
    /// `Failed`/`Io` (W11).
    pub fn flush_all(&self) -> Result<()> {
        self.inner.flush_all()
    }

    /// The durable horizon: the record at `l` is durable iff `l < durable()`. It is where the
    /// last sync round's marker starts (W8): every byte below it is synced.
    pub fn durable(&self) -> Lsn {
        Lsn(self.inner.synced.load(Ordering::Acquire))
    }

    /// Whether the log has failed for good (W11): every append and flush from now on returns
    /// `Failed`, so a caller waiting for the log to change (to shrink, to become durable) has
    /// nothing to wait for.
    pub fn is_failed(&self) -> bool {
        self.inner.failed.load(Ordering::Acquire)
    }

    /// The LSN the next append would get if it fits in the current segment (a lower bound).
    pub fn end(&self) -> Lsn {
        Lsn(self.inner.completed.next().load(Ordering::Acquire))
    }

    /// [`LogManager::end`] rounded down to a multiple of [`LogManager::end_granule`]: never
    /// above it, only growing, and about a granule below it at most (more only while the
    /// reservation that crossed a granule's end has not moved it yet, W12). It is read from a cache line that
    /// only a reservation crossing a granule's end writes, where `end` reads the reservation
    /// point, which every append writes: for checks made often that need the end only
    /// roughly, such as whether the log is over a bound of many granules.
    pub fn end_near(&self) -> Lsn {
        Lsn(self.inner.end_near.load(Ordering::Acquire))
    }

    /// The step of [`LogManager::end_near`]: a sixteenth of a segment, between 4 KiB and 1 MiB,
    /// a power of two.
    pub fn end_granule(&self) -> u64 {
        1 << self.inner.granule_shift
    }

    /// The first LSN still kept: records below it were truncated (W9).
    pub fn oldest(&self) -> Lsn {
        Lsn(self.inner.oldest.load(Ordering::Acquire))
    }

    /// What `open` found at the end of the log and cut: a torn tail (W7), or with
    /// [`Recovery::PointInTime`] damage in the durable log (W8).
    pub fn opened(&self) -> &OpenReport {
        &self.inner.opened
    }

    /// The largest body `append` accepts (W2).
    pub fn max_body(&self) -> usize {
        self.inner.max_body
    }

    /// The size of this log's segment files, fixed when the log was created.
    pub fn segment_bytes(&self) -> u64 {
        self.inner.segment_bytes
    }

    /// The body of the record at `lsn`. A record not yet in a segment file is written out first
    /// (not synced), then read from its file.
    ///
    /// # Errors
    /// `NotAppended`, `Truncated`, `NotARecord` (no record starts there), `Io`, or `Failed` if a
    /// write-out was needed after a failure.
    pub fn read(&self, lsn: Lsn) -> Result<Vec<u8>> {
        self.inner.read(lsn)
    }

    /// Iterates over the records from `from` (a record's LSN, or `Lsn(0)` for the oldest) to the
    /// end of the log as it is when `scan` is called, in LSN order.
    ///
    /// # Errors
    /// `Truncated` if `from` was truncated, `NotAppended` beyond the end, `Failed`/`Io` if the
    /// write-out of the buffered tail fails. Items are `NotARecord` if `from` is not a record's
    /// LSN and `Corrupted` for a damaged frame later on.
    pub fn scan(&self, from: Lsn) -> Result<LogScan> {
        self.inner.scan(from)
    }

    /// W14: ends the newest segment with padding, so that the next record starts the next
    /// segment, and a checkpoint written then lets [`LogManager::truncate_before`] remove every
    /// older segment: a clean close keeps one small segment instead of a full one. Everything
    /// appended before is made durable first. Returns whether it sealed: not when the newest
    /// segment holds no frame yet, nor when an append raced it (the caller then keeps a full
    /// segment, as before).
    ///
    /// # Errors
    /// Those of [`LogManager::flush_all`]; `Io` (sticky, W11) from writing or syncing the
    /// padding.
    pub fn seal_segment(&self) -> Result<bool> {
        self.inner.seal_segment()
    }

    /// Removes every segment file that holds only records below `min(lsn, durable())`, except
    /// the newest segment file (W9).
    ///
    /// # Errors
    /// `Io` if a removal fails (not sticky: nothing durable is lost).
    pub fn truncate_before(&self, lsn: Lsn) -> Result<()> {
        self.inner.truncate_before(lsn)
    }

    /// Fails the log for good (W11) on the caller's word: for a caller that already made a change
    /// whose record the log refused, so that nothing after it may become durable or be written.
    pub fn poison(&self, reason: &str) {
        let _ = self.inner.fail(LogError::Failed { cause: reason.to_owned() });
    }

    /// Makes `lsn` durable (if it is a record) and stores it as the master record, atomically
    /// (W10).
    ///
    /// # Errors
    /// Those of `flush`, and `Io` from writing the record; a failed write or sync (of the
    /// file or of its directory) fails the log, as any other does (W11).
    pub fn write_master(&self, lsn: Lsn) -> Result<()> {
        if lsn.0 != 0 {
            self.flush_urgent(lsn)?;
        }
        let _one = self.inner.master.lock();
        master::write(&*self.inner.vfs, &self.inner.dir, lsn).map_err(|e| self.inner.fail_if_written(e))
    }

    /// Stores `lsn` durably under `name` in the log directory, replacing the previous value
    /// atomically, as the master record is (W10): an LSN the layer above keeps across restarts
    /// (the decoupled page cleaner's progress).
    ///
    /// # Errors
    /// `Io` from writing, syncing or renaming (a failed write or sync fails the log, W11);
    /// `BadConfig` for a name that is not a plain file name or is one of the log's own.
    pub fn write_named_lsn(&self, name: &str, lsn: Lsn) -> Result<()> {
        check_name(name)?;
        let _one = self.inner.master.lock();
        master::write_named(&*self.inner.vfs, &self.inner.dir, name, lsn)
            .map_err(|e| self.inner.fail_if_written(e))
    }

    /// The LSN stored under `name` by [`LogManager::write_named_lsn`], or `None`.
    ///
    /// # Errors
    /// `Io`; `MasterCorrupted` naming the file if it is damaged; `BadConfig` as for writing.
    pub fn read_named_lsn(&self, name: &str) -> Result<Option<Lsn>> {
        check_name(name)?;
        master::read_named(&*self.inner.vfs, &self.inner.dir, name)
    }

    /// The master record, or `None` if none was ever written.
    ///
    /// # Errors
    /// `MasterCorrupted`, `Io`.
    pub fn read_master(&self) -> Result<Option<Lsn>> {
        master::read(&*self.inner.vfs, &self.inner.dir)
    }

    /// Removes the master record (W10), for a layer above that finds its last checkpoint in
    /// the log itself without it: the engine's clean close, after which the log's one segment
    /// holds that checkpoint and little else (RECOVERY.md R25).
    ///
    /// # Errors
    /// I/O errors removing it or syncing the directory.
    pub fn remove_master(&self) -> Result<()> {
        let _one = self.inner.master.lock();
        master::remove(&*self.inner.vfs, &self.inner.dir)
    }

    /// The activity counters.
    pub fn stats(&self) -> LogStats {
        let c = &self.inner.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LogStats {
            appends: c.appends.sum(),
            body_bytes: c.body_bytes.sum(),
            log_bytes: self.inner.completed.next().load(Ordering::Acquire) - self.inner.start,
            buffer_full_waits: l(&c.buffer_full_waits),
            flush_requests: l(&c.flush_requests),
            flush_already_durable: l(&c.flush_already_durable),
            flush_led: l(&c.flush_led),
            flush_joined: l(&c.flush_joined),
            flush_failed: l(&c.flush_failed),
            fsyncs: l(&c.fsyncs),
            background_fsyncs: l(&c.background_fsyncs),
            file_syncs: l(&c.file_syncs),
            segments_created: l(&c.segments_created),
            segments_recycled: l(&c.segments_recycled),
            segments_prepared: l(&c.segments_prepared),
            busy_waits: l(&c.busy_waits),
        }
    }

    /// Stops the background flusher and makes every appended record durable.
    ///
    /// # Errors
    /// Those of `flush_all`.
    pub fn close(mut self) -> Result<()> {
        self.stop_background();
        self.closed = true;
        self.trim()
    }

    /// Makes every appended record durable, then cuts the newest segment's file to the log's
    /// end and syncs it (W13), giving back the space allocated beyond the end: for a clean close.
    /// The log stays usable; its file grows again with the next writes. Only the log's one
    /// writer may call it: a log manager still alive after another opened the same directory
    /// would cut that one's records (so `Drop` does not trim).
    ///
    /// # Errors
    /// Those of `flush_all`, or the cut's I/O error.
    pub fn trim(&self) -> Result<()> {
        self.inner.flush_all()?;
        self.inner.trim_tail()
    }

    /// Stops the background flusher and waits for it to end (W16): from then on the log
    /// writes only when asked (`flush`, `flush_all`, a full buffer), so an owner that shares the
    /// log with handles that may outlive it can stop every write of its own accord. A spare
    /// segment the flusher was preparing is removed (W15). Idempotent; `close` and drop call it.
    pub fn stop_background(&self) {
        // Taken out first: the join happens without the mutex, and a second caller finds none.
        let handle = self.flusher.lock().take();
        if let Some(handle) = handle {
            *self.inner.stop.lock() = true;
            self.inner.stop_signal.notify_all();
            // The flusher never panics on I/O errors; a panic there is a bug worth surfacing.
            handle.join().expect("the log flusher thread panicked");
        }
    }

    /// Whether the background flusher still runs (W16).
    #[must_use]
    pub fn background_running(&self) -> bool {
        self.flusher.lock().is_some()
    }
}

impl Drop for LogManager {
    /// Stops the flusher and flushes best-effort; use [`LogManager::close`] to see errors.
    fn drop(&mut self) {
        self.stop_background();
        if !self.closed {
            let _ = self.inner.flush_all();
        }
    }
}

impl Inner {
    #[inline]
    fn check_failed(&self) -> Result<()> {
        if self.failed.load(Ordering::Acquire) {
            return Err(self.failed_error());
        }
        Ok(())
    }

    #[cold]
    fn failed_error(&self) -> LogError {
        LogError::Failed { cause: self.failure.lock().clone().unwrap_or_default() }
    }

    /// W11 for the master record and the other LSN files (W10): a failed write or sync of one,
    /// or of the directory after its rename, fails the log; a failed removal, creation or
    /// rename of the temporary file leaves it as it was and is returned alone. The step is told
    /// by the `op` that `master::write_named` names it with.
    fn fail_if_written(&self, err: LogError) -> LogError {
        match err {
            LogError::Io { op: "writing" | "syncing" | "syncing directory", .. } => self.fail(err),
            err => err,
        }
    }

    /// Records the first write/sync failure (W11). A waiter for the completed prefix sees it at
    /// its next look (W5).
    fn fail(&self, err: LogError) -> LogError {
        {
            let mut f = self.failure.lock();
            if f.is_none() {
                *f = Some(err.to_string());
            }
        }
        self.failed.store(true, Ordering::SeqCst);
        err
    }

    /// Appends a record whose body is `len` bytes long: `store` fills the frame reserved at
    /// the LSN it is given and publishes it (W4 steps 2 and 3, with no lock held: the words,
    /// then the header word last, W5).
    #[inline]
    fn append(&self, len: usize, store: impl FnOnce(u64)) -> Result<Lsn> {
        self.check_failed()?;
        if len > self.max_body {
            return Err(LogError::RecordTooLarge { len, max: self.max_body });
        }
        let (start, end) = self.reserve_frame(frame::frame_len(len), |end| self.await_room(end))?;
        // Counted before the copy: the counters' read-modify-writes would wait for the copy's
        // stores to leave the store buffer, which a lap of the ring has made slow (W5).
        self.counters.appends.add(1);
        self.counters.body_bytes.add(len as u64);
        debug_assert_eq!(end - start, frame::frame_len(len));
        store(start);
        Ok(Lsn(start))
    }

    /// W4 step 1: reserves `[pos, end)` for a frame of `flen` bytes by a fetch-and-add of
    /// `next`, which never fails and never retries, then waits for room in the ring (`room`:
    /// an appender's, or the writer's for a sync marker). A range that crosses its segment's
    /// end becomes two padding frames, one on each side of the end, published at once, and the
    /// frame takes the next reservation (W1).
    fn reserve_frame(&self, flen: u64, mut room: impl FnMut(u64) -> Result<()>) -> Result<(u64, u64)> {
        loop {
            let pos = self.completed.next().fetch_add(flen, Ordering::AcqRel);
            let end = pos + flen;
            self.passed(pos, end);
            room(end)?;
            let seg_end = segment::start_of(pos, self.segment_bytes) + self.segment_bytes;
            if end <= seg_end {
                return Ok((pos, end));
            }
            // Published from the end back (W5): a walk that sees the first padding sees the
            // second.
            for (at, to) in [(seg_end, end), (pos, seg_end)] {
                self.ring.zero(at + HEADER, to - at - HEADER);
                self.ring.store_frame(at, frame::pad_header(at, to - at), &[]);
            }
        }
    }

    /// W12: a reservation moved the reservation point from `pos` to `end`; if that crossed a
    /// granule's end, `end_near` moves to the last one crossed.
    #[inline]
    fn passed(&self, pos: u64, end: u64) {
        if (pos ^ end) >> self.granule_shift != 0 {
            self.end_near.fetch_max(end >> self.granule_shift << self.granule_shift, Ordering::AcqRel);
        }
    }

    /// W4: waits until the ring has room for the reserved range ending at `end`, making room
    /// (below). The reservation is held meanwhile: every reservation before it is published
    /// or waits for less room, so the oldest one always gets its room (its predecessors are
    /// all published, and a range is at most half the ring). An error is a failed log (W11),
    /// which nothing waits on.
    fn await_room(&self, end: u64) -> Result<()> {
        let cap = self.ring.capacity();
        while end.saturating_sub(self.written.load(Ordering::Acquire)) > cap {
            bump(&self.counters.buffer_full_waits, 1);
            self.make_room(end)?;
        }
        Ok(())
    }

    /// The ring is full (W4) for an appender holding a reservation: write out the completed
    /// prefix, or wait until there is one. The appender never blocks on the writer mutex: its
    /// holder may be a sync round waiting for this very reservation to be published (W6), so
    /// when the mutex is taken the appender yields and looks at the room again.
    ///
    /// The room is looked at again first: a write-out since the caller looked may have made it,
    /// and then the caller's reservation may be the oldest, which must not wait for itself.
    fn make_room(&self, end: u64) -> Result<()> {
        self.check_failed()?;
        let written = self.written.load(Ordering::Acquire);
        if end.saturating_sub(written) <= self.ring.capacity() {
            return Ok(());
        }
        if self.prefix() > written {
            let Some(mut w) = self.writer.try_lock() else {
                std::thread::yield_now();
                return Ok(());
            };
            self.check_failed()?;
            let upto = self.prefix();
            self.write_out(&mut w, upto)
        } else {
            // The oldest reservation has its room (a range is at most half the ring) and is
            // being copied; its owner publishes without waiting.
            self.wait_completed(written)
        }
    }

    /// Waits until every reservation below `lsn + 1` is published.
    fn wait_completed(&self, lsn: u64) -> Result<()> {
        Completed::wait_above(lsn, || self.prefix(), || self.failed.load(Ordering::SeqCst));
        self.check_failed()
    }

    /// The completed prefix (W5), carried over every frame published at its end.
    fn prefix(&self) -> u64 {
        self.completed.get(&self.ring, &self.written)
    }

    /// Writes ring bytes `[written, upto)` to their segment files (no sync of the last one).
    /// Caller holds the writer mutex. W6: a segment is synced before the next one gets a byte.
    fn write_out(&self, w: &mut Writer, upto: u64) -> Result<()> {
        let from = self.written.load(Ordering::Acquire);
        if upto <= from {
            return Ok(());
        }
        let mut scratch = std::mem::take(&mut w.scratch);
        scratch.clear();
        self.ring.load(from, upto, &mut scratch);
        let result = self.write_segments(w, &scratch, from, upto);
        w.scratch = scratch;
        result?;
        // The words are free again (W5), and with the release of `written` appenders may reuse
        // them: the next lap's appender, and a walk of the prefix, see them free. A walk can no
        // longer pass them, so the prefix must be past them first (the sync marker's write-out
        // is the one that passes the prefix: the writer published the marker itself).
        self.completed.advance_to(upto);
        self.ring.free(from, upto);
        self.written.store(upto, Ordering::Release);
        Ok(())
    }

    fn write_segments(&self, w: &mut Writer, bytes: &[u8], from: u64, upto: u64) -> Result<()> {
        let mut pos = from;
        while pos < upto {
            let seg = segment::start_of(pos, self.segment_bytes);
            let chunk_end = upto.min(seg + self.segment_bytes);
            if w.dirty.iter().any(|&d| d < seg) {
                self.sync_dirty(w)?;
            }
            let file = self.segment_for_write(seg)?;
            w.dirty.insert(seg);
            let path = || segment::path(&self.dir, seg);
            let chunk = &bytes[(pos - from) as usize..(chunk_end - from) as usize];
            file.write_all_at(chunk, pos - seg).map_err(|e| self.fail(LogError::io("writing", path(), e)))?;
            pos = chunk_end;
        }
        Ok(())
    }

    /// The file of segment `seg`; a new one is a spare renamed (W15), or else created and
    /// allocated whole (W13), and its directory entry synced either way.
    fn segment_for_write(&self, seg: u64) -> Result<Arc<dyn swizzledb_io::VfsFile>> {
        let mut files = self.files.lock();
        if let Some(f) = files.get(&seg) {
            return Ok(Arc::clone(f));
        }
        let path = segment::path(&self.dir, seg);
        let spare = self.spares.lock().files.pop();
        let f = match spare {
            Some((spare_path, f)) => {
                self.vfs
                    .rename(&spare_path, &path)
                    .map_err(|e| self.fail(LogError::io("renaming a spare segment to", &path, e)))?;
                bump(&self.counters.segments_recycled, 1);
                f
            }
            None => {
                let f = self
                    .vfs
                    .open(&path, OpenMode::CREATE_NEW)
                    .map_err(|e| self.fail(LogError::io("creating", &path, e)))?;
                bump(&self.counters.segments_created, 1);
                f
            }
        };
        // W13: the whole segment at once, so that its syncs write data and no length. A spare
        // that is a whole segment is allocated and written already (W15): it is not asked again,
        // since even a `fallocate` with nothing to do walks the file's pages on tmpfs. A created
        // file is empty, and a sealed spare was cut short (W14).
        if !f.len().is_ok_and(|n| n >= self.segment_bytes) {
            f.allocate(0, self.segment_bytes).map_err(|e| self.fail(LogError::io("allocating", &path, e)))?;
        }
        self.vfs
            .sync_dir(&self.dir)
            .map_err(|e| self.fail(LogError::io("syncing directory", &self.dir, e)))?;
        files.insert(seg, Arc::clone(&f));
        Ok(f)
    }

    /// W14: padding from the reservation point to its segment's end, written to the file
    /// directly (not through the ring: it may be longer than the ring), with `next`, the
    /// completed prefix, `written` and `durable` moved past it.
    fn seal_segment(&self) -> Result<bool> {
        self.flush_all()?;
        let mut w = self.writer.lock();
        self.check_failed()?;
        let pos = self.completed.next().load(Ordering::Acquire);
        let seg = segment::start_of(pos, self.segment_bytes);
        let end = seg + self.segment_bytes;
        if pos == segment::first_frame(seg) || self.prefix() != pos {
            return Ok(false);
        }
        // Reserve the padding as an append would: after this no append can take `[pos, end)`.
        if self.completed.next().compare_exchange(pos, end, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Ok(false);
        }
        self.passed(pos, end);
        // Everything below `pos` was written out by the flush; a write-out that ran since
        // stopped at `pos` (nothing else was reserved), so the ring has no bytes to give.
        self.write_out(&mut w, pos)?;
        let f = self.segment_for_write(seg)?;
        let path = segment::path(&self.dir, seg);
        let io = |what, e| self.fail(LogError::io(what, &path, e));
        // As `cut_damage` pads: the file cut to the padding header, which the reader follows to
        // the segment's end without reading further (W7).
        f.set_len(pos - seg).map_err(|e| io("truncating", e))?;
        f.write_all_at(&frame::pad_header(pos, end - pos), pos - seg).map_err(|e| io("writing", e))?;
        f.sync().map_err(|e| io("syncing", e))?;
        bump(&self.counters.file_syncs, 1);
        w.dirty.remove(&seg);
        // The prefix first: it is never below `written` (W5). The padding is not in the ring,
        // whose words are all free: everything below `pos` was written out.
        self.completed.advance_to(end);
        self.written.fetch_max(end, Ordering::AcqRel);
        self.durable.fetch_max(end, Ordering::AcqRel);
        Ok(true)
    }

    /// W13 at a clean close: the newest segment's file cut to the log's end and synced, so the
    /// zeros allocated beyond it do not stay on disk. Caller has flushed everything and is the
    /// log's one writer.
    fn trim_tail(&self) -> Result<()> {
        self.drop_spares()?;
        let end = self.completed.next().load(Ordering::Acquire);
        let seg = segment::start_of(end, self.segment_bytes);
        let Some(f) = self.files.lock().get(&seg).cloned() else { return Ok(()) };
        let path = segment::path(&self.dir, seg);
        let len = f.len().map_err(|e| LogError::io("reading the length of", &path, e))?;
        if len > end - seg {
            f.set_len(end - seg).map_err(|e| LogError::io("truncating", &path, e))?;
            f.sync().map_err(|e| LogError::io("syncing", &path, e))?;
        }
        Ok(())
    }

    fn sync_dirty(&self, w: &mut Writer) -> Result<()> {
        while let Some(&seg) = w.dirty.first() {
            let file = self.files.lock().get(&seg).cloned();
            if let Some(file) = file {
                let path = segment::path(&self.dir, seg);
                file.sync().map_err(|e| self.fail(LogError::io("syncing", path, e)))?;
                bump(&self.counters.file_syncs, 1);
            }
            w.dirty.remove(&seg);
        }
        Ok(())
    }

    /// One sync round (W6, W8): reserve a place for a sync marker at the reservation point, wait
    /// until every reservation before it is published, write them out and sync them, then write
    /// the marker (no sync) saying they are durable, and only then move `durable` past it. So
    /// every record a flush acknowledged has a valid marker after it in the file, witnessing
    /// that it was synced. Caller holds the writer. A round with nothing new since the last one
    /// does nothing.
    fn sync_round(&self, w: &mut Writer) -> Result<()> {
        if self.completed.next().load(Ordering::Acquire) <= self.durable.load(Ordering::Acquire) {
            return Ok(());
        }
        // W4 step 1 for the marker, by the writer. When the ring is full the writer makes room
        // itself, or waits for the oldest reservation, which has its room and whose owner
        // publishes without waiting for anything.
        let (pos, end) = self.reserve_frame(frame::MARK_LEN, |end| {
            while end.saturating_sub(self.written.load(Ordering::Acquire)) > self.ring.capacity() {
                bump(&self.counters.buffer_full_waits, 1);
                let written = self.written.load(Ordering::Acquire);
                let completed = self.prefix();
                if completed > written {
                    self.write_out(w, completed)?;
                } else {
                    self.wait_completed(written)?;
                }
            }
            Ok(())
        })?;
        // W5: every reservation below `pos` is published (their owners wait for nothing while
        // they copy), then written out and synced.
        self.wait_completed(pos - 1)?;
        self.write_out(w, pos)?;
        self.sync_dirty(w)?;
        // W8: the marker after the synced bytes. On an error above the place stays unpublished:
        // the log is failed (W11) and nothing more is written.
        let marker = frame::marker(pos, pos);
        let (header, body) = marker.split_at(HEADER as usize);
        self.ring.store_frame(pos, header.try_into().expect("8 bytes"), body);
        debug_assert_eq!(end - pos, frame::MARK_LEN);
        self.write_out(w, end)?;
        self.synced.fetch_max(pos, Ordering::Release);
        self.durable.fetch_max(end, Ordering::Release);
        Ok(())
    }

    fn flush(&self, lsn: Lsn, gather: bool) -> Result<()> {
        bump(&self.counters.flush_requests, 1);
        let counter = match self.flush_inner(lsn.0, gather) {
            Ok(Served::AlreadyDurable) => &self.counters.flush_already_durable,
            Ok(Served::Led) => &self.counters.flush_led,
            Ok(Served::Joined) => &self.counters.flush_joined,
            Err(e) => {
                bump(&self.counters.flush_failed, 1);
                return Err(e);
            }
        };
        bump(counter, 1);
        Ok(())
    }

    fn flush_inner(&self, lsn: u64, gather: bool) -> Result<Served> {
        self.check_failed()?;
        if lsn == 0 || self.durable.load(Ordering::Acquire) > lsn {
            return Ok(Served::AlreadyDurable);
        }
        let end = self.completed.next().load(Ordering::Acquire);
        if lsn >= end {
            return Err(LogError::NotAppended { lsn: Lsn(lsn), end: Lsn(end) });
        }
        self.wait_completed(lsn)?;
        let requests = self.requests.fetch_add(1, Ordering::SeqCst) + 1;
        self.in_flush.fetch_add(1, Ordering::Relaxed);
        let result = self.request_round(lsn, requests, gather);
        self.in_flush.fetch_sub(1, Ordering::Relaxed);
        result
    }

    /// W6 steps 3-6 for a counted request.
    fn request_round(&self, lsn: u64, requests: u64, gather: bool) -> Result<Served> {
        let want = self.gather_want.load(Ordering::SeqCst);
        if want != 0 && requests >= want {
            let _g = self.gather.lock();
            self.gathered.notify_one();
        }
        // W6: one leader at a time; the others wait for its round to end, then re-check.
        loop {
            let (ended, bell) = {
                let mut group = self.group.lock();
                if self.durable.load(Ordering::Acquire) > lsn {
                    return Ok(Served::Joined);
                }
                self.check_failed()?;
                if !group.leading {
                    group.leading = true;
                    break;
                }
                (self.ended.load(Ordering::SeqCst), self.bell.load(Ordering::SeqCst))
            };
            // Asleep without the mutex: when the round ends, every waiter wakes at once, and
            // those it covered return without taking the mutex again. Short rounds are spun out
            // first (step 6); a thread that spun them out is not counted as a sleeper, and the
            // leader makes no system call for it.
            let waiting =
                || self.ended.load(Ordering::SeqCst) == ended && self.durable.load(Ordering::Acquire) <= lsn;
            self.spin_while(&waiting);
            self.keep_awake(&waiting);
            if waiting() {
                // Counted before the last look at `ended`: a leader that moves `ended` after
                // that look finds the count, and wakes the bell it moved too.
                self.sleepers.fetch_add(1, Ordering::SeqCst);
                while waiting() {
                    atomic_wait::wait(&self.bell.0, bell);
                }
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
            }
            if self.durable.load(Ordering::Acquire) > lsn {
                return Ok(Served::Joined);
            }
        }
        let result = self.gather_then_lead(lsn, gather);
        {
            let mut group = self.group.lock();
            group.leading = false;
            self.ended.fetch_add(1, Ordering::SeqCst);
            self.bell.fetch_add(1, Ordering::SeqCst);
        }
        // Step 5: one system call wakes every sleeper, where a wake-up per thread kept the
        // leader from its own next commit for about 6 µs per waiter on a virtual machine.
        if self.sleepers.load(Ordering::SeqCst) != 0 {
            atomic_wait::wake_all(&self.bell.0);
        }
        result
    }

    /// W6 steps 4 and 5: the leader waits until the requests its last round woke are back (at
    /// most that round's time, and `MAX_GATHER`), then runs its round.
    fn gather_then_lead(&self, lsn: u64, gather: bool) -> Result<Served> {
        let mut g = self.gather.lock();
        if let Some((want, wait)) = g.target().filter(|_| gather) {
            let reached = || self.requests.load(Ordering::SeqCst) >= want;
            if wait <= MAX_SPIN && !self.spin_budget().is_zero() {
                // Step 6: a short wait is spun, without the mutex (only the leader changes
                // `Gather`) and without `gather_want`, so no request has to signal.
                bump(&self.counters.busy_waits, 1);
                parking_lot::MutexGuard::unlocked(&mut g, || spin_until(wait, reached));
            } else {
                let deadline = Instant::now() + wait;
                self.gather_want.store(want, Ordering::SeqCst);
                while !reached() {
                    if self.gathered.wait_until(&mut g, deadline).timed_out() {
                        break;
                    }
                }
                self.gather_want.store(0, Ordering::SeqCst);
            }
        }
        let at_start = self.requests.load(Ordering::SeqCst);
        g.served = at_start - g.at_start;
        g.at_start = at_start;
        drop(g);
        let began = Instant::now();
        let result = self.lead_round(lsn);
        let mut g = self.gather.lock();
        g.at_end = self.requests.load(Ordering::SeqCst);
        g.took = began.elapsed();
        self.last_round_ns.store(u64::try_from(g.took.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        result
    }

    /// W6 step 6: how long a waiter may spin now. Its crowd is the other threads inside
    /// `flush` past step 3's count, less one for the leader.
    fn spin_budget(&self) -> Duration {
        let (last, crowd) = self.last_round_and_crowd();
        spin_budget(last, crowd, self.spin_slots)
    }

    /// What steps 6 and 7 decide by: the last round a committer led, and the crowd.
    fn last_round_and_crowd(&self) -> (Duration, usize) {
        let last = Duration::from_nanos(self.last_round_ns.load(Ordering::Relaxed));
        (last, self.in_flush.load(Ordering::Relaxed).saturating_sub(2))
    }

    /// Spins while `waiting` holds, for at most the spin budget.
    fn spin_while(&self, waiting: &dyn Fn() -> bool) {
        let budget = self.spin_budget();
        if budget.is_zero() || !waiting() {
            return;
        }
        bump(&self.counters.busy_waits, 1);
        spin_until(budget, || !waiting());
    }

    /// W6 step 7: in a crowd (more threads wait for the round than step 6 lets spin), one of
    /// them, the keeper, yields its core in a loop while `waiting` holds, for at most twice
    /// the last round's time (capped at `MAX_KEEP`), instead of sleeping at once.
    fn keep_awake(&self, waiting: &dyn Fn() -> bool) {
        let (last, crowd) = self.last_round_and_crowd();
        let budget = keep_budget(last, crowd, self.spin_slots);
        if budget.is_zero() || !waiting() || self.keeper.swap(true, Ordering::AcqRel) {
            return;
        }
        bump(&self.counters.busy_waits, 1);
        let until = Instant::now() + budget;
        while waiting() && Instant::now() < until {
            std::thread::yield_now();
        }
        self.keeper.store(false, Ordering::Release);
    }

    /// The leader's part of W6: a sync round, unless a write-out by another path (the
    /// background flusher) covered `lsn` meanwhile.
    fn lead_round(&self, lsn: u64) -> Result<Served> {
        let mut w = self.writer.lock();
        if self.durable.load(Ordering::Acquire) > lsn {
            return Ok(Served::Joined);
        }
        self.check_failed()?;
        self.sync_round(&mut w)?;
        bump(&self.counters.fsyncs, 1);
        Ok(Served::Led)
    }

    fn flush_all(&self) -> Result<()> {
        let end = self.completed.next().load(Ordering::Acquire);
        // `end - 1` lies in the last reserved frame, so covering it covers every record.
        self.flush(Lsn(end - 1), false)
    }

    /// The background flusher's loop (W6): a round every `interval` unless a leader is busy, and
    /// a step of preparing a spare segment (W15).
    fn background(&self, interval: Duration) {
        let mut stop = self.stop.lock();
        let mut preparing: Option<Preparing> = None;
        while !*stop {
            self.stop_signal.wait_for(&mut stop, interval);
            if *stop {
                break;
            }
            parking_lot::MutexGuard::unlocked(&mut stop, || {
                if !self.failed.load(Ordering::Acquire)
                    && self.prefix() > self.durable.load(Ordering::Acquire)
                {
                    if let Some(mut w) = self.writer.try_lock() {
                        // An error is recorded by `fail` and returned to the next caller (W11).
                        if self.sync_round(&mut w).is_ok() {
                            bump(&self.counters.background_fsyncs, 1);
                        }
                    }
                }
                self.prepare_step(&mut preparing);
            });
        }
        if let Some(p) = preparing {
            // Best effort: the next open removes what is left (W15).
            let _ = self.vfs.remove(&p.path);
        }
    }

    /// W15: one step of preparing a spare ahead of need, when the log's end has passed half of
    /// its segment and no spare is waiting: a new file filled with zeros `PREPARE_CHUNK` bytes at
    /// a time, each step synced, then handed over as a spare. A failure drops the file; the next
    /// segment is then created as usual (W13), and the log is not failed.
    fn prepare_step(&self, preparing: &mut Option<Preparing>) {
        if preparing.is_none() {
            let next = self.completed.next().load(Ordering::Acquire);
            let half = next % self.segment_bytes >= self.segment_bytes / 2;
            let mut spares = self.spares.lock();
            if self.max_spares == 0
                || !half
                || !spares.files.is_empty()
                || self.failed.load(Ordering::Acquire)
            {
                return;
            }
            let path = segment::spare_path(&self.dir, spares.next_name);
            spares.next_name += 1;
            drop(spares);
            match self.vfs.open(&path, OpenMode::CREATE_NEW) {
                Ok(file) => *preparing = Some(Preparing { path, file, done: 0 }),
                Err(_) => return,
            }
        }
        let Some(p) = preparing.as_mut() else { return };
        let len = PREPARE_CHUNK.min(self.segment_bytes - p.done);
        let step = p.file.write_all_at(&ZEROS[..len as usize], p.done).and_then(|()| p.file.sync());
        if step.is_err() {
            let p = preparing.take().expect("W15: preparing");
            let _ = self.vfs.remove(&p.path);
            return;
        }
        p.done += len;
        if p.done < self.segment_bytes {
            return;
        }
        let p = preparing.take().expect("W15: preparing");
        // The directory synced before the `spares` mutex is taken: a new segment waits for it.
        let synced = self.vfs.sync_dir(&self.dir).is_ok();
        let mut spares = self.spares.lock();
        if synced && spares.files.len() < self.max_spares {
            spares.files.push((p.path, p.file));
            bump(&self.counters.segments_prepared, 1);
        } else {
            drop(spares);
            let _ = self.vfs.remove(&p.path);
        }
    }

    fn read(&self, lsn: Lsn) -> Result<Vec<u8>> {
        let end = self.completed.next().load(Ordering::Acquire);
        if lsn.0 >= end {
            return Err(LogError::NotAppended { lsn, end: Lsn(end) });
        }
        let oldest = self.oldest.load(Ordering::Acquire);
        if lsn.0 < oldest {
            return Err(LogError::Truncated { lsn, oldest: Lsn(oldest) });
        }
        if !frame::is_aligned(lsn) {
            return Err(LogError::NotARecord { lsn, reason: "frames start at multiples of 8".into() });
        }
        if self.written.load(Ordering::Acquire) <= lsn.0 {
            self.wait_completed(lsn.0)?;
            let mut w = self.writer.lock();
            self.check_failed()?;
            let upto = self.prefix();
            self.write_out(&mut w, upto)?;
        }
        let seg = segment::start_of(lsn.0, self.segment_bytes);
        let files: Segments = self.files.lock().range(seg..=seg).map(|(&s, f)| (s, Arc::clone(f))).collect();
        let mut reader = FrameReader::new(files, self.segment_bytes, lsn.0);
        match reader.next_step().map_err(|e| LogError::io("reading", segment::path(&self.dir, seg), e))? {
            Step::Record { lsn: at, body } if at == lsn.0 => Ok(body),
            Step::Record { .. } | Step::Pad => {
                Err(LogError::NotARecord { lsn, reason: "segment padding starts there".into() })
            }
            Step::Mark => Err(LogError::NotARecord { lsn, reason: "a sync marker starts there".into() }),
            Step::Invalid { reason } => Err(LogError::NotARecord { lsn, reason }),
        }
    }

    fn scan(&self, from: Lsn) -> Result<LogScan> {
        let bound = {
            let mut w = self.writer.lock();
            let upto = self.prefix();
            if self.written.load(Ordering::Acquire) < upto {
                self.check_failed()?;
                self.write_out(&mut w, upto)?;
            }
            upto
        };
        let oldest = self.oldest.load(Ordering::Acquire);
        let start = if from.0 == 0 { oldest } else { from.0 };
        if start < oldest {
            return Err(LogError::Truncated { lsn: from, oldest: Lsn(oldest) });
        }
        let end = self.completed.next().load(Ordering::Acquire);
        if start > end {
            return Err(LogError::NotAppended { lsn: from, end: Lsn(end) });
        }
        // From `start`'s segment on: a scan's handles keep older segments from being recycled
        // (W15) no more than it needs.
        let first = segment::start_of(start, self.segment_bytes);
        let files: Segments = self.files.lock().range(first..).map(|(&s, f)| (s, Arc::clone(f))).collect();
        Ok(LogScan {
            reader: FrameReader::new(files, self.segment_bytes, start),
            dir: self.dir.clone(),
            segment_bytes: self.segment_bytes,
            bound,
            first: true,
            done: false,
        })
    }

    /// W15: removes every spare file (a clean close gives their space back).
    fn drop_spares(&self) -> Result<()> {
        let mut spares = self.spares.lock();
        if spares.files.is_empty() {
            return Ok(());
        }
        while let Some((path, _)) = spares.files.pop() {
            self.vfs.remove(&path).map_err(|e| LogError::io("removing", &path, e))?;
        }
        self.vfs.sync_dir(&self.dir).map_err(|e| LogError::io("syncing directory", &self.dir, e))
    }

    fn truncate_before(&self, lsn: Lsn) -> Result<()> {
        let limit = lsn.0.min(self.synced.load(Ordering::Acquire));
        let mut files = self.files.lock();
        let Some(&newest) = files.keys().next_back() else { return Ok(()) };
        let victims: Vec<u64> =
            files.keys().copied().take_while(|&s| s != newest && s + self.segment_bytes <= limit).collect();
        if victims.is_empty() {
            return Ok(());
        }
        let mut result = Ok(());
        let mut spares = self.spares.lock();
        for &s in &victims {
            let path = segment::path(&self.dir, s);
            // W15: kept as a spare while there is room and no scan or reader holds the file
            // (the map's is then the only handle, and none can be taken once it leaves the map).
            let recycle = spares.files.len() < self.max_spares
                && files.get(&s).is_some_and(|f| Arc::strong_count(f) == 1);
            let done = if recycle {
                let spare = segment::spare_path(&self.dir, spares.next_name);
                self.vfs.rename(&path, &spare).map(|()| {
                    spares.next_name += 1;
                    let f = files.remove(&s).expect("W15: a victim is in the map");
                    spares.files.push((spare, f));
                })
            } else {
                self.vfs.remove(&path).map(|()| {
                    files.remove(&s);
                })
            };
            if let Err(e) = done {
                result = Err(LogError::io(if recycle { "recycling" } else { "removing" }, path, e));
                break;
            }
        }
        drop(spares);
        let first = *files.keys().next().expect("W9: the newest segment is never removed");
        self.oldest.fetch_max(segment::first_frame(first), Ordering::AcqRel);
        result?;
        self.vfs.sync_dir(&self.dir).map_err(|e| LogError::io("syncing directory", &self.dir, e))
    }
}

/// An iterator over `(Lsn, body)` pairs from a start LSN to the end the log had when the scan
/// was created. It holds its own handles to the segment files, so truncation does not disturb it.
#[derive(Debug)]
pub struct LogScan {
    reader: FrameReader,
    dir: PathBuf,
    segment_bytes: u64,
    bound: u64,
    first: bool,
    done: bool,
}

impl Iterator for LogScan {
    type Item = Result<(Lsn, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut pos = self.reader.pos();
        let mut step = Ok(Step::Pad);
        while let Ok(Step::Pad | Step::Mark) = step {
            pos = self.reader.pos();
            if self.done || pos >= self.bound {
                return None;
            }
            step = self.reader.next_step();
        }
        let item = match step {
            Ok(Step::Pad | Step::Mark) => unreachable!("the loop above skips padding and markers"),
            Ok(Step::Record { lsn, body }) => Ok((Lsn(lsn), body)),
            Ok(Step::Invalid { reason }) if self.first => Err(LogError::NotARecord { lsn: Lsn(pos), reason }),
            Ok(Step::Invalid { reason }) => Err(LogError::Corrupted { lsn: Lsn(pos), reason }),
            Err(e) => Err(LogError::io(
                "reading",
                segment::path(&self.dir, segment::start_of(pos, self.segment_bytes)),
                e,
            )),
        };
        self.first = false;
        self.done = item.is_err();
        Some(item)
    }
}

/// W7: cuts the torn tail at `end` (the end segment's length set to `end - start`, synced, and
/// the segment before it synced) and removes every later segment file. `dirty_end` is the end
/// of the last bytes beyond `end` that are not zero: a tail of nothing but the zeros allocated
/// there (W13) is left as it is. Returns the torn bytes, `dirty_end - end`.
fn cut_tail(
    vfs: &dyn Vfs,
    dir: &Path,
    files: &mut Segments,
    segment_bytes: u64,
    end: u64,
    dirty_end: u64,
) -> Result<u64> {
    let end_seg = segment::start_of(end, segment_bytes);
    if let Some(f) = files.get(&end_seg) {
        let path = segment::path(dir, end_seg);
        let keep = end - end_seg;
        let len = f.len().map_err(|e| LogError::io("reading the length of", &path, e))?;
        if len > keep && dirty_end > end {
            f.set_len(keep).map_err(|e| LogError::io("truncating", &path, e))?;
        }
        f.sync().map_err(|e| LogError::io("syncing", &path, e))?;
    }
    if let Some(prev) = end_seg.checked_sub(segment_bytes) {
        if let Some(f) = files.get(&prev) {
            let path = segment::path(dir, prev);
            f.sync().map_err(|e| LogError::io("syncing", &path, e))?;
        }
    }
    let later: Vec<u64> = files.range(end_seg + 1..).map(|(&s, _)| s).collect();
    for &start in &later {
        let path = segment::path(dir, start);
        vfs.remove(&path).map_err(|e| LogError::io("removing", &path, e))?;
        files.remove(&start);
    }
    if !later.is_empty() {
        vfs.sync_dir(dir).map_err(|e| LogError::io("syncing directory", dir, e))?;
    }
    Ok(dirty_end.saturating_sub(end))
}

/// W8 with [`Recovery::PointInTime`]: ends the log at the damaged frame `at` without letting
/// LSNs go back (W3): the frames dropped may be named by pages the layer above wrote, so new
/// records start after the last segment holding a valid frame beyond the damage (`last`).
/// Padding fills the rest of `at`'s segment (the file cut to the padding header), and every
/// segment up to `last` becomes one padding frame; later segment files are removed. The highest
/// segment is padded first, each synced before the next: a crash in between leaves the damage
/// in place (a scan reaching it fails with `Corrupted`), never dropped records coming back.
/// Returns the new end: the start of the segment after `last`.
fn cut_damage(
    vfs: &dyn Vfs,
    dir: &Path,
    files: &mut Segments,
    segment_bytes: u64,
    at: u64,
    last: Option<u64>,
) -> Result<u64> {
    let at_seg = segment::start_of(at, segment_bytes);
    let last = last.unwrap_or(at_seg).max(at_seg);
    let mut dir_changed = false;
    let pad = |f: &Arc<dyn swizzledb_io::VfsFile>, seg: u64, from: u64| -> Result<()> {
        let path = segment::path(dir, seg);
        f.set_len(from - seg).map_err(|e| LogError::io("truncating", &path, e))?;
        let header = frame::pad_header(from, seg + segment_bytes - from);
        f.write_all_at(&header, from - seg).map_err(|e| LogError::io("writing", &path, e))?;
        f.sync().map_err(|e| LogError::io("syncing", &path, e))
    };
    let mut seg = last;
    loop {
        let f = match files.get(&seg) {
            Some(f) => Arc::clone(f),
            None => {
                let path = segment::path(dir, seg);
                let f =
                    vfs.open(&path, OpenMode::CREATE_NEW).map_err(|e| LogError::io("creating", &path, e))?;
                vfs.sync_dir(dir).map_err(|e| LogError::io("syncing directory", dir, e))?;
                files.insert(seg, Arc::clone(&f));
                f
            }
        };
        pad(&f, seg, if seg == at_seg { at } else { segment::first_frame(seg) })?;
        if seg == at_seg {
            break;
        }
        seg -= segment_bytes;
    }
    let later: Vec<u64> = files.range(last + 1..).map(|(&s, _)| s).collect();
    for &start in &later {
        let path = segment::path(dir, start);
        vfs.remove(&path).map_err(|e| LogError::io("removing", &path, e))?;
        files.remove(&start);
        dir_changed = true;
    }
    if dir_changed {
        vfs.sync_dir(dir).map_err(|e| LogError::io("syncing directory", dir, e))?;
    }
    Ok(last + segment_bytes)
}

/// A name [`LogManager::write_named_lsn`] may use: a plain file name, not the log's own.
fn check_name(name: &str) -> Result<()> {
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain || name == master::FILE || name.ends_with("log") {
        return Err(LogError::BadConfig {
            reason: format!("{name:?} is not a name the log can keep an LSN under"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod gather_tests {
    use super::*;

    /// W6 step 4: a leader waits for as many requests as its last round served, counted from
    /// that round's end, for at most that round's time and `MAX_GATHER`; a round that served
    /// one request (a single committer) makes the next leader not wait at all.
    #[test]
    fn w6_the_leader_gathers_the_requests_its_last_round_woke() {
        let g = |served, took| Gather { at_start: 90, at_end: 100, served, took };
        assert_eq!(g(0, Duration::from_millis(5)).target(), None);
        assert_eq!(g(1, Duration::from_millis(5)).target(), None, "one committer never waits");
        assert_eq!(g(2, Duration::from_micros(300)).target(), Some((102, Duration::from_micros(300))));
        assert_eq!(g(16, Duration::from_secs(1)).target(), Some((116, MAX_GATHER)), "capped");
    }

    /// W6 step 6: a waiter spins for twice a short last round, capped at `MAX_SPIN`; never
    /// after a slow round, before any round ran, or when every core besides the leader's
    /// already has a spinner.
    #[test]
    fn w6_waiters_spin_out_short_rounds_on_free_cores_only() {
        let us = Duration::from_micros;
        assert_eq!(spin_budget(us(5), 0, 1), us(10));
        assert_eq!(spin_budget(us(40), 0, 15), MAX_SPIN, "capped");
        assert_eq!(spin_budget(us(51), 0, 15), Duration::ZERO, "a slow round parks");
        assert_eq!(spin_budget(Duration::from_nanos(u64::MAX), 0, 15), Duration::ZERO, "no round yet");
        assert_eq!(spin_budget(us(5), 1, 1), Duration::ZERO, "the one free core is taken");
        assert_eq!(spin_budget(us(5), 0, 0), Duration::ZERO, "one core: the leader's");
        assert!(spin_until(us(100), || true));
        assert!(!spin_until(us(100), || false));
    }

    /// W6 steps 6 and 7 with `CommitWait::Sleep`: no core counts as free, so a short last
    /// round gives no spin and a crowd no keeper; adaptive waiting on the same log state gives
    /// both wherever the machine has a core besides the leader's.
    #[test]
    fn w6_sleeping_committers_get_no_time_to_wait_awake() {
        for wait in [CommitWait::Sleep, CommitWait::Adaptive] {
            let config = LogConfig {
                flush_interval: None,
                vfs: Arc::new(swizzledb_io::MemFs::new()),
                commit_wait: wait,
                ..LogConfig::new("/log")
            };
            let log = LogManager::open(config).unwrap();
            let inner = &log.inner;
            inner.last_round_ns.store(10_000, Ordering::Relaxed);
            // The leader and one waiter: no crowd, step 6's case.
            inner.in_flush.store(2, Ordering::Relaxed);
            let spin = inner.spin_budget();
            // Sixteen more waiters: a crowd, step 7's case.
            inner.in_flush.store(18, Ordering::Relaxed);
            let (last, crowd) = inner.last_round_and_crowd();
            let keep = keep_budget(last, crowd, inner.spin_slots);
            inner.in_flush.store(0, Ordering::Relaxed);
            match wait {
                CommitWait::Sleep => {
                    assert_eq!((spin, keep), (Duration::ZERO, Duration::ZERO), "a sleeper never waits awake")
                }
                CommitWait::Adaptive if inner.spin_slots > 0 => {
                    assert_eq!(spin, Duration::from_micros(20), "twice the short round");
                    assert_eq!(keep, Duration::from_micros(20), "the crowd's keeper, twice the round");
                }
                CommitWait::Adaptive => {}
            }
            log.close().unwrap();
        }
    }

    /// W6 step 7: only a crowd keeps a core awake, for short rounds, and never the only core.
    #[test]
    fn w6_a_crowd_keeps_a_core_awake_through_short_rounds_only() {
        let us = Duration::from_micros;
        assert_eq!(keep_budget(us(130), 1, 1), us(260), "a crowd on two cores");
        assert_eq!(keep_budget(us(700), 14, 1), MAX_KEEP, "capped");
        assert_eq!(keep_budget(us(1001), 14, 1), Duration::ZERO, "a slow round: everyone sleeps");
        assert_eq!(keep_budget(Duration::from_nanos(u64::MAX), 14, 1), Duration::ZERO, "no round yet");
        assert_eq!(keep_budget(us(130), 0, 1), Duration::ZERO, "no crowd: step 6 spins, or it sleeps");
        assert_eq!(keep_budget(us(130), 14, 15), Duration::ZERO, "fewer waiters than free cores");
        assert_eq!(keep_budget(us(130), 14, 0), Duration::ZERO, "one core: the leader's");
    }
}
