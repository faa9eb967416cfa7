//! The Wisconsin-like database and the six queries of Tables 2–3 (Chou & DeWitt 1986), as
//! generators of single-query traces: file-open events with the QLSM locality set, page
//! references with CPU timestamps, closes. Every layout choice and calibration is a numbered
//! decision of README "DBMIN workload" (D5–D14), cited below.
//!
//! ```
//! use swizzledb_sim::dbmin::queries::{solo_disk_ops, Workload};
//! use swizzledb_sim::dbmin::QueryType;
//!
//! let workload = Workload::new();
//! let trace = workload.trace(QueryType::V, 7);
//! assert_eq!(trace.hot_set, 17);
//! assert_eq!(trace.cpu_us, 3_470_000);
//! let ops = solo_disk_ops(&trace);
//! assert!((48..=62).contains(&(ops.reads + ops.writes)));
//! ```

use super::patterns::{ir_ls_size, lh_ls_size, yao, LsSpec, Tree, BETA};
use super::{Event, FileInstance, LocalPolicy, PageRef, QueryTrace, QueryType, RelationId};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet, VecDeque};

/// Page size in bytes (D5).
pub const PAGE_BYTES: u32 = 4096;
/// Tuple size in bytes (Table 3).
pub const TUPLE_BYTES: u32 = 182;
/// Bytes of a data page's header and of each tuple's slot (D5).
pub const PAGE_HEADER_BYTES: u32 = 4;
/// Bytes of a slot-directory entry per tuple (D5).
pub const SLOT_BYTES: u32 = 4;
/// Tuples per data page: `(4096 - 4) / (182 + 4) = 22` (D5).
pub const TUPLES_PER_PAGE: u32 = (PAGE_BYTES - PAGE_HEADER_BYTES) / (TUPLE_BYTES + SLOT_BYTES);
/// Joined (two-tuple, 364-byte) result tuples per page: `4092 / 368 = 11` (D5).
pub const JOINED_PER_PAGE: u32 = (PAGE_BYTES - PAGE_HEADER_BYTES) / (2 * TUPLE_BYTES + SLOT_BYTES);
/// Bytes of an index entry: a 4-byte key and a 4-byte pointer (D6).
pub const INDEX_ENTRY_BYTES: u32 = 8;
/// Bytes of an index page's header (D6).
pub const INDEX_HEADER_BYTES: u32 = 16;
/// Entries an index page can hold: `(4096 - 16) / 8 = 510` (D6).
pub const INDEX_CAPACITY: u32 = (PAGE_BYTES - INDEX_HEADER_BYTES) / INDEX_ENTRY_BYTES;
/// Entries per leaf of the nonclustered index on B, bulk-loaded so that its 20 leaves are
/// full and equal (D6).
pub const NONCLUSTERED_PER_LEAF: u32 = 500;
// The sparse index of a big relation fits one page, and a leaf of the dense index is not overfull.
const _: () = assert!(BIG_TUPLES.div_ceil(TUPLES_PER_PAGE) <= INDEX_CAPACITY);
const _: () = assert!(NONCLUSTERED_PER_LEAF <= INDEX_CAPACITY);

/// Buckets (pages) of query VI's hash table (D12).
pub const HASH_BUCKETS: u32 = 20;

/// Tuples of A and B.
pub const BIG_TUPLES: u32 = 10_000;
/// Tuples of A'.
pub const A_PRIME_TUPLES: u32 = 1_000;
/// Tuples of B'.
pub const B_PRIME_TUPLES: u32 = 300;

/// The catalog: one descriptor page per permanent file (page = relation id - 1) and one
/// directory page for temporary results (page [`RESULT_DIRECTORY_PAGE`]) (D7).
pub const CATALOG: RelationId = RelationId(0);
/// Relation A, clustered on its key (tuple `t` has key `t`).
pub const A_DATA: RelationId = RelationId(1);
/// A's clustered (sparse) index: one page (D6).
pub const A_CLUSTERED: RelationId = RelationId(2);
/// Relation B, clustered on its key like A.
pub const B_DATA: RelationId = RelationId(3);
/// B's clustered (sparse) index: one page.
pub const B_CLUSTERED: RelationId = RelationId(4);
/// B's nonclustered (dense) index on a second attribute: a root and 20 leaves (D6).
pub const B_NONCLUSTERED: RelationId = RelationId(5);
/// Relation A'.
pub const A_PRIME: RelationId = RelationId(6);
/// Relation B'.
pub const B_PRIME: RelationId = RelationId(7);
/// The query's result, a temporary file private to the query (D8).
pub const RESULT: RelationId = RelationId(100);
/// Query VI's hash table, a temporary file private to the query, dropped at its end (D8).
pub const HASH_TABLE: RelationId = RelationId(101);
/// The catalog page that registers temporary results.
pub const RESULT_DIRECTORY_PAGE: u32 = 7;

/// Matching fraction of query IV's probes (D11): the calibration knob for its disk operations.
pub const MATCH_IV: f64 = 0.47;
/// Matching fraction of query V's outer tuples (D11).
pub const MATCH_V: f64 = 0.72;
/// Matching fraction of query VI's probing A' tuples (D11).
pub const MATCH_VI: f64 = 0.735;

/// The seed of the database itself (B's second attribute): fixed, so every query sees the
/// same database whatever its own seed (D9).
pub const DATABASE_SEED: u64 = 0x005E_EDDB;

/// Data pages of a relation of `tuples` tuples: `ceil(tuples / 22)`.
pub const fn data_pages(tuples: u32) -> u32 {
    tuples.div_ceil(TUPLES_PER_PAGE)
}

/// Whether a relation is a temporary file of one query (its result or hash table): its pages
/// are created by the query, so the first reference to each needs no read, and the simulator
/// gives each running query its own copy (D8).
pub fn is_temporary(relation: RelationId) -> bool {
    relation == RESULT || relation == HASH_TABLE
}

/// Pages of a permanent file, or `None` for a temporary one (which grows as the query writes).
pub fn file_pages(relation: RelationId) -> Option<u32> {
    Some(match relation {
        CATALOG => RESULT_DIRECTORY_PAGE + 1,
        A_DATA | B_DATA => data_pages(BIG_TUPLES),
        A_CLUSTERED | B_CLUSTERED => 1,
        B_NONCLUSTERED => nonclustered_tree().pages(),
        A_PRIME => data_pages(A_PRIME_TUPLES),
        B_PRIME => data_pages(B_PRIME_TUPLES),
        _ => return None,
    })
}

/// The nonclustered index on B as a complete tree: fan-out 20, height 1, 500 entries a leaf.
pub fn nonclustered_tree() -> Tree {
    Tree { fanout: BIG_TUPLES / NONCLUSTERED_PER_LEAF, height: 1, entries_per_leaf: NONCLUSTERED_PER_LEAF }
}

/// A clustered (sparse) index of a 455-page relation: one entry per data page, one page.
pub fn clustered_tree() -> Tree {
    Tree { fanout: 1, height: 0, entries_per_leaf: data_pages(BIG_TUPLES) }
}

/// Relative CPU costs of the operations of a query (D10), in abstract units; each query's
/// units are scaled so that its total is its Table 2 CPU time.
#[derive(Copy, Clone, Debug)]
pub struct CpuModel {
    /// Opening or closing a file.
    pub open: f64,
    /// One page request to the buffer manager.
    pub fix: f64,
    /// Searching one index page.
    pub search: f64,
    /// Examining one tuple (a predicate).
    pub tuple: f64,
    /// One join comparison of nested loops or of a hash bucket's chain.
    pub compare: f64,
    /// Hashing a tuple.
    pub hash: f64,
    /// Building and writing one result tuple.
    pub emit: f64,
}

/// The cost model of D10.
pub const CPU_MODEL: CpuModel =
    CpuModel { open: 20.0, fix: 1.0, search: 2.0, tuple: 0.5, compare: 0.1, hash: 1.0, emit: 2.0 };

/// What the hot-set calculator knows of one file instance (Sacco & Schkolnick's rules, D13).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HotRule {
    /// Only the current page matters (scans read once, random reads without reuse, results).
    Current,
    /// The file is looped over: all its pages.
    Loop {
        /// Pages of the loop.
        pages: u32,
    },
    /// A table probed over and over (a hash table): all its pages.
    Table {
        /// Pages of the table.
        pages: u32,
    },
    /// Repeated index probes: the non-leaf pages stay, plus one leaf.
    Probes {
        /// Non-leaf pages of the index.
        nonleaf: u32,
    },
}

impl HotRule {
    /// Buffers this instance needs for LRU to keep its re-referenced pages.
    pub fn buffers(self) -> u32 {
        match self {
            HotRule::Current => 1,
            HotRule::Loop { pages } | HotRule::Table { pages } => pages,
            HotRule::Probes { nonleaf } => nonleaf + 1,
        }
    }
}

/// One file instance of a query plan: what the trace's open event says, plus the pattern and
/// the hot-set rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceInfo {
    /// The instance.
    pub file: FileInstance,
    /// Its file.
    pub relation: RelationId,
    /// Its QLSM pattern (paper's name).
    pub pattern: &'static str,
    /// Its locality set.
    pub ls: LsSpec,
    /// Its hot-set rule.
    pub hot: HotRule,
}

/// The hot set of a plan (D13): the largest total of [`HotRule::buffers`] over the instances
/// open at the same time, following the trace's opens and closes.
pub fn hot_set(trace_events: &[Event], instances: &[InstanceInfo]) -> u32 {
    let rule: HashMap<FileInstance, HotRule> = instances.iter().map(|i| (i.file, i.hot)).collect();
    let (mut open, mut most) = (0u32, 0u32);
    for event in trace_events {
        match event {
            Event::Open { file, .. } => {
                open += rule.get(file).map_or(1, |r| r.buffers());
                most = most.max(open);
            }
            Event::Close { file, .. } => open -= rule.get(file).map_or(1, |r| r.buffers()),
            Event::Ref { .. } => {}
        }
    }
    most
}

/// Disk operations of a query run alone with buffers enough never to re-read a page (D14).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DiskOps {
    /// Distinct pages of permanent files referenced.
    pub reads: u32,
    /// Distinct pages written that outlive the query (catalog and result; not the hash table).
    pub writes: u32,
}

/// Counts [`DiskOps`] of a trace (D14).
pub fn solo_disk_ops(trace: &QueryTrace) -> DiskOps {
    let (mut read, mut written) = (HashSet::new(), HashSet::new());
    for event in &trace.events {
        if let Event::Ref { page, write, .. } = event {
            if !is_temporary(page.relation) {
                read.insert(*page);
            }
            if *write && page.relation != HASH_TABLE {
                written.insert(*page);
            }
        }
    }
    DiskOps { reads: read.len() as u32, writes: written.len() as u32 }
}

/// Reads of a query run alone in one LRU pool of `frames` buffers (HOT's discipline): misses,
/// except the first reference to a page of a temporary file, which creates it (D8).
pub fn lru_reads(trace: &QueryTrace, frames: usize) -> u32 {
    let mut pool: VecDeque<PageRef> = VecDeque::new();
    let mut created = HashSet::new();
    let mut reads = 0;
    for event in &trace.events {
        if let Event::Ref { page, .. } = event {
            if let Some(at) = pool.iter().position(|p| p == page) {
                pool.remove(at);
            } else {
                if !is_temporary(page.relation) || !created.insert(*page) {
                    reads += 1;
                }
                if pool.len() == frames.max(1) {
                    pool.pop_back();
                }
            }
            pool.push_front(*page);
        }
    }
    reads
}

/// Table 2: CPU seconds, disk operations and hot-set size of each query.
pub fn table2(query: QueryType) -> (f64, u32, u32) {
    match query {
        QueryType::I => (0.53, 17, 3),
        QueryType::II => (0.67, 99, 3),
        QueryType::III => (2.95, 53, 5),
        QueryType::IV => (3.09, 120, 5),
        QueryType::V => (3.47, 55, 17),
        QueryType::VI => (3.50, 138, 24),
    }
}

/// The database and the query generators. Building it draws B's second attribute (D9).
#[derive(Clone, Debug)]
pub struct Workload {
    /// The values of B's nonclustered attribute, ascending: 10,000 distinct values drawn from
    /// `0..domain` (entry `e` of the index holds `values[e]`).
    values: Vec<u32>,
    /// The position in B of the tuple holding `values[e]`: a random permutation.
    position: Vec<u32>,
}

impl Default for Workload {
    fn default() -> Self {
        Self::new()
    }
}

/// Builds one trace: events with CPU work in units, scaled to µs at the end.
struct Builder {
    events: Vec<(Event, f64)>,
    work: f64,
    instances: Vec<InstanceInfo>,
    out_tuples: u32,
}

impl Builder {
    fn new() -> Self {
        Builder { events: Vec::new(), work: 0.0, instances: Vec::new(), out_tuples: 0 }
    }

    fn cpu(&mut self, units: f64) {
        self.work += units;
    }

    fn open(
        &mut self,
        relation: RelationId,
        pattern: &'static str,
        ls: LsSpec,
        hot: HotRule,
    ) -> FileInstance {
        let file = FileInstance(self.instances.len() as u16);
        self.instances.push(InstanceInfo { file, relation, pattern, ls, hot });
        self.cpu(CPU_MODEL.open);
        self.events.push((Event::Open { file, relation, ls_size: ls.size, policy: ls.policy }, self.work));
        file
    }

    fn touch(&mut self, file: FileInstance, page: u32, write: bool) {
        let relation = self.instances[file.0 as usize].relation;
        let page = PageRef { relation, page };
        self.events.push((Event::Ref { file, page, write, cpu_us: 0 }, self.work));
        self.cpu(CPU_MODEL.fix);
    }

    fn close(&mut self, file: FileInstance) {
        self.cpu(CPU_MODEL.open);
        self.events.push((Event::Close { file, cpu_us: 0 }, self.work));
    }

    /// The catalog phase (D7): read the descriptor of each file the query opens, and the result
    /// directory.
    fn catalog(&mut self, files: &[RelationId]) {
        let cat = self.open(CATALOG, "SS", single(), HotRule::Current);
        for rel in files {
            self.touch(cat, rel.0 as u32 - 1, false);
            self.cpu(CPU_MODEL.tuple);
        }
        self.touch(cat, RESULT_DIRECTORY_PAGE, false);
        self.close(cat);
    }

    /// Registers the result in the catalog at the end (one write).
    fn register_result(&mut self) {
        let cat = self.open(CATALOG, "SS", single(), HotRule::Current);
        self.touch(cat, RESULT_DIRECTORY_PAGE, true);
        self.close(cat);
    }

    fn emit(&mut self, out: FileInstance, per_page: u32) {
        self.cpu(CPU_MODEL.emit);
        self.touch(out, self.out_tuples / per_page, true);
        self.out_tuples += 1;
    }

    fn finish(self, query: QueryType) -> QueryTrace {
        let target_us = (table2(query).0 * 1e6).round() as u64;
        let total = self.work.max(f64::MIN_POSITIVE);
        let scale = |w: f64| ((w / total) * target_us as f64).round() as u64;
        let events: Vec<Event> = self
            .events
            .into_iter()
            .map(|(event, w)| match event {
                Event::Ref { file, page, write, .. } => Event::Ref { file, page, write, cpu_us: scale(w) },
                Event::Close { file, .. } => Event::Close { file, cpu_us: scale(w) },
                open => open,
            })
            .collect();
        let hot = hot_set(&events, &self.instances);
        QueryTrace { query, events, cpu_us: target_us, hot_set: hot }
    }
}

fn single() -> LsSpec {
    LsSpec { size: 1, policy: LocalPolicy::Single }
}

/// Opens the result file (SS, one buffer) and its instance.
fn open_result(b: &mut Builder) -> FileInstance {
    b.open(RESULT, "SS", single(), HotRule::Current)
}

/// The page holding tuple `t` of a data file.
fn page_of(tuple: u32) -> u32 {
    tuple / TUPLES_PER_PAGE
}

impl Workload {
    /// The database of Table 3 with B's nonclustered attribute drawn under [`DATABASE_SEED`].
    pub fn new() -> Self {
        let mut rng = SmallRng::seed_from_u64(DATABASE_SEED);
        let domain = (BIG_TUPLES as f64 / MATCH_IV).round() as usize;
        let mut values: Vec<u32> = rand::seq::index::sample(&mut rng, domain, BIG_TUPLES as usize)
            .iter()
            .map(|v| v as u32)
            .collect();
        values.sort_unstable();
        let mut position: Vec<u32> = (0..BIG_TUPLES).collect();
        position.shuffle(&mut rng);
        Workload { values, position }
    }

    /// The domain of B's nonclustered attribute (D11).
    pub fn domain(&self) -> u32 {
        (BIG_TUPLES as f64 / MATCH_IV).round() as u32
    }

    /// The trace of `query` with its own draws (selection ranges, probe keys, matches) under
    /// `seed`: the same query and seed give the same trace.
    pub fn trace(&self, query: QueryType, seed: u64) -> QueryTrace {
        self.trace_with_plan(query, seed).0
    }

    /// The trace and its plan's file instances (patterns and hot-set rules).
    pub fn trace_with_plan(&self, query: QueryType, seed: u64) -> (QueryTrace, Vec<InstanceInfo>) {
        let mut rng = SmallRng::seed_from_u64(seed ^ ((query as u64 + 1) << 56));
        let mut b = Builder::new();
        match query {
            QueryType::I => self.query_i(&mut b, &mut rng),
            QueryType::II => self.query_ii(&mut b, &mut rng),
            QueryType::III => self.query_iii(&mut b, &mut rng),
            QueryType::IV => self.query_iv(&mut b, &mut rng),
            QueryType::V => self.query_v(&mut b, &mut rng),
            QueryType::VI => self.query_vi(&mut b, &mut rng),
        }
        b.register_result();
        let instances = b.instances.clone();
        (b.finish(query), instances)
    }

    /// Opens A's clustered index and data (SH, then an SS scan of the range), and reads the index.
    fn clustered_range(b: &mut Builder) -> (FileInstance, FileInstance) {
        let idx = b.open(A_CLUSTERED, "SH", single(), HotRule::Current);
        let data = b.open(A_DATA, "SS", single(), HotRule::Current);
        b.touch(idx, 0, false);
        b.cpu(CPU_MODEL.search);
        (idx, data)
    }

    fn range_start(rng: &mut SmallRng, len: u32) -> u32 {
        rng.gen_range(0..=BIG_TUPLES - len)
    }

    /// Query I: Select(A) 1% through the clustered index (D12).
    fn query_i(&self, b: &mut Builder, rng: &mut SmallRng) {
        b.catalog(&[A_CLUSTERED, A_DATA]);
        let (idx, data) = Self::clustered_range(b);
        let out = open_result(b);
        let start = Self::range_start(rng, 100);
        for t in start..start + 100 {
            b.touch(data, page_of(t), false);
            b.cpu(CPU_MODEL.tuple);
            b.emit(out, TUPLES_PER_PAGE);
        }
        for f in [out, data, idx] {
            b.close(f);
        }
    }

    /// Query II: Select(B) 1% through the nonclustered index: 100 consecutive entries (D12).
    fn query_ii(&self, b: &mut Builder, rng: &mut SmallRng) {
        b.catalog(&[B_NONCLUSTERED, B_DATA]);
        let tree = nonclustered_tree();
        let idx = b.open(B_NONCLUSTERED, "H/SS", single(), HotRule::Current);
        let n = BIG_TUPLES as u64;
        let ir = LsSpec {
            size: ir_ls_size(n, data_pages(BIG_TUPLES) as u64, 100, BETA),
            policy: LocalPolicy::Any,
        };
        let data = b.open(B_DATA, "IR", ir, HotRule::Current);
        let out = open_result(b);
        let first = Self::range_start(rng, 100);
        b.touch(idx, 0, false);
        b.cpu(CPU_MODEL.search);
        for e in first..first + 100 {
            b.touch(idx, tree.page(1, (e / NONCLUSTERED_PER_LEAF) as u64), false);
            b.touch(data, page_of(self.position[e as usize]), false);
            b.cpu(CPU_MODEL.tuple);
            b.emit(out, TUPLES_PER_PAGE);
        }
        for f in [out, data, idx] {
            b.close(f);
        }
    }

    /// Query III: Select(A) 2% through the clustered index, index join with B on its clustered
    /// key: the keys arrive in order, so B's data pages are read in order (D12).
    fn query_iii(&self, b: &mut Builder, rng: &mut SmallRng) {
        b.catalog(&[A_CLUSTERED, A_DATA, B_CLUSTERED, B_DATA]);
        let (idx, data) = Self::clustered_range(b);
        let lh = LsSpec { size: lh_ls_size(&clustered_tree(), 200, BETA), policy: LocalPolicy::Lifo };
        let b_idx = b.open(B_CLUSTERED, "LH", lh, HotRule::Probes { nonleaf: 0 });
        let b_data = b.open(B_DATA, "SS", single(), HotRule::Current);
        let out = open_result(b);
        let start = Self::range_start(rng, 200);
        for t in start..start + 200 {
            b.touch(data, page_of(t), false);
            b.cpu(CPU_MODEL.tuple);
            b.touch(b_idx, 0, false);
            b.cpu(CPU_MODEL.search);
            b.touch(b_data, page_of(t), false);
            b.cpu(CPU_MODEL.tuple);
            b.emit(out, JOINED_PER_PAGE);
        }
        for f in [out, b_data, b_idx, data, idx] {
            b.close(f);
        }
    }

    /// Query IV: Select(A') 10% by a sequential scan, index join with B through its
    /// nonclustered index; a fraction [`MATCH_IV`] of the probes find a tuple (D11, D12).
    fn query_iv(&self, b: &mut Builder, rng: &mut SmallRng) {
        b.catalog(&[A_PRIME, B_NONCLUSTERED, B_DATA]);
        let tree = nonclustered_tree();
        let outer = b.open(A_PRIME, "SS", single(), HotRule::Current);
        let lh = LsSpec { size: lh_ls_size(&tree, 100, BETA), policy: LocalPolicy::Lifo };
        let idx = b.open(B_NONCLUSTERED, "LH", lh, HotRule::Probes { nonleaf: 1 });
        let matched = (100.0 * MATCH_IV).round() as u64;
        let ir = LsSpec {
            size: ir_ls_size(BIG_TUPLES as u64, data_pages(BIG_TUPLES) as u64, matched, BETA),
            policy: LocalPolicy::Any,
        };
        let data = b.open(B_DATA, "IR", ir, HotRule::Current);
        let out = open_result(b);
        // Probe keys: `matched` present entries, the rest absent values, in random order.
        let mut probes: Vec<(usize, bool)> =
            rand::seq::index::sample(rng, BIG_TUPLES as usize, matched as usize)
                .iter()
                .map(|e| (e, true))
                .collect();
        let mut absent = HashSet::new();
        while probes.len() < 100 {
            let x = rng.gen_range(0..self.domain());
            if self.values.binary_search(&x).is_err() && absent.insert(x) {
                let e = self.values.partition_point(|v| *v < x).min(BIG_TUPLES as usize - 1);
                probes.push((e, false));
            }
        }
        probes.shuffle(rng);
        let mut selected = rand::seq::index::sample(rng, A_PRIME_TUPLES as usize, 100).into_vec();
        selected.sort_unstable();
        let mut next = 0;
        for t in 0..A_PRIME_TUPLES {
            b.touch(outer, page_of(t), false);
            b.cpu(CPU_MODEL.tuple);
            if selected.get(next) != Some(&(t as usize)) {
                continue;
            }
            let (e, hit) = probes[next];
            next += 1;
            b.touch(idx, 0, false);
            b.cpu(CPU_MODEL.search);
            b.touch(idx, tree.page(1, (e as u32 / NONCLUSTERED_PER_LEAF) as u64), false);
            b.cpu(CPU_MODEL.search);
            if hit {
                b.touch(data, page_of(self.position[e]), false);
                b.cpu(CPU_MODEL.tuple);
                b.emit(out, JOINED_PER_PAGE);
            }
        }
        for f in [out, data, idx, outer] {
            b.close(f);
        }
    }

    /// Query V: Select(A) 3% through the clustered index, nested loops over B' (scanned a page
    /// at a time for each outer tuple); a fraction [`MATCH_V`] of the outer tuples match one
    /// B' tuple each (D11, D12).
    fn query_v(&self, b: &mut Builder, rng: &mut SmallRng) {
        b.catalog(&[A_CLUSTERED, A_DATA, B_PRIME]);
        let (idx, data) = Self::clustered_range(b);
        let inner_pages = data_pages(B_PRIME_TUPLES);
        let ls = LsSpec { size: inner_pages, policy: LocalPolicy::Mru };
        let inner = b.open(B_PRIME, "LS", ls, HotRule::Loop { pages: inner_pages });
        let out = open_result(b);
        let start = Self::range_start(rng, 300);
        let matched = (300.0 * MATCH_V).round() as usize;
        let mut partner: Vec<Option<u32>> = vec![None; 300];
        for i in rand::seq::index::sample(rng, 300, matched).iter() {
            partner[i] = Some(rng.gen_range(0..B_PRIME_TUPLES));
        }
        for (i, t) in (start..start + 300).enumerate() {
            b.touch(data, page_of(t), false);
            b.cpu(CPU_MODEL.tuple);
            for p in 0..inner_pages {
                b.touch(inner, p, false);
                let on_page = (B_PRIME_TUPLES - p * TUPLES_PER_PAGE).min(TUPLES_PER_PAGE);
                b.cpu(CPU_MODEL.compare * on_page as f64);
                if partner[i].is_some_and(|m| page_of(m) == p) {
                    b.emit(out, JOINED_PER_PAGE);
                }
            }
        }
        for f in [out, inner, data, idx] {
            b.close(f);
        }
    }

    /// Query VI: Select(A) 4% through the clustered index into a hash table of 20 one-page
    /// buckets (20 tuples each, in random order), then a scan of A' probing it; a fraction [`MATCH_VI`] of the A'
    /// tuples match (D11, D12).
    fn query_vi(&self, b: &mut Builder, rng: &mut SmallRng) {
        b.catalog(&[A_CLUSTERED, A_DATA, A_PRIME]);
        let (idx, data) = Self::clustered_range(b);
        let accesses = 400 + A_PRIME_TUPLES as u64;
        let ir =
            LsSpec { size: ir_ls_size(400, HASH_BUCKETS as u64, accesses, BETA), policy: LocalPolicy::Any };
        let table = b.open(HASH_TABLE, "IR", ir, HotRule::Table { pages: HASH_BUCKETS });
        let probe = b.open(A_PRIME, "SS", single(), HotRule::Current);
        let out = open_result(b);
        let start = Self::range_start(rng, 400);
        // D12: the hash function scatters the 400 keys over the buckets independently of their
        // order, exactly 20 to a bucket (a one-page bucket holds 22 tuples).
        let mut bucket_of: Vec<u32> = (0..400).map(|i| i % HASH_BUCKETS).collect();
        bucket_of.shuffle(rng);
        for t in start..start + 400 {
            b.touch(data, page_of(t), false);
            b.cpu(CPU_MODEL.tuple + CPU_MODEL.hash);
            b.touch(table, bucket_of[(t - start) as usize], true);
        }
        let matched = (A_PRIME_TUPLES as f64 * MATCH_VI).round() as usize;
        let hits: HashSet<usize> =
            rand::seq::index::sample(rng, A_PRIME_TUPLES as usize, matched).iter().collect();
        for t in 0..A_PRIME_TUPLES {
            b.touch(probe, page_of(t), false);
            b.cpu(CPU_MODEL.tuple + CPU_MODEL.hash);
            let bucket = if hits.contains(&(t as usize)) {
                bucket_of[rng.gen_range(0..400)]
            } else {
                rng.gen_range(0..HASH_BUCKETS)
            };
            b.touch(table, bucket, false);
            b.cpu(CPU_MODEL.compare * (400 / HASH_BUCKETS) as f64);
            if hits.contains(&(t as usize)) {
                b.emit(out, JOINED_PER_PAGE);
            }
        }
        for f in [out, probe, table, data, idx] {
            b.close(f);
        }
    }
}

/// Yao's estimate of the distinct data pages of B touched by `k` random tuples (for the docs'
/// derivations and the calibration table).
pub fn big_relation_pages_touched(k: u64) -> f64 {
    yao(BIG_TUPLES as u64, data_pages(BIG_TUPLES) as u64, k)
}

#[cfg(test)]
mod tests;
