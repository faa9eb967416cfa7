//! The multiuser buffer simulator of Chou & DeWitt (1986): the query locality set model
//! (QLSM), DBMIN and the algorithms it was compared with, in a hybrid simulation where
//! single-query reference traces are merged into a closed multiuser workload on one simulated
//! CPU and one disk (README "DBMIN"). This file holds the types shared by the workload side
//! (reference patterns, the six queries, their traces) and the simulation side (buffer
//! managers, CPU and disk, experiments).

pub mod patterns;
pub mod queries;

/// How a locality set's pages are replaced, as a file-open event names it (QLSM, Sec. 3.2).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LocalPolicy {
    /// One buffer, overwritten by each new page (straight sequential and hierarchical).
    Single,
    /// First in, first out (clustered sequential / random).
    Fifo,
    /// Least recently used (clustered sequential / random; HOT's pools).
    Lru,
    /// Most recently used (looping sequential).
    Mru,
    /// Last in, first out (looping hierarchical when only the root is worth keeping).
    Lifo,
    /// Any policy does (independent random): the simulator uses FIFO.
    Any,
    /// Looping hierarchical with levels below the root worth keeping (Sec. 3.2.7): the upper
    /// levels stay resident and the rest cycles through a scratch buffer. An index file's pages
    /// are numbered level by level from the root, so the victim is the highest-numbered page
    /// other than the one requested (decision D4).
    Hierarchical,
}

/// A relation of the Wisconsin-like database (Table 3): its pages are numbered from 0.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelationId(pub u16);

/// A page of one relation (or of one of its indexes or hash files: each is its own
/// `RelationId`), in one copy of the database: copies are chosen by the simulator per query
/// from the sharing level, so traces name only the relation and the page.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageRef {
    /// The file.
    pub relation: RelationId,
    /// The page within it.
    pub page: u32,
}

/// A file instance of one query: the unit that owns a locality set (Sec. 3.2). Numbered from
/// 0 within a query trace.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileInstance(pub u16);

/// One event of a single-query trace (Sec. 4.2.3); CPU times are the query's virtual time,
/// in microseconds since it started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A file instance is opened, with its locality set's size and policy.
    Open {
        /// The instance.
        file: FileInstance,
        /// The file it reads.
        relation: RelationId,
        /// Desired locality set size in pages (DBMIN's `l`), at least 1.
        ls_size: u32,
        /// Its local policy.
        policy: LocalPolicy,
    },
    /// A page reference through an open instance.
    Ref {
        /// The instance.
        file: FileInstance,
        /// The page.
        page: PageRef,
        /// Whether the page is changed (released dirty pages are written asynchronously).
        write: bool,
        /// The query's CPU time when it makes the reference, µs.
        cpu_us: u64,
    },
    /// A file instance is closed: its locality set is released.
    Close {
        /// The instance.
        file: FileInstance,
        /// The query's CPU time at the close, µs.
        cpu_us: u64,
    },
}

/// The six query types of Tables 1–3.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueryType {
    /// Select(A), 1%, clustered index.
    I,
    /// Select(B), 1%, non-clustered index.
    II,
    /// Select(A) 2% ⋈ B, index join on B's clustered index.
    III,
    /// Select(A') 10% by sequential scan ⋈ B, index join on B's non-clustered index.
    IV,
    /// Select(A) 3% ⋈ B', nested loops over B'.
    V,
    /// Select(A) 4% ⋈ A', hash join.
    VI,
}

impl QueryType {
    /// All six, in order.
    pub const ALL: [QueryType; 6] =
        [QueryType::I, QueryType::II, QueryType::III, QueryType::IV, QueryType::V, QueryType::VI];
}

/// The trace of one query run alone: events in order, plus what the simulator and the checks
/// need to know about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryTrace {
    /// Which query.
    pub query: QueryType,
    /// Events: every `Ref` and `Close` names an instance opened before and not yet closed;
    /// CPU times never decrease; every instance is closed by the end.
    pub events: Vec<Event>,
    /// Total CPU time of the query, µs (the last event's time or later).
    pub cpu_us: u64,
    /// Its hot set size (Sacco & Schkolnick; Table 2), for HOT.
    pub hot_set: u32,
}

pub mod managers;
pub mod simulator;
