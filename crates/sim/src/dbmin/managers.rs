//! The buffer managers of the DBMIN simulation (Chou & DeWitt 1986, Sec. 3.2 and 4.2) behind
//! one trait, [`BufferManager`]: DBMIN, HOT and WS (local algorithms with their own load
//! control) and RAND, FIFO and CLOCK (global algorithms without one; the simulator may put its
//! feedback controller, [`FeedbackController`], in front of them).
//!
//! A manager decides which frame holds which page and which queries may run. It does no I/O and
//! keeps no time: it answers each request with an [`Access`] telling the simulator what to read
//! or write, and it lists the pages it wants written asynchronously ([`BufferManager::drain_async_writes`]).
//! The rules it follows are DS1–DS9 of the README section "DBMIN simulator".

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{Event, FileInstance, LocalPolicy, PageRef, QueryTrace, QueryType};

/// A query of the closed system, named by its slot (`0..ncq`); a new query takes over the slot of
/// the one that completed.
pub type QueryId = usize;

/// A page of one database copy, or of one query run's temporary file: what the global buffer
/// table maps to a frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalPage {
    /// The database copy (`0..32`), chosen by the simulator from the sharing level.
    pub copy: u16,
    /// For a page of a temporary file (result, hash table), the serial number of the query run
    /// that created it, from 1: temporary files belong to one run whatever the sharing level
    /// (D8, DS19). 0 for the pages of permanent files.
    pub run: u32,
    /// The page within the copy.
    pub page: PageRef,
}

/// A buffer frame, `0..buffers`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

impl FrameId {
    fn ix(self) -> usize {
        self.0 as usize
    }
}

/// The answer to a page request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// The page is resident and readable: the query goes on.
    Hit,
    /// The page is resident but still being read into this frame: the query waits for that read.
    InTransit(FrameId),
    /// The page must be read into `frame`, which stays pinned until [`BufferManager::read_done`];
    /// if `write_back` is set, the frame's previous (dirty) page must be written first.
    Miss {
        /// The frame to read into.
        frame: FrameId,
        /// The dirty page the frame held, to be written before the read.
        write_back: Option<GlobalPage>,
    },
    /// Every candidate frame is pinned by a read in progress: retry after the next I/O completes.
    NoFrame,
    /// Memory is overcommitted: the faulting query is suspended (VMOS rule, DS6); the request is
    /// retried when the manager activates the query again.
    Suspend,
}

/// The algorithms of the study (Sec. 4.2).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// DBMIN: a locality set per file instance, predictive load control (Sec. 3.2).
    Dbmin,
    /// The hot set algorithm: an LRU pool of hot-set size per query, admission when it fits.
    Hot,
    /// Working set with two windows (10 and 15 ms of CPU time).
    Ws,
    /// Global random replacement.
    Rand,
    /// Global first-in first-out replacement.
    Fifo,
    /// Global CLOCK preferring clean pages on its first sweep.
    Clock,
}

impl Algorithm {
    /// All six, in the paper's order.
    pub const ALL: [Algorithm; 6] =
        [Algorithm::Dbmin, Algorithm::Hot, Algorithm::Ws, Algorithm::Rand, Algorithm::Fifo, Algorithm::Clock];

    /// The lower-case name used on the command line and in CSV files.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Dbmin => "dbmin",
            Algorithm::Hot => "hot",
            Algorithm::Ws => "ws",
            Algorithm::Rand => "rand",
            Algorithm::Fifo => "fifo",
            Algorithm::Clock => "clock",
        }
    }

    /// Whether the algorithm is global (no load control of its own; the feedback controller may
    /// be added).
    pub fn is_global(self) -> bool {
        matches!(self, Algorithm::Rand | Algorithm::Fifo | Algorithm::Clock)
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a buffer manager does for the simulator. Every method is called at the simulated moment
/// the query's CPU reaches the corresponding trace event (or the I/O completes).
pub trait BufferManager {
    /// A new query enters the system; `true` if it may run now, `false` if it waits until a
    /// later call returns it as activated.
    fn query_start(&mut self, q: QueryId, trace: &QueryTrace) -> bool;
    /// The query completed; its memory is released. Returns the waiting queries activated.
    fn query_end(&mut self, q: QueryId) -> Vec<QueryId>;
    /// The query opened a file instance (`ls_size`, `policy` from the trace); `false` if the
    /// query is suspended (it goes on after the open when activated).
    fn open(&mut self, q: QueryId, file: FileInstance, ls_size: u32, policy: LocalPolicy) -> bool;
    /// The query closed a file instance. Returns the waiting queries activated.
    fn close(&mut self, q: QueryId, file: FileInstance) -> Vec<QueryId>;
    /// The query references `page` through `file` at its CPU time `cpu_us`.
    fn request(
        &mut self,
        q: QueryId,
        file: FileInstance,
        page: GlobalPage,
        write: bool,
        cpu_us: u64,
    ) -> Access;
    /// The query used up its time quantum at CPU time `cpu_us`. Returns the queries activated.
    fn quantum_end(&mut self, q: QueryId, cpu_us: u64) -> Vec<QueryId>;
    /// The read into `frame` completed: the frame is no longer pinned.
    fn read_done(&mut self, frame: FrameId);
    /// A write of `page` completed: if the page is still resident it is clean now.
    fn write_done(&mut self, page: GlobalPage);
    /// Whether `page` is resident and dirty (an asynchronous write of it is still useful).
    fn needs_write(&self, page: GlobalPage) -> bool;
    /// The pages scheduled for asynchronous writing since the last call, in order.
    fn drain_async_writes(&mut self) -> Vec<GlobalPage>;
    /// The frame holding `page`, if any.
    fn frame_of(&self, page: GlobalPage) -> Option<FrameId>;
    /// The file holding `page` was dropped (query VI's hash table at its close, DS19): if the
    /// page is resident it leaves the buffer table without being written, and its frame, now
    /// empty, is the next one taken. The caller never drops a page that is being read.
    fn discard(&mut self, page: GlobalPage);
    /// The manager's counters since it was built (DS18); the global algorithms count nothing.
    fn stats(&self) -> ManagerStats {
        ManagerStats::default()
    }
}

/// Counters of a local manager's load control and free list (DS18), cumulative since the manager
/// was built; `resident` and `active` are the current values.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagerStats {
    /// New queries admitted at once.
    pub admitted: u64,
    /// New queries made to wait at their start.
    pub deferred: u64,
    /// Suspensions of an active query (DBMIN at an open, WS at a fault).
    pub suspensions: u64,
    /// Activations of a waiting query (deferred or suspended).
    pub activations: u64,
    /// Requests that found their page on the free list and took it back without I/O.
    pub reclaims: u64,
    /// Reads of a page the same query lost when it was suspended.
    pub rereads_after_suspension: u64,
    /// Reclaims from the free list of a page the same query lost when it was suspended.
    pub reclaims_after_suspension: u64,
    /// Frames now held by local sets (DBMIN's locality sets, HOT's pools, WS's working sets).
    pub resident: u64,
    /// Queries now active (admitted and not suspended).
    pub active: u64,
}

/// Builds the manager for `algorithm` over `buffers` frames. `seed` drives RAND's choices.
pub fn build(algorithm: Algorithm, buffers: u32, seed: u64) -> Box<dyn BufferManager> {
    match algorithm {
        Algorithm::Dbmin => Box::new(LocalManager::new(LocalKind::Dbmin, buffers)),
        Algorithm::Hot => Box::new(LocalManager::new(LocalKind::Hot, buffers)),
        Algorithm::Ws => Box::new(LocalManager::new(LocalKind::Ws, buffers)),
        Algorithm::Rand => Box::new(GlobalManager::new(GlobalKind::Rand, buffers, seed)),
        Algorithm::Fifo => Box::new(GlobalManager::new(GlobalKind::Fifo, buffers, seed)),
        Algorithm::Clock => Box::new(GlobalManager::new(GlobalKind::Clock, buffers, seed)),
    }
}

/// The [`BufferManager`] methods that only pass through to the manager's `frames` table, the
/// same for the global and the local managers.
macro_rules! frame_table_hooks {
    () => {
        fn read_done(&mut self, frame: FrameId) {
            self.frames.read_done(frame);
        }

        fn write_done(&mut self, page: GlobalPage) {
            self.frames.write_done(page);
        }

        fn needs_write(&self, page: GlobalPage) -> bool {
            self.frames.needs_write(page)
        }

        fn drain_async_writes(&mut self) -> Vec<GlobalPage> {
            std::mem::take(&mut self.frames.async_out)
        }

        fn frame_of(&self, page: GlobalPage) -> Option<FrameId> {
            self.frames.table.get(&page).copied()
        }
    };
}

/// The frames and the global buffer table shared by every manager.
#[derive(Debug)]
struct Frames {
    page: Vec<Option<GlobalPage>>,
    dirty: Vec<bool>,
    reading: Vec<bool>,
    write_scheduled: Vec<bool>,
    table: FxHashMap<GlobalPage, FrameId>,
    async_out: Vec<GlobalPage>,
}

impl Frames {
    fn new(n: u32) -> Frames {
        let n = n as usize;
        Frames {
            page: vec![None; n],
            dirty: vec![false; n],
            reading: vec![false; n],
            write_scheduled: vec![false; n],
            table: FxHashMap::default(),
            async_out: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.page.len()
    }

    /// The answer for a resident page.
    fn resident_access(&mut self, f: FrameId, write: bool) -> Access {
        self.dirty[f.ix()] |= write;
        if self.reading[f.ix()] {
            Access::InTransit(f)
        } else {
            Access::Hit
        }
    }

    /// Puts `page` into `f` (pinned for the read); returns the dirty page it held, if any.
    fn install(&mut self, f: FrameId, page: GlobalPage, write: bool) -> Access {
        let mut write_back = None;
        if let Some(old) = self.page[f.ix()].take() {
            self.table.remove(&old);
            if self.dirty[f.ix()] {
                write_back = Some(old);
            }
        }
        self.page[f.ix()] = Some(page);
        self.dirty[f.ix()] = write;
        self.reading[f.ix()] = true;
        self.write_scheduled[f.ix()] = false;
        self.table.insert(page, f);
        Access::Miss { frame: f, write_back }
    }

    /// Schedules an asynchronous write of the frame's page if it is dirty and none is pending.
    fn schedule_write(&mut self, f: FrameId) {
        if self.dirty[f.ix()] && !self.write_scheduled[f.ix()] {
            if let Some(p) = self.page[f.ix()] {
                self.write_scheduled[f.ix()] = true;
                self.async_out.push(p);
            }
        }
    }

    fn read_done(&mut self, f: FrameId) {
        self.reading[f.ix()] = false;
    }

    fn write_done(&mut self, page: GlobalPage) {
        if let Some(&f) = self.table.get(&page) {
            self.dirty[f.ix()] = false;
            self.write_scheduled[f.ix()] = false;
        }
    }

    fn needs_write(&self, page: GlobalPage) -> bool {
        self.table.get(&page).is_some_and(|f| self.dirty[f.ix()])
    }

    /// Forgets a dropped page without writing it (DS19); returns the frame it held, now empty.
    fn discard(&mut self, page: GlobalPage) -> Option<FrameId> {
        let f = self.table.remove(&page)?;
        self.page[f.ix()] = None;
        self.dirty[f.ix()] = false;
        self.write_scheduled[f.ix()] = false;
        Some(f)
    }
}

// ---------------------------------------------------------------------------------------------
// Global algorithms: RAND, FIFO, CLOCK.

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum GlobalKind {
    Rand,
    Fifo,
    Clock,
}

/// RAND, FIFO and CLOCK over all frames (DS8). They admit every query; load control, if any, is
/// the simulator's feedback controller.
#[derive(Debug)]
pub struct GlobalManager {
    kind: GlobalKind,
    frames: Frames,
    /// Frames that never held a page, taken lowest first.
    empty: Vec<FrameId>,
    /// FIFO: frames in the order their pages were loaded.
    fifo: VecDeque<FrameId>,
    /// CLOCK: reference bits and the hand.
    referenced: Vec<bool>,
    hand: usize,
    rng: SmallRng,
}

impl GlobalManager {
    fn new(kind: GlobalKind, buffers: u32, seed: u64) -> GlobalManager {
        GlobalManager {
            kind,
            frames: Frames::new(buffers),
            empty: (0..buffers).rev().map(FrameId).collect(),
            fifo: VecDeque::new(),
            referenced: vec![false; buffers as usize],
            hand: 0,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// The victim frame, or `None` if every frame is pinned by a read.
    fn victim(&mut self) -> Option<FrameId> {
        let n = self.frames.len();
        match self.kind {
            GlobalKind::Rand => {
                let start = self.rng.gen_range(0..n);
                (0..n).map(|i| (start + i) % n).find(|&f| !self.frames.reading[f]).map(|f| FrameId(f as u32))
            }
            GlobalKind::Fifo => {
                let pos = self.fifo.iter().position(|f| !self.frames.reading[f.ix()])?;
                self.fifo.remove(pos)
            }
            GlobalKind::Clock => {
                // DS8: first sweep takes unreferenced clean pages and schedules unreferenced dirty
                // ones for writing; the second sweep takes any unreferenced page. A dirty page
                // is skipped once: if its write is still pending when the hand comes back (the
                // disk was never idle), it is taken like a clean one, else a saturated disk
                // would keep dirty pages skipped forever and shrink the pool.
                for step in 0..2 * n {
                    let f = self.hand;
                    self.hand = (self.hand + 1) % n;
                    if self.frames.reading[f] {
                        continue;
                    }
                    if self.referenced[f] {
                        self.referenced[f] = false;
                        continue;
                    }
                    if step < n && self.frames.dirty[f] && !self.frames.write_scheduled[f] {
                        self.frames.schedule_write(FrameId(f as u32));
                        continue;
                    }
                    return Some(FrameId(f as u32));
                }
                None
            }
        }
    }
}

impl BufferManager for GlobalManager {
    fn query_start(&mut self, _q: QueryId, _trace: &QueryTrace) -> bool {
        true
    }

    fn query_end(&mut self, _q: QueryId) -> Vec<QueryId> {
        Vec::new()
    }

    fn open(&mut self, _q: QueryId, _file: FileInstance, _ls: u32, _policy: LocalPolicy) -> bool {
        true
    }

    fn close(&mut self, _q: QueryId, _file: FileInstance) -> Vec<QueryId> {
        Vec::new()
    }

    fn request(
        &mut self,
        _q: QueryId,
        _file: FileInstance,
        page: GlobalPage,
        write: bool,
        _cpu: u64,
    ) -> Access {
        if let Some(&f) = self.frames.table.get(&page) {
            self.referenced[f.ix()] = true;
            return self.frames.resident_access(f, write);
        }
        let frame = match self.empty.pop() {
            Some(f) => f,
            None => match self.victim() {
                Some(f) => f,
                None => return Access::NoFrame,
            },
        };
        if self.kind == GlobalKind::Fifo {
            self.fifo.push_back(frame);
        }
        self.referenced[frame.ix()] = true;
        self.frames.install(frame, page, write)
    }

    fn quantum_end(&mut self, _q: QueryId, _cpu: u64) -> Vec<QueryId> {
        Vec::new()
    }

    frame_table_hooks!();

    fn discard(&mut self, page: GlobalPage) {
        if let Some(f) = self.frames.discard(page) {
            // The frame holds no page now: like a frame that never held one, it is used first.
            self.fifo.retain(|&x| x != f);
            self.referenced[f.ix()] = false;
            self.empty.push(f);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Local algorithms: DBMIN, HOT, WS.

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum LocalKind {
    Dbmin,
    Hot,
    Ws,
}

/// The owner of a local set: a query and, for DBMIN, one of its file instances (HOT and WS use
/// instance 0 for the query's single set).
type SetKey = (QueryId, u16);

#[derive(Clone, Debug)]
struct Member {
    frame: FrameId,
    loaded: u64,
    used: u64,
    used_cpu: u64,
}

#[derive(Clone, Debug)]
struct LocalSet {
    /// Desired size `l` (`u32::MAX` for WS: the window, not a size, bounds it).
    l: u32,
    policy: LocalPolicy,
    members: Vec<Member>,
}

#[derive(Clone, Debug)]
struct QueryState {
    active: bool,
    /// HOT: the hot set size. WS: the memory demand used for (re)activation.
    demand: u32,
    /// WS: the chosen window, µs of the query's CPU time.
    window_us: u64,
    /// WS: the query was admitted or activated on `demand` and has not finished a quantum since,
    /// so its working set is still being rebuilt and it counts as at least `demand` (DS7).
    reserved: bool,
}

/// The two windows of the WS algorithm (Sec. 4.2.1), µs of CPU time.
pub const WS_WINDOWS_US: [u64; 2] = [10_000, 15_000];

/// The mean disk time per page the WS window choice charges a fault (DS7), µs.
const WS_FAULT_COST_US: u64 = 27_600;

/// What WS's window choice (DS7) found for one query trace.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct WsChoice {
    /// The chosen window, µs.
    pub window_us: u64,
    /// Working-set faults of the query alone under that window.
    pub faults: u64,
    /// Mean working-set size alone under that window (time average over its CPU time).
    pub mean_size: f64,
}

/// WS's window choice for a query (DS7): for each window, the faults `F` and the time-averaged
/// working-set size `W` of the query run alone (a page stays in the working set for the window
/// after each reference); the window with the smaller space-time cost `W · (cpu + F · 27.6 ms)`
/// wins, the smaller window on a tie.
pub fn ws_choose_window(trace: &QueryTrace) -> WsChoice {
    let mut best: Option<(f64, WsChoice)> = None;
    for &window in &WS_WINDOWS_US {
        let mut last: FxHashMap<PageRef, u64> = FxHashMap::default();
        let mut faults = 0u64;
        let mut page_time = 0u64;
        for e in &trace.events {
            if let Event::Ref { page, cpu_us, .. } = e {
                match last.insert(*page, *cpu_us) {
                    Some(prev) if cpu_us - prev <= window => page_time += cpu_us - prev,
                    Some(_) => {
                        page_time += window;
                        faults += 1;
                    }
                    None => faults += 1,
                }
            }
        }
        let end = trace.cpu_us;
        page_time += last.values().map(|&t| end.saturating_sub(t).min(window)).sum::<u64>();
        let mean_size = if end == 0 { last.len() as f64 } else { page_time as f64 / end as f64 };
        let cost = mean_size * (end + faults * WS_FAULT_COST_US) as f64;
        let choice = WsChoice { window_us: window, faults, mean_size };
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, choice));
        }
    }
    best.map(|(_, c)| c).unwrap_or(WsChoice { window_us: WS_WINDOWS_US[0], faults: 0, mean_size: 0.0 })
}

/// DBMIN, HOT and WS: local sets of frames owned by queries or file instances, a global free
/// list of the frames outside every set (least recently released first), and a wait queue
/// (DS2–DS7).
#[derive(Debug)]
pub struct LocalManager {
    kind: LocalKind,
    frames: Frames,
    n: u32,
    sets: FxHashMap<SetKey, LocalSet>,
    owner: Vec<Option<SetKey>>,
    free: VecDeque<FrameId>,
    queries: FxHashMap<QueryId, QueryState>,
    wait: VecDeque<QueryId>,
    ws_cache: FxHashMap<QueryType, WsChoice>,
    stamp: u64,
    stats: ManagerStats,
    /// Pages each query lost at its suspensions and has not referenced since (DS18).
    lost: FxHashMap<QueryId, FxHashSet<GlobalPage>>,
    /// Frames with an owner (`owner[f].is_some()`), kept up to date for [`BufferManager::stats`],
    /// which the simulator calls at every event.
    owned: u64,
    /// Queries with `active` set, kept up to date for the same reason.
    active: u64,
}

impl LocalManager {
    fn new(kind: LocalKind, buffers: u32) -> LocalManager {
        LocalManager {
            kind,
            frames: Frames::new(buffers),
            n: buffers,
            sets: FxHashMap::default(),
            owner: vec![None; buffers as usize],
            free: (0..buffers).map(FrameId).collect(),
            queries: FxHashMap::default(),
            wait: VecDeque::new(),
            ws_cache: FxHashMap::default(),
            stamp: 0,
            stats: ManagerStats::default(),
            lost: FxHashMap::default(),
            owned: 0,
            active: 0,
        }
    }

    /// The memory a query accounts for: DBMIN Σ l of its instances, HOT its hot set, WS its
    /// working-set size if active or its saved demand if waiting.
    fn demand(&self, q: QueryId) -> u64 {
        match self.kind {
            LocalKind::Dbmin => self.sets.iter().filter(|(k, _)| k.0 == q).map(|(_, s)| s.l as u64).sum(),
            LocalKind::Hot => self.queries.get(&q).map_or(0, |s| s.demand as u64),
            LocalKind::Ws => {
                let st = self.queries.get(&q);
                if let Some(s) = st.filter(|s| s.active) {
                    let size = self.sets.get(&(q, 0)).map_or(0, |s| s.members.len() as u64);
                    if s.reserved {
                        size.max(s.demand as u64)
                    } else {
                        size
                    }
                } else {
                    st.map_or(0, |s| s.demand as u64)
                }
            }
        }
    }

    fn active_demand(&self) -> u64 {
        self.queries.iter().filter(|(_, s)| s.active).map(|(&q, _)| self.demand(q)).sum()
    }

    /// DS3/DS5: DBMIN needs Σ l < N (strict, as in the paper); HOT and WS need Σ ≤ N.
    fn fits(&self, total: u64) -> bool {
        match self.kind {
            LocalKind::Dbmin => total < self.n as u64,
            LocalKind::Hot | LocalKind::Ws => total <= self.n as u64,
        }
    }

    /// Activates waiting queries from the front while each fits (DS3).
    fn activate_waiting(&mut self) -> Vec<QueryId> {
        let mut out = Vec::new();
        while let Some(&q) = self.wait.front() {
            if !self.fits(self.active_demand() + self.demand(q)) {
                break;
            }
            self.wait.pop_front();
            if let Some(s) = self.queries.get_mut(&q) {
                if !s.active {
                    self.active += 1;
                }
                s.active = true;
                s.reserved = true;
            }
            self.stats.activations += 1;
            out.push(q);
        }
        out
    }

    /// Moves a member frame to the back of the free list, scheduling a write if it is dirty.
    fn release(&mut self, f: FrameId) {
        if let Some(key) = self.owner[f.ix()].take() {
            self.owned -= 1;
            if let Some(set) = self.sets.get_mut(&key) {
                set.members.retain(|m| m.frame != f);
            }
        }
        self.free.push_back(f);
        self.frames.schedule_write(f);
    }

    fn release_all(&mut self, q: QueryId) {
        let frames: Vec<FrameId> = self
            .sets
            .iter()
            .filter(|(k, _)| k.0 == q)
            .flat_map(|(_, s)| s.members.iter().map(|m| m.frame))
            .collect();
        let mut frames = frames;
        frames.sort();
        for f in frames {
            self.release(f);
        }
    }

    /// Suspends an active query: its frames go to the free list, it waits at the front (DS3, DS6).
    fn suspend(&mut self, q: QueryId, demand: u32) {
        self.stats.suspensions += 1;
        let pages: Vec<GlobalPage> = self
            .sets
            .iter()
            .filter(|(k, _)| k.0 == q)
            .flat_map(|(_, s)| s.members.iter().filter_map(|m| self.frames.page[m.frame.ix()]))
            .collect();
        self.lost.entry(q).or_default().extend(pages);
        self.release_all(q);
        if let Some(s) = self.queries.get_mut(&q) {
            if s.active {
                self.active -= 1;
            }
            s.active = false;
            s.demand = demand;
        }
        self.wait.push_front(q);
    }

    /// The victim of a set over its size: by its policy, never `keep` nor a pinned frame.
    fn set_victim(&self, key: SetKey, keep: FrameId) -> Option<FrameId> {
        let set = self.sets.get(&key)?;
        let cands = set.members.iter().filter(|m| m.frame != keep && !self.frames.reading[m.frame.ix()]);
        let m = match set.policy {
            LocalPolicy::Single | LocalPolicy::Fifo | LocalPolicy::Any => cands.min_by_key(|m| m.loaded),
            LocalPolicy::Lru => cands.min_by_key(|m| m.used),
            LocalPolicy::Mru => cands.max_by_key(|m| m.used),
            LocalPolicy::Lifo => cands.max_by_key(|m| m.loaded),
            LocalPolicy::Hierarchical => cands.max_by_key(|m| self.frames.page[m.frame.ix()]),
        };
        m.map(|m| m.frame)
    }

    /// Adds `f` to the set (r ← r + 1) and releases victims while r > l (DS2).
    fn add_member(&mut self, key: SetKey, f: FrameId, cpu: u64) {
        self.stamp += 1;
        let stamp = self.stamp;
        if self.owner[f.ix()].replace(key).is_none() {
            self.owned += 1;
        }
        let Some(set) = self.sets.get_mut(&key) else { return };
        set.members.push(Member { frame: f, loaded: stamp, used: stamp, used_cpu: cpu });
        while self.sets.get(&key).is_some_and(|s| s.members.len() > s.l as usize) {
            match self.set_victim(key, f) {
                Some(v) => self.release(v),
                None => break,
            }
        }
    }

    fn touch(&mut self, key: SetKey, f: FrameId, cpu: u64) {
        self.stamp += 1;
        let stamp = self.stamp;
        if let Some(m) = self.sets.get_mut(&key).and_then(|s| s.members.iter_mut().find(|m| m.frame == f)) {
            m.used = stamp;
            m.used_cpu = cpu;
        }
    }

    /// WS: releases the pages of `q`'s working set not referenced in the last window. Returns
    /// whether any was released.
    fn ws_recompute(&mut self, q: QueryId, cpu: u64) -> bool {
        let Some(window) = self.queries.get(&q).map(|s| s.window_us) else { return false };
        let Some(set) = self.sets.get(&(q, 0)) else { return false };
        let mut old: Vec<FrameId> = set
            .members
            .iter()
            .filter(|m| m.used_cpu + window < cpu && !self.frames.reading[m.frame.ix()])
            .map(|m| m.frame)
            .collect();
        old.sort();
        let any = !old.is_empty();
        for f in old {
            self.release(f);
        }
        any
    }

    /// Takes the first unpinned frame of the free list and installs `page` in it.
    fn take_free(&mut self, page: GlobalPage, write: bool) -> Option<Access> {
        let pos = self.free.iter().position(|f| !self.frames.reading[f.ix()])?;
        let f = self.free.remove(pos)?;
        Some(self.frames.install(f, page, write))
    }
}

impl BufferManager for LocalManager {
    fn query_start(&mut self, q: QueryId, trace: &QueryTrace) -> bool {
        let (demand, window_us) = match self.kind {
            LocalKind::Dbmin => (0, 0),
            LocalKind::Hot => (trace.hot_set, 0),
            LocalKind::Ws => {
                let c = *self.ws_cache.entry(trace.query).or_insert_with(|| ws_choose_window(trace));
                ((c.mean_size.ceil() as u32).max(1), c.window_us)
            }
        };
        if self.kind != LocalKind::Dbmin {
            let l = if self.kind == LocalKind::Hot { trace.hot_set } else { u32::MAX };
            self.sets.insert((q, 0), LocalSet { l, policy: LocalPolicy::Lru, members: Vec::new() });
        }
        // DS3/DS5: DBMIN admits every newcomer (it asks for memory at its opens); HOT and WS
        // admit it if nobody waits and its demand fits.
        let admit = match self.kind {
            LocalKind::Dbmin => true,
            LocalKind::Hot | LocalKind::Ws => {
                self.wait.is_empty() && self.fits(self.active_demand() + demand as u64)
            }
        };
        let state = QueryState { active: admit, demand, window_us, reserved: admit };
        if let Some(old) = self.queries.insert(q, state) {
            self.active -= u64::from(old.active);
        }
        self.active += u64::from(admit);
        if admit {
            self.stats.admitted += 1;
        } else {
            self.stats.deferred += 1;
            self.wait.push_back(q);
        }
        admit
    }

    fn query_end(&mut self, q: QueryId) -> Vec<QueryId> {
        self.release_all(q);
        self.sets.retain(|k, _| k.0 != q);
        if let Some(old) = self.queries.remove(&q) {
            self.active -= u64::from(old.active);
        }
        self.lost.remove(&q);
        self.wait.retain(|&w| w != q);
        self.activate_waiting()
    }

    fn open(&mut self, q: QueryId, file: FileInstance, ls_size: u32, policy: LocalPolicy) -> bool {
        if self.kind != LocalKind::Dbmin {
            return true;
        }
        self.sets.insert((q, file.0), LocalSet { l: ls_size.max(1), policy, members: Vec::new() });
        if self.fits(self.active_demand()) {
            return true;
        }
        self.suspend(q, 0);
        false
    }

    fn close(&mut self, q: QueryId, file: FileInstance) -> Vec<QueryId> {
        if self.kind != LocalKind::Dbmin {
            return Vec::new();
        }
        let key = (q, file.0);
        let frames: Vec<FrameId> = self.sets.get(&key).map_or(Vec::new(), |s| {
            let mut v: Vec<FrameId> = s.members.iter().map(|m| m.frame).collect();
            v.sort();
            v
        });
        for f in frames {
            self.release(f);
        }
        self.sets.remove(&key);
        self.activate_waiting()
    }

    fn request(&mut self, q: QueryId, file: FileInstance, page: GlobalPage, write: bool, cpu: u64) -> Access {
        let key = match self.kind {
            LocalKind::Dbmin => (q, file.0),
            LocalKind::Hot | LocalKind::Ws => (q, 0),
        };
        if let Some(&f) = self.frames.table.get(&page) {
            match self.owner[f.ix()] {
                // Case 1: in this set.
                Some(k) if k == key => self.touch(key, f, cpu),
                // Case 2, owned elsewhere: just use it (for WS a fault: recompute, DS7).
                Some(_) => {
                    if self.kind == LocalKind::Ws {
                        self.ws_recompute(q, cpu);
                    }
                }
                // Case 2, on the free list: it joins this set.
                None => {
                    if self.kind == LocalKind::Ws {
                        self.ws_recompute(q, cpu);
                    }
                    self.stats.reclaims += 1;
                    if self.lost.get_mut(&q).is_some_and(|l| l.remove(&page)) {
                        self.stats.reclaims_after_suspension += 1;
                    }
                    self.free.retain(|&x| x != f);
                    self.add_member(key, f, cpu);
                }
            }
            return self.frames.resident_access(f, write);
        }
        // Case 3: not in memory.
        if self.kind == LocalKind::Ws {
            self.ws_recompute(q, cpu);
            if self.free.is_empty() {
                let others_active = self.queries.iter().any(|(&o, s)| o != q && s.active);
                if others_active {
                    let size = self.sets.get(&key).map_or(0, |s| s.members.len() as u32);
                    self.suspend(q, size + 1);
                    return Access::Suspend;
                }
                // Alone: it replaces its own least recently used page (DS6).
                if let Some(v) = self.set_victim_lru(key) {
                    self.release(v);
                }
            }
        }
        // A full set whose pool has no free frame left replaces within itself first (HOT's pools
        // may fill memory exactly, DS5); the victim's frame goes to the free list and is reused.
        let no_free = self.free.iter().all(|f| self.frames.reading[f.ix()]);
        if no_free && self.sets.get(&key).is_some_and(|s| s.members.len() >= s.l as usize) {
            if let Some(v) = self.set_victim(key, FrameId(u32::MAX)) {
                self.release(v);
            }
        }
        match self.take_free(page, write) {
            Some(access) => {
                if self.lost.get_mut(&q).is_some_and(|l| l.remove(&page)) {
                    self.stats.rereads_after_suspension += 1;
                }
                if let Access::Miss { frame, .. } = access {
                    self.add_member(key, frame, cpu);
                }
                access
            }
            None => Access::NoFrame,
        }
    }

    fn quantum_end(&mut self, q: QueryId, cpu: u64) -> Vec<QueryId> {
        if self.kind != LocalKind::Ws {
            return Vec::new();
        }
        self.ws_recompute(q, cpu);
        // DS7: a full quantum (longer than either window) rebuilt the working set; from now on
        // the query counts as its working set only.
        if let Some(s) = self.queries.get_mut(&q) {
            s.reserved = false;
        }
        self.activate_waiting()
    }

    frame_table_hooks!();

    fn discard(&mut self, page: GlobalPage) {
        let Some(f) = self.frames.discard(page) else { return };
        // Out of its set (HOT and WS keep a query's pages until its end) or off the free list;
        // the empty frame goes to the front of the free list, so it is reused first.
        if let Some(key) = self.owner[f.ix()].take() {
            self.owned -= 1;
            if let Some(set) = self.sets.get_mut(&key) {
                set.members.retain(|m| m.frame != f);
            }
        }
        self.free.retain(|&x| x != f);
        self.free.push_front(f);
    }

    fn stats(&self) -> ManagerStats {
        ManagerStats { resident: self.owned, active: self.active, ..self.stats }
    }
}

impl LocalManager {
    fn set_victim_lru(&self, key: SetKey) -> Option<FrameId> {
        let set = self.sets.get(&key)?;
        set.members
            .iter()
            .filter(|m| !self.frames.reading[m.frame.ix()])
            .min_by_key(|m| m.used)
            .map(|m| m.frame)
    }

    /// The resident set size (r) of a set, for tests.
    #[cfg(test)]
    fn r(&self, q: QueryId, file: u16) -> usize {
        self.sets.get(&(q, file)).map_or(0, |s| s.members.len())
    }

    #[cfg(test)]
    fn owner_of(&self, page: GlobalPage) -> Option<SetKey> {
        self.frames.table.get(&page).and_then(|f| self.owner[f.ix()])
    }
}

// ---------------------------------------------------------------------------------------------
// Feedback load control for the global algorithms.

/// What the feedback controller wants done after a sample.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Adjust {
    /// Activate the first waiting query.
    Activate,
    /// Deactivate the most recently activated query.
    Deactivate,
    /// Leave the load as it is.
    Keep,
}

/// The feedback load controller of Sec. 4.3.2 (DS9): an estimator (disk utilization over each
/// sampling interval), an optimizer (compare with the target, with a dead band) and a switch
/// (one activation or deactivation per sample).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct FeedbackController {
    /// Target disk utilization (0.87 by default).
    pub target: f64,
    /// Half-width of the dead band around the target.
    pub band: f64,
    /// Sampling interval, µs of simulated time.
    pub interval_us: u64,
}

impl FeedbackController {
    /// The default sampling interval: one second of simulated time (about 36 disk accesses).
    pub const DEFAULT_INTERVAL_US: u64 = 1_000_000;
    /// The default dead band: ±3 points of utilization.
    pub const DEFAULT_BAND: f64 = 0.03;

    /// A controller aiming at `target` utilization with the default interval and band.
    pub fn new(target: f64) -> FeedbackController {
        FeedbackController { target, band: Self::DEFAULT_BAND, interval_us: Self::DEFAULT_INTERVAL_US }
    }

    /// The optimizer's decision for a sample: `utilization` over the last interval, `active`
    /// queries admitted, `waiting` ones held back.
    pub fn decide(&self, utilization: f64, active: usize, waiting: usize) -> Adjust {
        if utilization > self.target + self.band && active > 1 {
            Adjust::Deactivate
        } else if utilization < self.target - self.band && waiting > 0 {
            Adjust::Activate
        } else {
            Adjust::Keep
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbmin::RelationId;

    fn gp(page: u32) -> GlobalPage {
        GlobalPage { copy: 0, run: 0, page: PageRef { relation: RelationId(0), page } }
    }

    fn trace(query: QueryType, hot_set: u32) -> QueryTrace {
        QueryTrace { query, events: Vec::new(), cpu_us: 1_000, hot_set }
    }

    const F0: FileInstance = FileInstance(0);
    const F1: FileInstance = FileInstance(1);

    /// Reads the page in if it misses, as the simulator would.
    fn req(m: &mut dyn BufferManager, q: QueryId, file: FileInstance, page: u32, write: bool) -> Access {
        let a = m.request(q, file, gp(page), write, 0);
        if let Access::Miss { frame, .. } = a {
            m.read_done(frame);
        }
        a
    }

    fn is_miss(a: Access) -> bool {
        matches!(a, Access::Miss { .. })
    }

    fn dbmin(n: u32) -> LocalManager {
        LocalManager::new(LocalKind::Dbmin, n)
    }

    /// DS2 case 1 and 3: an LRU set of l = 2 over pages 1, 2, 1, 3, 1. Page 1 misses (case 3),
    /// 2 misses, 1 hits in its own set (case 1, usage updated), 3 misses and r = 3 > 2 releases
    /// the LRU page, 2; the last 1 hits.
    #[test]
    fn ds2_case1_and_case3_with_lru() {
        let mut m = dbmin(10);
        assert!(m.query_start(0, &trace(QueryType::I, 3)));
        assert!(m.open(0, F0, 2, LocalPolicy::Lru));
        assert!(is_miss(req(&mut m, 0, F0, 1, false)));
        assert!(is_miss(req(&mut m, 0, F0, 2, false)));
        assert_eq!(req(&mut m, 0, F0, 1, false), Access::Hit);
        assert!(is_miss(req(&mut m, 0, F0, 3, false)));
        assert_eq!(m.r(0, 0), 2);
        assert_eq!(m.owner_of(gp(2)), None, "2 was released to the free list, still resident");
        assert_eq!(m.owner_of(gp(1)), Some((0, 0)));
        assert_eq!(req(&mut m, 0, F0, 1, false), Access::Hit);
    }

    /// DS2 case 3 with MRU (looping sequential), l = 2 over pages 1, 2, 3: at 3 the set holds
    /// {1, 2, 3}; MRU among the others releases 2 (the most recently used before 3).
    #[test]
    fn ds2_mru_releases_the_most_recent_other_page() {
        let mut m = dbmin(10);
        m.query_start(0, &trace(QueryType::V, 17));
        m.open(0, F0, 2, LocalPolicy::Mru);
        for p in 1..=3 {
            assert!(is_miss(req(&mut m, 0, F0, p, false)));
        }
        assert_eq!(m.owner_of(gp(1)), Some((0, 0)));
        assert_eq!(m.owner_of(gp(2)), None);
        assert_eq!(m.owner_of(gp(3)), Some((0, 0)));
    }

    /// DS2 case 2: a page owned by another instance is used without changing owners; a page on
    /// the free list joins the requesting set without I/O (r = 1 + 1 > l = 1 releases the old one).
    #[test]
    fn ds2_case2_owned_pages_are_shared_and_free_pages_reclaimed() {
        let mut m = dbmin(10);
        m.query_start(0, &trace(QueryType::I, 3));
        m.query_start(1, &trace(QueryType::I, 3));
        m.open(0, F0, 1, LocalPolicy::Single);
        m.open(1, F0, 1, LocalPolicy::Single);
        assert!(is_miss(req(&mut m, 0, F0, 7, false)));
        assert_eq!(req(&mut m, 1, F0, 7, false), Access::Hit);
        assert_eq!(m.owner_of(gp(7)), Some((0, 0)));
        assert_eq!(m.r(1, 0), 0);
        // Query 1 reads 8, then 7 leaves query 0's set when 0 reads 9.
        assert!(is_miss(req(&mut m, 1, F0, 8, false)));
        assert!(is_miss(req(&mut m, 0, F0, 9, false)));
        assert_eq!(m.owner_of(gp(7)), None);
        assert_eq!(req(&mut m, 1, F0, 7, false), Access::Hit, "reclaimed from the free list");
        assert_eq!(m.owner_of(gp(7)), Some((1, 0)));
        assert_eq!(m.owner_of(gp(8)), None, "r = 2 > l = 1 released 8");
        assert_eq!(m.r(1, 0), 1);
    }

    /// DS4: a dirty page released to the free list is written asynchronously; once written it
    /// no longer needs a write.
    #[test]
    fn ds4_released_dirty_pages_are_written_asynchronously() {
        let mut m = dbmin(10);
        m.query_start(0, &trace(QueryType::VI, 24));
        m.open(0, F0, 1, LocalPolicy::Single);
        req(&mut m, 0, F0, 1, true);
        assert!(m.drain_async_writes().is_empty());
        req(&mut m, 0, F0, 2, false);
        assert_eq!(m.drain_async_writes(), vec![gp(1)]);
        assert!(m.needs_write(gp(1)));
        m.write_done(gp(1));
        assert!(!m.needs_write(gp(1)));
    }

    /// DS3, hand-worked with N = 5: q0 opens l = 3 (Σ = 3 < 5, runs); q1 opens l = 2 (Σ = 5,
    /// suspended, front); q2 opens l = 1 (Σ = 4, runs); q3 opens l = 1 (Σ = 5, suspended, now in
    /// front of q1). q0 closes: Σ = 1; q3 (1) gives 2 < 5 and is activated, then q1 (2) gives
    /// 4 < 5 and is activated too.
    #[test]
    fn ds3_predictive_load_control_with_front_inserted_queue() {
        let mut m = dbmin(5);
        for q in 0..4 {
            assert!(m.query_start(q, &trace(QueryType::I, 3)), "DBMIN admits newcomers");
        }
        assert!(m.open(0, F0, 3, LocalPolicy::Mru));
        assert!(!m.open(1, F0, 2, LocalPolicy::Lru));
        assert!(m.open(2, F0, 1, LocalPolicy::Single));
        assert!(!m.open(3, F0, 1, LocalPolicy::Single));
        assert_eq!(m.wait, VecDeque::from(vec![3, 1]));
        assert_eq!(m.close(0, F0), vec![3, 1]);
        assert!(m.wait.is_empty());
    }

    /// DS3: a query suspended at an open releases its other locality sets; activation counts
    /// all its instances again. N = 4: q0 opens l = 2 and reads pages 1 and 2; q1 opens l = 1
    /// (Σ = 3 < 4, runs); q0 opens a second instance with l = 1 (Σ = 4, not < 4): q0 is
    /// suspended and its two pages go to the free list, still resident. q1 closes: Σ = 0 and q0
    /// needs 2 + 1 = 3 < 4, so it is activated, and page 1 comes back from the free list.
    #[test]
    fn ds3_suspension_releases_the_query_buffers() {
        let mut m = dbmin(4);
        m.query_start(0, &trace(QueryType::III, 5));
        m.query_start(1, &trace(QueryType::III, 5));
        assert!(m.open(0, F0, 2, LocalPolicy::Lru));
        req(&mut m, 0, F0, 1, false);
        req(&mut m, 0, F0, 2, false);
        assert!(m.open(1, F0, 1, LocalPolicy::Lru), "2 + 1 < 4");
        assert!(!m.open(0, F1, 1, LocalPolicy::Single), "2 + 1 + 1 = 4");
        assert_eq!(m.r(0, 0), 0, "suspended: its pages went to the free list");
        assert_eq!(m.owner_of(gp(1)), None);
        assert!(m.frame_of(gp(1)).is_some(), "still resident");
        // q1 closes: Σ = 0, q0 needs 3 < 4.
        assert_eq!(m.close(1, F0), vec![0]);
        assert_eq!(req(&mut m, 0, F0, 1, false), Access::Hit);
    }

    /// DS5: HOT admits a query if its hot set fits beside the active ones (Σ ≤ N); the others
    /// wait in arrival order.
    #[test]
    fn ds5_hot_admission_and_lru_pool() {
        let mut m = LocalManager::new(LocalKind::Hot, 5);
        assert!(m.query_start(0, &trace(QueryType::III, 3)));
        assert!(!m.query_start(1, &trace(QueryType::III, 3)), "3 + 3 > 5");
        assert!(!m.query_start(2, &trace(QueryType::I, 1)), "someone waits already");
        // LRU pool of 3 over 1, 2, 3, 1, 4: 4 replaces 2.
        for p in [1, 2, 3, 1, 4] {
            req(&mut m, 0, F0, p, false);
        }
        assert_eq!(m.owner_of(gp(2)), None);
        assert_eq!(m.r(0, 0), 3);
        assert_eq!(m.query_end(0), vec![1, 2]);
    }

    /// DS7: an admitted (or activated) WS query counts as its demand until its first quantum
    /// ends, even while its working set is still empty: otherwise every newcomer would see it as
    /// 0 and be admitted beside it. ws_trace's demand is ⌈1.75⌉ = 2.
    #[test]
    fn ds7_ws_admitted_query_counts_its_demand_until_a_quantum_ends() {
        let mut m = LocalManager::new(LocalKind::Ws, 4);
        assert!(m.query_start(0, &ws_trace()));
        assert!(m.query_start(1, &ws_trace()), "2 + 2 <= 4");
        assert!(!m.query_start(2, &ws_trace()), "2 + 2 + 2 > 4 although no page is resident");
        assert_eq!(m.stats().deferred, 1);
        // q0 finishes a quantum with an empty working set: it counts 0 now, q2 fits.
        assert_eq!(m.quantum_end(0, 20_000), vec![2]);
        assert_eq!(m.stats().activations, 1);
        // q2, activated, counts as 2 again: a newcomer waits.
        assert!(!m.query_start(3, &ws_trace()));
    }

    /// DS18: a suspended query's pages are remembered; reading one back counts as a re-read
    /// after suspension, taking one back from the free list as a reclaim after suspension.
    #[test]
    fn ds18_counts_rereads_and_reclaims_after_suspension() {
        let mut m = LocalManager::new(LocalKind::Ws, 4);
        assert!(m.query_start(0, &ws_trace()));
        for (p, f) in [(1, 0), (2, 1)] {
            assert!(is_miss(m.request(0, F0, gp(p), false, 0)));
            m.read_done(FrameId(f));
        }
        m.quantum_end(0, 1_000);
        assert!(m.query_start(1, &ws_trace()), "2 + 2 <= 4");
        for (p, f) in [(5, 2), (6, 3)] {
            assert!(is_miss(m.request(1, F0, gp(p), false, 0)));
            m.read_done(FrameId(f));
        }
        // No free frame: q0's fault suspends it; pages 1 and 2 go to the free list (1 first).
        assert_eq!(m.request(0, F0, gp(3), false, 2_000), Access::Suspend);
        assert_eq!(m.stats().suspensions, 1);
        // q1 takes page 1's frame for page 7.
        assert!(is_miss(m.request(1, F0, gp(7), false, 1)));
        m.read_done(FrameId(0));
        assert_eq!(m.query_end(1), vec![0]);
        assert_eq!(m.request(0, F0, gp(2), false, 2_000), Access::Hit, "page 2 is still on the free list");
        assert!(is_miss(m.request(0, F0, gp(1), false, 2_000)), "page 1 was reused: read back");
        let st = m.stats();
        assert_eq!((st.rereads_after_suspension, st.reclaims_after_suspension), (1, 1));
        assert_eq!((st.admitted, st.activations, st.active), (2, 1, 1));
    }

    fn ws_trace() -> QueryTrace {
        let r = |page: u32, cpu_us: u64| Event::Ref {
            file: F0,
            page: PageRef { relation: RelationId(0), page },
            write: false,
            cpu_us,
        };
        QueryTrace {
            query: QueryType::II,
            events: vec![
                Event::Open { file: F0, relation: RelationId(0), ls_size: 1, policy: LocalPolicy::Any },
                r(1, 0),
                r(2, 1_000),
                r(1, 12_000),
                Event::Close { file: F0, cpu_us: 20_000 },
            ],
            cpu_us: 20_000,
            hot_set: 1,
        }
    }

    /// DS7, hand-worked: page 1 at 0 and 12 ms, page 2 at 1 ms, end at 20 ms.
    /// τ = 10 ms: faults 3 (12 > 10), page time 10 + 10 + 8 = 28 ms, W = 1.4, cost 1.4 ·
    /// (20 + 3 · 27.6) = 143.9. τ = 15 ms: faults 2, page time 12 + 15 + 8 = 35, W = 1.75,
    /// cost 1.75 · (20 + 55.2) = 131.6: 15 ms wins.
    #[test]
    fn ds7_ws_window_choice_by_space_time_cost() {
        let c = ws_choose_window(&ws_trace());
        assert_eq!(c.window_us, 15_000);
        assert_eq!(c.faults, 2);
        assert!((c.mean_size - 1.75).abs() < 1e-9);
    }

    /// DS6/DS7: WS releases pages older than the window at a quantum end, and suspends the
    /// faulting query when the free list is empty and others are active.
    #[test]
    fn ds6_ws_window_release_and_suspension() {
        let mut m = LocalManager::new(LocalKind::Ws, 2);
        assert!(m.query_start(0, &ws_trace()), "demand 2 fits in 2");
        m.request(0, F0, gp(1), false, 0);
        m.read_done(FrameId(0));
        assert_eq!(m.r(0, 0), 1);
        m.quantum_end(0, 16_000);
        assert_eq!(m.r(0, 0), 0, "page 1 unused for 16 ms > 15 ms");
        // q1 arrives; demand 2 does not fit beside... q0 holds 0 now, so it fits.
        assert!(m.query_start(1, &ws_trace()));
        let a = m.request(1, F0, gp(5), false, 0);
        assert!(is_miss(a));
        let b = m.request(1, F0, gp(6), false, 0);
        assert!(is_miss(b));
        // Both frames are in q1's working set: q0's fault suspends q0.
        assert_eq!(m.request(0, F0, gp(7), false, 17_000), Access::Suspend);
        assert_eq!(m.wait.front(), Some(&0));
    }

    /// DS8: RAND is deterministic under its seed and never picks a pinned frame.
    #[test]
    fn ds8_rand_skips_pinned_frames() {
        let run = |seed| {
            let mut m = GlobalManager::new(GlobalKind::Rand, 3, seed);
            for p in 0..3 {
                req(&mut m, 0, F0, p, false);
            }
            // Pin two frames with reads in progress.
            let mut pinned = Vec::new();
            for p in 10..12 {
                if let Access::Miss { frame, .. } = m.request(0, F0, gp(p), false, 0) {
                    pinned.push(frame);
                }
            }
            let a = m.request(0, F0, gp(20), false, 0);
            let Access::Miss { frame, .. } = a else { panic!("expected a miss, got {a:?}") };
            assert!(!pinned.contains(&frame));
            frame
        };
        assert_eq!(run(9), run(9));
    }

    /// DS8: FIFO replaces in load order, whatever the hits: 1 2 3, hit 1, then 4 replaces 1.
    #[test]
    fn ds8_fifo_replaces_in_load_order() {
        let mut m = GlobalManager::new(GlobalKind::Fifo, 3, 0);
        for p in [1, 2, 3, 1, 4] {
            req(&mut m, 0, F0, p, false);
        }
        assert!(m.frame_of(gp(1)).is_none());
        assert!(m.frame_of(gp(2)).is_some());
    }

    /// DS8: CLOCK's first sweep skips an unreferenced dirty page and schedules its write; it takes
    /// the first unreferenced clean page. Three frames hold 1, 2 (dirty), 3, all referenced.
    /// Request 4: the first sweep only clears the three bits and finds nothing, so the second
    /// sweep takes frame 0 (page 1); the hand stops at frame 1. Request 5: frame 1 (page 2) is
    /// unreferenced but dirty: its write is scheduled and it is skipped; frame 2 (page 3) is
    /// clean and unreferenced: chosen.
    #[test]
    fn ds8_clock_prefers_clean_pages_on_the_first_sweep() {
        let mut m = GlobalManager::new(GlobalKind::Clock, 3, 0);
        req(&mut m, 0, F0, 1, false);
        req(&mut m, 0, F0, 2, true);
        req(&mut m, 0, F0, 3, false);
        assert_eq!(req(&mut m, 0, F0, 4, false), Access::Miss { frame: FrameId(0), write_back: None });
        assert!(m.drain_async_writes().is_empty());
        assert_eq!(req(&mut m, 0, F0, 5, false), Access::Miss { frame: FrameId(2), write_back: None });
        assert!(m.frame_of(gp(2)).is_some());
        assert!(m.frame_of(gp(3)).is_none());
        assert_eq!(m.drain_async_writes(), vec![gp(2)]);
    }

    /// DS8: a dirty page is skipped only once. Continuing the scenario above (hand at frame 0;
    /// frame 0 page 4 referenced, frame 1 page 2 dirty with its write pending, frame 2 page 5
    /// referenced), request 6 clears frame 0's bit and takes frame 1 with a write-back, since the
    /// write never ran. Had the write run, the page would be clean and taken without one.
    #[test]
    fn ds8_clock_skips_a_dirty_page_only_once() {
        for written in [false, true] {
            let mut m = GlobalManager::new(GlobalKind::Clock, 3, 0);
            req(&mut m, 0, F0, 1, false);
            req(&mut m, 0, F0, 2, true);
            req(&mut m, 0, F0, 3, false);
            req(&mut m, 0, F0, 4, false);
            assert_eq!(req(&mut m, 0, F0, 5, false), Access::Miss { frame: FrameId(2), write_back: None });
            assert_eq!(m.drain_async_writes(), vec![gp(2)]);
            if written {
                m.write_done(gp(2));
            }
            let write_back = (!written).then_some(gp(2));
            assert_eq!(req(&mut m, 0, F0, 6, false), Access::Miss { frame: FrameId(1), write_back });
        }
    }

    /// DS8: when every page is dirty, the second sweep takes one anyway, with a write-back.
    #[test]
    fn ds8_clock_second_sweep_takes_dirty_pages() {
        let mut m = GlobalManager::new(GlobalKind::Clock, 2, 0);
        req(&mut m, 0, F0, 1, true);
        req(&mut m, 0, F0, 2, true);
        let a = req(&mut m, 0, F0, 3, false);
        assert_eq!(a, Access::Miss { frame: FrameId(0), write_back: Some(gp(1)) });
    }

    /// DS9: the controller deactivates above the band, activates below it, keeps inside it, and
    /// never deactivates the last active query.
    #[test]
    fn ds9_feedback_controller_decisions() {
        let c = FeedbackController::new(0.87);
        assert_eq!(c.decide(0.95, 4, 0), Adjust::Deactivate);
        assert_eq!(c.decide(0.95, 1, 3), Adjust::Keep);
        assert_eq!(c.decide(0.50, 4, 2), Adjust::Activate);
        assert_eq!(c.decide(0.50, 4, 0), Adjust::Keep);
        assert_eq!(c.decide(0.88, 4, 2), Adjust::Keep);
    }

    /// Every frame is, at all times, either on the free list or in exactly one set (DS2).
    #[test]
    fn ds2_frames_are_free_or_owned_exactly_once() {
        let mut m = dbmin(6);
        let mut rng = SmallRng::seed_from_u64(3);
        for q in 0..3 {
            m.query_start(q, &trace(QueryType::I, 3));
            m.open(q, F0, 1 + q as u32 % 2, LocalPolicy::Lru);
        }
        for _ in 0..500 {
            let q = rng.gen_range(0..3);
            if m.queries.get(&q).is_some_and(|s| s.active) {
                req(&mut m, q, F0, rng.gen_range(0..12), rng.gen_bool(0.2));
            }
            let owned: usize = m.sets.values().map(|s| s.members.len()).sum();
            assert_eq!(owned + m.free.len(), 6);
            assert_eq!(m.stats().resident as usize, owned, "the owned-frame count is kept up to date");
            let active = m.queries.values().filter(|s| s.active).count() as u64;
            assert_eq!(m.stats().active, active, "the active count is kept up to date");
            for (k, s) in &m.sets {
                assert!(s.members.len() <= s.l as usize);
                for mb in &s.members {
                    assert_eq!(m.owner[mb.frame.ix()], Some(*k));
                }
            }
        }
    }
}

#[cfg(test)]
mod model_tests;
