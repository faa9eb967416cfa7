//! Foster B-tree operations over the buffer pool (rules T1–T9 of `README.md`).

use crate::error::{Result, TreeError};
use crate::log::{ChangeLog, LeafChange, NodeChange, Overflow, PageChange};
use crate::node::{self, FOSTER_SWIP};
use crate::optimistic::{Reached, Root};
use crate::overflow::{self, Chain};
use crate::owner::max_key_len;
use std::sync::Arc;
use swizzledb_buffer::page::{self, HEADER_SIZE};
use swizzledb_buffer::{
    BufferError, BufferPool, Exclusive, ExclusiveGuard, FrameId, LatchKind, PageGuard, PageId, Shared,
    SharedGuard, Swip, SwipTarget,
};
use swizzledb_sync::Lsn;

/// How long [`Tree::with_room`] keeps running an operation again that runs out of frames although
/// room was made for it each time, before it declares the pool exhausted: such an operation
/// needs more frames latched at once than the pool has, and would run again for good.
pub(crate) const ROOM_RETRY_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A Foster B-tree stored in a buffer pool. Cheap to clone; all clones share the tree.
#[derive(Clone)]
pub struct Tree {
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) root: FrameId,
    root_page: PageId,
    /// On a logged database, where `insert`, `upsert` and `delete` go instead (T14).
    auto_commit: Option<Arc<dyn AutoCommit>>,
    /// What decides whether this handle's plain reads may return a record (T18); `None`: all.
    pub(crate) read_gate: Option<Arc<dyn ReadGate + Send + Sync>>,
    /// The longest value the engine's log takes in one record (T22; `usize::MAX`: no log).
    pub(crate) value_limit: usize,
    /// Set when the tree is dropped (T25); shared by every clone of the handle.
    dropped: Arc<std::sync::atomic::AtomicBool>,
}

/// How a tree's own writes (`insert`, `upsert`, `delete`) are carried out on a database that
/// logs every change (T11, T14): the engine runs each as a transaction of its own, through the
/// logged writes ([`Tree::put_logged`], [`Tree::delete_logged`]) of the tree it is given.
pub trait AutoCommit: Send + Sync {
    /// `insert` (`replace` false) or `upsert` (true) of `key` in `tree`.
    ///
    /// # Errors
    /// As the tree's write, or the transaction around it failed.
    fn put(&self, tree: &Tree, key: &[u8], value: &[u8], replace: bool) -> Result<bool>;

    /// `delete` of `key` in `tree`.
    ///
    /// # Errors
    /// As the tree's write, or the transaction around it failed.
    fn delete(&self, tree: &Tree, key: &[u8]) -> Result<bool>;

    /// [`Tree::compare_and_swap`] of `key` in `tree`, atomic against every other writer (T24).
    ///
    /// # Errors
    /// As the tree's write, or the transaction around it failed.
    fn compare_and_swap(
        &self,
        tree: &Tree,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<std::result::Result<(), crate::error::CompareAndSwapError>>;
}

/// Decides whether a read may return what a leaf holds for a key (T18). The engine implements
/// it twice: outside a transaction it holds back records with uncommitted changes; in a
/// transaction it takes the key's shared lock.
pub trait ReadGate {
    /// Whether `key` (`None`: the end of the tree) may be read now. Called with the leaf that
    /// holds the key (for `None`, the last leaf) latched shared, so it must neither wait nor
    /// latch. `Ok(false)`: the reader unlatches, calls [`ReadGate::wait`], and reads afresh.
    ///
    /// # Errors
    /// The read must fail (e.g. a lock refused to a deadlock's victim).
    fn try_pass(&self, tree: &Tree, key: Option<&[u8]>) -> Result<bool>;

    /// Waits, with no latch held, until `key` may be tried again.
    ///
    /// # Errors
    /// The wait failed or timed out; the read fails with it.
    fn wait(&self, tree: &Tree, key: Option<&[u8]>) -> Result<()>;

    /// Whether a key that passed stays passable until the reader is done (a lock held to the
    /// end of the transaction). A reverse scan then need not check a gap's closing key again.
    fn holds(&self) -> bool {
        false
    }

    /// Whether the gate checks anything. The open gate ([`NoGate`]) lets scans skip the closing
    /// keys altogether.
    fn checks(&self) -> bool {
        true
    }
}

/// The gate that lets everything pass: a read returns whatever the leaf holds, uncommitted
/// changes included. The default of an unlogged database's handles, and what a transaction
/// uses for a key whose lock it already holds.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoGate;

impl ReadGate for NoGate {
    fn try_pass(&self, _: &Tree, _: Option<&[u8]>) -> Result<bool> {
        Ok(true)
    }

    fn wait(&self, _: &Tree, _: Option<&[u8]>) -> Result<()> {
        Ok(())
    }

    fn checks(&self) -> bool {
        false
    }
}

/// Decides whether a writer may add a key to a gap, or widen one by removing a key, given the
/// gap's closing key (T28): the engine's record locks (next-key locking).
pub trait GapGate {
    /// Whether the write may go on, `next` being the closing key (`None`: the end of the tree).
    /// Called with the leaf latched exclusively, so it must neither wait nor latch. `Ok(false)`:
    /// the writer unlatches, calls [`GapGate::wait`], and starts afresh.
    ///
    /// # Errors
    /// The write must fail (e.g. a lock refused to a deadlock's victim); nothing changed.
    fn try_pass(&self, tree: &Tree, next: Option<&[u8]>) -> Result<bool>;

    /// Waits, with no latch held, until `next` may be tried again.
    ///
    /// # Errors
    /// The wait failed or timed out; the write fails with it, nothing changed.
    fn wait(&self, tree: &Tree, next: Option<&[u8]>) -> Result<()>;

    /// The closing key lies in a later leaf: no key lies between the write's key and
    /// `own_high`, the latched leaf's upper bound (its foster key, else its high fence), and
    /// the closing key is the first key at or after `own_high`. Called under the leaf's
    /// exclusive latch, so it must neither wait nor latch. `true`: the write goes on (the gate
    /// holds that closing key's lock already, or needs none); `false` (the default): the write
    /// returns [`Gated::Beyond`], nothing changed.
    fn beyond(&self, own_high: &[u8]) -> bool {
        let _ = own_high;
        false
    }

    /// Whether every gap passes now without a look at its closing key (T28: asked first,
    /// under the leaf's exclusive latch, so it must neither wait nor latch). `true` skips
    /// finding the closing key and [`GapGate::try_pass`]; `false` (the default) asks them.
    fn passes_every_gap(&self) -> bool {
        false
    }
}

/// The outcome of a gated write (T28).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gated<T> {
    /// The write was made (or found nothing to do), with the gate's consent where it needed it.
    Done(T),
    /// The gap's closing key lies beyond the key's leaf: nothing was asked and nothing changed;
    /// the caller finds and locks the closing key itself.
    Beyond,
}

/// One latched visit of a gated write.
pub(crate) enum Visit<T> {
    Done(T),
    Beyond,
    /// The gate refused this closing key.
    Refused(Option<Vec<u8>>),
}

/// Where the closing key of the gap before slot `i` of a leaf lies.
enum Closing<'a> {
    /// In the leaf (`Some`), or the end of the tree (`None`: the leaf's range ends there).
    In(Option<&'a [u8]>),
    /// In a later leaf.
    Beyond,
}

/// The result of a visit made without a gate, which always ends it `Done`.
pub(crate) fn ungated<T>(visit: Visit<T>) -> T {
    match visit {
        Visit::Done(r) => r,
        Visit::Beyond | Visit::Refused(_) => unreachable!("T28: a visit without a gate asks nothing"),
    }
}

fn closing_key(leaf: &[u8], i: usize) -> Closing<'_> {
    if i < node::count(leaf) {
        Closing::In(Some(node::key(leaf, i)))
    } else if node::own_high(leaf).is_none() {
        Closing::In(None)
    } else {
        Closing::Beyond
    }
}

/// Node fill below which a delete tries to merge the node with a sibling.
fn underfull(page: &[u8]) -> bool {
    node::used_bytes(page) < node::capacity(page.len()) / 4
}

/// Whether removing record `i` leaves `page` [`underfull`] (known before the removal, so that
/// the removal's record can say whether maintenance follows it, T11).
fn underfull_without(page: &[u8], i: usize) -> bool {
    node::used_bytes_without(page, i) < node::capacity(page.len()) / 4
}

/// Largest combined fill for merging two nodes into one.
/// T9: what a failed maintenance pass means for the operation that ran it. Running short of
/// frames only ends the pass (the tree is valid either way, and retrying the operation would
/// repeat its change). For a logged operation an I/O error, damage or a failed log is the
/// operation's error, although its own change is made (and logged): the caller — an
/// auto-commit or transaction rolling back, a restart — must hear that the disk or the log
/// failed, and its rollback takes the change back. An unlogged operation has no rollback: its
/// change stands, so it succeeds, as a pass that gave up would leave it.
fn maintenance(pass: Result<()>, log: Log<'_>) -> Result<()> {
    match pass {
        Err(TreeError::Buffer(BufferError::PoolExhausted { .. })) => Ok(()),
        Err(_) if log.is_none() => Ok(()),
        other => other,
    }
}

fn fits_merged(a: &[u8], b: &[u8]) -> bool {
    node::used_bytes(a) + node::used_bytes(b) <= node::capacity(a.len()) * 3 / 4
}

/// The log a tree operation reports to (T11); `None` when logging is off.
type Log<'l> = Option<&'l dyn ChangeLog>;

/// Reports a structure change to the log (T13), if there is one; the caller stamps the LSN
/// into the pages with [`stamp`].
fn log_structure(log: Log<'_>, pages: &[PageChange<'_, '_>], freed: &[PageId]) -> Result<Option<Lsn>> {
    log.map(|log| log.structure_change(pages, freed).map_err(TreeError::Log)).transpose()
}

/// Sets a logged page's LSN (T12).
fn stamp(lsn: Option<Lsn>, g: &mut ExclusiveGuard<'_>) {
    if let Some(lsn) = lsn {
        g.set_page_lsn(lsn);
    }
}

/// Logs a change to a leaf record before it is applied and stamps its LSN (T11); `last`: the
/// operation's last change ([`ChangeLog::last_leaf_change`]).
fn log_leaf(
    log: Log<'_>,
    last: bool,
    tree: PageId,
    leaf: &mut ExclusiveGuard<'_>,
    change: &LeafChange<'_>,
    overflow: Overflow<'_, '_>,
) -> Result<Option<Lsn>> {
    let Some(log) = log else { return Ok(None) };
    let lsn = leaf_record(log, last, tree, leaf, change, overflow)?;
    stamp(Some(lsn), leaf);
    Ok(Some(lsn))
}

/// `log`'s record of a leaf change, through [`ChangeLog::last_leaf_change`] if it is the
/// operation's `last` (T11).
fn leaf_record(
    log: &dyn ChangeLog,
    last: bool,
    tree: PageId,
    leaf: &ExclusiveGuard<'_>,
    change: &LeafChange<'_>,
    overflow: Overflow<'_, '_>,
) -> Result<Lsn> {
    let lsn = if last {
        log.last_leaf_change(tree, leaf, change, overflow)
    } else {
        log.leaf_change(tree, leaf, change, overflow)
    };
    lsn.map_err(TreeError::Log)
}

impl Tree {
    /// Creates an empty tree (one empty leaf as root) and records its root page; the caller
    /// records it in the catalog.
    ///
    /// # Errors
    /// No frame for the root.
    pub fn create(pool: &Arc<BufferPool>) -> Result<Tree> {
        Tree::create_logged(pool, None)
    }

    /// [`Tree::create`], logging the new root's contents as a structure change (T13).
    ///
    /// # Errors
    /// No frame for the root, or the log failed.
    pub fn create_logged(pool: &Arc<BufferPool>, log: Option<&dyn ChangeLog>) -> Result<Tree> {
        if pool.is_read_only() {
            return Err(TreeError::ReadOnly);
        }
        pool.before_change()?;
        let mut g = pool.allocate_page()?;
        node::init(&mut g, 0, None, None);
        let lsn = log_structure(log, &[(&g, None)], &[])?;
        stamp(lsn, &mut g);
        pool.make_root(&g);
        let (root, root_page) = (g.frame(), g.page_id());
        drop(g);
        Ok(Tree {
            pool: Arc::clone(pool),
            root,
            root_page,
            auto_commit: None,
            read_gate: None,
            value_limit: usize::MAX,
            dropped: Arc::default(),
        })
    }

    /// Opens the tree rooted at `root_page`, keeping the root resident.
    ///
    /// # Errors
    /// I/O errors or corruption of the root (or, in main-memory mode, of any page).
    pub fn open(pool: &Arc<BufferPool>, root_page: PageId) -> Result<Tree> {
        let root = pool.load_root(root_page)?;
        Ok(Tree {
            pool: Arc::clone(pool),
            root,
            root_page,
            auto_commit: None,
            read_gate: None,
            value_limit: usize::MAX,
            dropped: Arc::default(),
        })
    }

    /// This handle's own writes (`insert`, `upsert`, `delete`) go through `auto_commit`, which
    /// runs each as a logged transaction (T14): for a database whose every change is logged.
    #[must_use]
    pub fn with_auto_commit(mut self, auto_commit: Arc<dyn AutoCommit>) -> Tree {
        self.auto_commit = Some(auto_commit);
        self
    }

    /// This handle's plain reads (`get`, `get_with`, `range`, `range_rev`) pass `gate` (T18):
    /// the engine gives a logged database's handles one that holds back uncommitted records.
    #[must_use]
    pub fn with_read_gate(mut self, gate: Arc<dyn ReadGate + Send + Sync>) -> Tree {
        self.read_gate = Some(gate);
        self
    }

    /// The gate of this handle's plain reads (T18).
    /// What an optimistic descent (T20, T21) needs of the tree: its pool and root.
    pub(crate) fn optimistic(&self) -> Root<'_> {
        Root { pool: &self.pool, root: self.root }
    }

    pub(crate) fn own_gate(&self) -> &(dyn ReadGate + Sync + '_) {
        match &self.read_gate {
            Some(g) => &**g,
            None => &NoGate,
        }
    }

    /// [`TreeError::Closed`] once the database (its pool) is closed (T15).
    #[inline]
    /// T31: [`Tree::check_open`], and the pool takes writes.
    pub(crate) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.pool.is_read_only() {
            return Err(TreeError::ReadOnly);
        }
        self.pool.before_change()?;
        Ok(())
    }

    /// T15 for a write: [`Tree::check_open`], then the pool counts the write in flight until
    /// the guard drops, so that the pool's `close` flushes after it (buffer README B22). Held
    /// for one visit's worth of work, never across a wait for a lock.
    pub(crate) fn begin_write(&self) -> Result<swizzledb_buffer::WriteGuard<'_>> {
        self.check_open()?;
        self.pool.begin_write().ok_or(TreeError::Closed)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.pool.is_closed() {
            return Err(TreeError::Closed);
        }
        if self.dropped.load(std::sync::atomic::Ordering::Acquire) {
            return Err(TreeError::Dropped);
        }
        Ok(())
    }

    /// T25: `found` — a leaf latched, or a value read through validated views — unless the tree
    /// was dropped meanwhile, then [`TreeError::Dropped`]. `destroy` sets the flag before it
    /// latches any page, and a page it freed (and a tree made since may have taken) is latched
    /// or validated only after the latch it was freed under was released, so with the flag
    /// still clear the leaf is this tree's, with its records; with the flag set it may be
    /// emptied, free, or another tree's. Errors go the same way: a descent through freed pages
    /// may find them malformed.
    pub(crate) fn unless_dropped<T>(&self, found: Result<T>) -> Result<T> {
        if self.is_dropped() {
            return Err(TreeError::Dropped);
        }
        found
    }

    /// The root latched in mode `M` (buffer README B5), or [`TreeError::Dropped`] if the tree
    /// was dropped meanwhile (T25): its frame may then be free, or hold another tree's page,
    /// and nothing below it is this tree's.
    pub(crate) fn fix_own_root<M: LatchKind>(&self) -> Result<PageGuard<'_, M>> {
        let g = self.pool.fix_root(self.root);
        self.unless_dropped(Ok(g))
    }

    /// The root's page id (stable for the tree's life: the root grows in place, T7).
    #[must_use]
    pub fn root_page(&self) -> PageId {
        self.root_page
    }

    /// The pool holding the tree.
    #[must_use]
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// Runs a tree operation, retrying it after freeing frames with no latch held when it ran out
    /// of frames while holding latches (B13; every intermediate state is a valid tree, T6).
    /// Other threads' latches can pin frames for a moment, so retries back off for up to about
    /// two seconds before the pool is declared exhausted. An operation that keeps running out
    /// although room is made each time — one that needs more frames latched at once than the
    /// pool has — is declared exhausted once [`ROOM_RETRY_LIMIT`] has passed since its first
    /// attempt ran out.
    pub(crate) fn with_room<R>(&self, mut op: impl FnMut() -> Result<R>) -> Result<R> {
        let mut waited = std::time::Duration::ZERO;
        let mut pause = std::time::Duration::from_micros(50);
        let mut first_out: Option<std::time::Instant> = None;
        loop {
            match op() {
                Err(TreeError::Buffer(e @ BufferError::PoolExhausted { .. })) => {
                    if first_out.get_or_insert_with(std::time::Instant::now).elapsed() >= ROOM_RETRY_LIMIT {
                        return Err(e.into());
                    }
                }
                r => return r,
            }
            match self.pool.make_room() {
                Ok(()) => {}
                Err(BufferError::PoolExhausted { .. }) if waited < std::time::Duration::from_secs(2) => {
                    std::thread::sleep(pause);
                    waited += pause;
                    pause = (pause * 2).min(std::time::Duration::from_millis(50));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    pub(crate) fn check_sizes(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let ps = self.pool.page_size();
        if key.len() > max_key_len(ps) {
            return Err(TreeError::KeyTooLarge { len: key.len(), max: max_key_len(ps) });
        }
        // The tree's own limit (pool and log) only matters for a value too long for its leaf.
        if overflow::is_large(ps, value.len()) && value.len() > self.max_value_len() {
            return Err(TreeError::ValueTooLarge { len: value.len(), max: self.max_value_len() });
        }
        Ok(())
    }

    // ------------------------------------------------------------------------------------------
    // Descent
    // ------------------------------------------------------------------------------------------

    /// One step of a descent (T2, T16): the child (or, at `FOSTER_SWIP`, the foster child) of
    /// `parent`, refused as `Damaged` — before it is latched — if its swip names the parent
    /// itself, and after if its level is not one below the parent's (the foster child's: the
    /// same), or if a foster child's low fence is not its foster parent's foster key. Levels
    /// fall and, along a foster chain, low fences rise strictly (T17 keeps a foster key above
    /// its node's low fence), so no descent meets a page twice: a damaged page that points back
    /// up the tree or around a foster chain ends the descent instead of looping or waiting on a
    /// latch the descent holds.
    fn step<'a, P: LatchKind, C: LatchKind>(
        &'a self,
        parent: &mut PageGuard<'a, P>,
        off: usize,
    ) -> Result<PageGuard<'a, C>> {
        let damaged = |page: PageId, reason: String| TreeError::Damaged { page, reason };
        let level = node::level(parent);
        let foster = off == FOSTER_SWIP;
        if !foster && level == 0 {
            return Err(damaged(parent.page_id(), "a leaf was asked for a child".into()));
        }
        let raw = page::get_u64(parent, off);
        if let Some(SwipTarget::Page(id)) = Swip::from_raw(raw).map(Swip::target) {
            if id == parent.page_id() {
                return Err(damaged(
                    parent.page_id(),
                    format!("the swip at offset {off} names the page itself"),
                ));
            }
        }
        let child = self.pool.fix_child::<P, C>(parent, off)?;
        let want = if foster { level } else { level - 1 };
        if !matches!(page::page_type(&child), Some(page::PageType::Leaf | page::PageType::Inner)) {
            return Err(damaged(
                child.page_id(),
                format!(
                    "a {:?} page reached as a node from page {}",
                    page::page_type(&child),
                    parent.page_id()
                ),
            ));
        }
        if node::level(&child) != want {
            return Err(damaged(
                child.page_id(),
                format!(
                    "level {} reached from page {} at level {level} (expected {want})",
                    node::level(&child),
                    parent.page_id()
                ),
            ));
        }
        if foster && node::low_fence(&child) != node::foster_key(parent) {
            return Err(damaged(
                child.page_id(),
                format!(
                    "foster child of page {} with a low fence other than its foster key",
                    parent.page_id()
                ),
            ));
        }
        Ok(child)
    }

    /// The leaf holding `key`, latched shared: optimistically through the inner nodes (T20),
    /// else by lock coupling from the root (T8). [`TreeError::Dropped`] if the tree was dropped
    /// meanwhile (T25).
    pub(crate) fn leaf_shared(&self, key: &[u8]) -> Result<SharedGuard<'_>> {
        self.unless_dropped(self.descend_shared(key))
    }

    fn descend_shared(&self, key: &[u8]) -> Result<SharedGuard<'_>> {
        let mut g: SharedGuard<'_> = match self.optimistic().descend::<Shared>(key)? {
            Some(Reached::Leaf(g) | Reached::Inner(g)) => g,
            None => self.fix_own_root()?,
        };
        loop {
            let off = if node::goes_to_foster(&g, key) {
                FOSTER_SWIP
            } else if node::is_leaf(&g) {
                return Ok(g);
            } else {
                node::child_swip_off(&g, node::child_index(&*g, key))
            };
            g = self.step::<Shared, Shared>(&mut g, off)?;
        }
    }

    /// The leaf holding the greatest keys below `bound` (`None` = +inf), latched shared: the
    /// leaf L with L.low < bound <= L's own upper bound (T1). [`TreeError::Dropped`] if the tree
    /// was dropped meanwhile (T25).
    pub(crate) fn leaf_before(&self, bound: Option<&[u8]>) -> Result<SharedGuard<'_>> {
        self.unless_dropped(self.descend_before(bound))
    }

    fn descend_before(&self, bound: Option<&[u8]>) -> Result<SharedGuard<'_>> {
        let mut g: SharedGuard<'_> = self.fix_own_root()?;
        loop {
            let to_foster = match (node::foster_key(&g), bound) {
                (Some(fk), Some(b)) => b > fk,
                (Some(_), None) => true,
                (None, _) => false,
            };
            let off = if to_foster {
                FOSTER_SWIP
            } else if node::is_leaf(&g) {
                return Ok(g);
            } else {
                node::child_swip_off(&g, node::child_before(&g, bound))
            };
            g = self.step::<Shared, Shared>(&mut g, off)?;
        }
    }

    /// The leaf holding `key`, latched exclusively; inner nodes read optimistically (T20) or
    /// latched shared. Also tells whether a foster child was passed, which calls for adoption
    /// (T9). [`TreeError::Dropped`] if the tree was dropped meanwhile (T25).
    pub(crate) fn leaf_exclusive(&self, key: &[u8]) -> Result<(ExclusiveGuard<'_>, bool)> {
        // T31: every change of a leaf latches it here first (its callers checked the tree is
        // open already).
        if self.pool.is_read_only() {
            return Err(TreeError::ReadOnly);
        }
        // Buffer F11: an unlogged file that says CLEAN stops saying so before the change.
        self.pool.before_change()?;
        self.unless_dropped(self.descend_exclusive(key))
    }

    fn descend_exclusive(&self, key: &[u8]) -> Result<(ExclusiveGuard<'_>, bool)> {
        let mut saw_foster = false;
        let root: SharedGuard<'_> = match self.optimistic().descend::<Exclusive>(key)? {
            Some(Reached::Leaf(leaf)) => return self.foster_walk(leaf, key, false),
            // An inner node with a foster child, or whose next swip is a page id.
            Some(Reached::Inner(g)) => {
                saw_foster = node::has_foster(&g);
                g
            }
            None => self.fix_own_root()?,
        };
        let mut g = if node::is_leaf(&root) {
            drop(root);
            let x: ExclusiveGuard<'_> = self.fix_own_root()?;
            if node::is_leaf(&x) {
                return self.foster_walk(x, key, saw_foster);
            }
            x.downgrade()
        } else {
            root
        };
        loop {
            if node::goes_to_foster(&g, key) {
                saw_foster = true;
                g = self.step::<Shared, Shared>(&mut g, FOSTER_SWIP)?;
                continue;
            }
            let off = node::child_swip_off(&g, node::child_index(&*g, key));
            if node::level(&g) == 1 {
                let leaf = self.step::<Shared, Exclusive>(&mut g, off)?;
                drop(g);
                return self.foster_walk(leaf, key, saw_foster);
            }
            g = self.step::<Shared, Shared>(&mut g, off)?;
            saw_foster |= node::has_foster(&g);
        }
    }

    fn foster_walk<'a>(
        &'a self,
        mut x: ExclusiveGuard<'a>,
        key: &[u8],
        mut saw_foster: bool,
    ) -> Result<(ExclusiveGuard<'a>, bool)> {
        while node::goes_to_foster(&x, key) {
            saw_foster = true;
            x = self.step::<Exclusive, Exclusive>(&mut x, FOSTER_SWIP)?;
        }
        saw_foster |= node::has_foster(&x);
        Ok((x, saw_foster))
    }

    // ------------------------------------------------------------------------------------------
    // Point operations
    // ------------------------------------------------------------------------------------------

    /// The value stored under `key`.
    ///
    /// # Errors
    /// I/O errors or corruption.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(key, |v| v.map(<[u8]>::to_vec))
    }

    /// Calls `f` with the value stored under `key` (or `None`) while the leaf is latched, without
    /// copying the value (a large value is gathered from its overflow pages first, T22).
    ///
    /// # Errors
    /// I/O errors or corruption.
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R> {
        self.get_gated(key, self.own_gate(), f)
    }

    /// [`Tree::get_with`] through `gate` instead of the handle's own (T18): `f` runs, with the
    /// leaf latched, once the gate lets `key` pass.
    ///
    /// # Errors
    /// I/O errors, corruption, or the gate's.
    pub fn get_gated<R>(
        &self,
        key: &[u8],
        gate: &dyn ReadGate,
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R> {
        self.check_open()?;
        if !gate.checks() {
            // T21: a copy of the value, read with no latch, when the pool allows it. The buffer
            // is the thread's, taken for the call (so `f` may read again).
            thread_local! {
                static VALUE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
            }
            let mut value = VALUE.take();
            if let Some(found) = self.optimistic().get(key, &mut value) {
                if self.is_dropped() {
                    VALUE.set(value);
                    return Err(TreeError::Dropped);
                }
                let r = f(found.then_some(&value[..]));
                VALUE.set(value);
                return Ok(r);
            }
            VALUE.set(value);
        }
        let mut f = Some(f);
        // One latched read: `None` if the gate made the reader wait. `f` runs once, after every
        // step that can fail, so an attempt that ran out of frames (for the leaf, or for a large
        // value's chain, T22) is retried after freeing some with no latch held (B13).
        let mut attempt = || -> Result<Option<R>> {
            let g = self.leaf_shared(key)?;
            if !gate.try_pass(self, Some(key))? {
                return Ok(None);
            }
            let mut large = Vec::new();
            let value = match node::search(&*g, key) {
                Ok(i) if node::is_stub(&*g, i) => {
                    self.read_large(node::value(&g, i), g.page_id(), &mut large)?;
                    Some(&large[..])
                }
                found => found.ok().map(|i| node::value(&g, i)),
            };
            Ok(Some(f.take().expect("f runs once")(value)))
        };
        loop {
            let read = match attempt() {
                Err(TreeError::Buffer(BufferError::PoolExhausted { .. })) => self.with_room(&mut attempt)?,
                r => r?,
            };
            if let Some(r) = read {
                return Ok(r);
            }
            gate.wait(self, Some(key))?;
        }
    }

    /// Inserts a new record; fails with [`TreeError::DuplicateKey`] if the key exists.
    ///
    /// # Errors
    /// Oversize key or value, duplicate key, or pool/I/O errors (nothing changes then).
    pub fn insert(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.put_own(key, value, false).map(|_| ())
    }

    /// Inserts or replaces; returns true if the key existed.
    ///
    /// # Errors
    /// Oversize key or value, or pool/I/O errors (nothing changes then).
    pub fn upsert(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.put_own(key, value, true)
    }

    /// `insert`/`upsert` of this handle: through the auto-commit if there is one (T14).
    fn put_own(&self, key: &[u8], value: &[u8], replace: bool) -> Result<bool> {
        self.check_open()?;
        match &self.auto_commit {
            Some(ac) => ac.put(self, key, value, replace),
            None => self.put(key, value, replace, None),
        }
    }

    /// [`Tree::insert`] (`replace` false) or [`Tree::upsert`] (true), logging the change before
    /// it is applied and every structure change it makes (T11, T13).
    ///
    /// # Errors
    /// As `insert`/`upsert`, or the log failed (nothing changes then).
    pub fn put_logged(&self, key: &[u8], value: &[u8], replace: bool, log: &dyn ChangeLog) -> Result<bool> {
        self.put(key, value, replace, Some(log))
    }

    fn put(&self, key: &[u8], value: &[u8], replace: bool, log: Log<'_>) -> Result<bool> {
        let _write = self.begin_write()?;
        self.check_sizes(key, value)?;
        let visit = if overflow::is_large(self.pool.page_size(), value.len()) {
            // T22: the chain is written before the leaf is latched, on pages no one can reach.
            self.with_room(|| self.put_once(key, value, self.write_chain(value)?, replace, log, None))?
        } else {
            self.with_room(|| self.put_once(key, value, Chain::none(), replace, log, None))?
        };
        Ok(ungated(visit))
    }

    /// [`Tree::put_logged`] for a writer that locks the gap it adds a key to (T28): when the key
    /// is absent, `gate` is offered the gap's closing key — the key after it in its leaf, or the
    /// end of the tree (`None`) after the last leaf's last key — with the leaf latched
    /// exclusively, before anything changes; on a refusal the writer unlatches, calls
    /// [`GapGate::wait`] and starts afresh. Replacing a present key asks nothing. Returns
    /// [`Gated::Beyond`], having changed nothing, when the closing key lies in a later leaf; the
    /// caller then finds and locks the closing key itself. A large value's chain (T22) is
    /// written before each visit asks the gate, and freed if the visit changes nothing.
    ///
    /// # Errors
    /// As [`Tree::put_logged`], or the gate's.
    pub fn put_gated(
        &self,
        key: &[u8],
        value: &[u8],
        replace: bool,
        log: &dyn ChangeLog,
        gate: &dyn GapGate,
    ) -> Result<Gated<bool>> {
        self.check_open()?;
        self.check_sizes(key, value)?;
        if overflow::is_large(self.pool.page_size(), value.len()) {
            // T22: each visit writes its chain first, on pages no one can reach; a visit that
            // the gate refuses, or that ends beyond its leaf, drops (frees) it unused.
            return self.gated(gate, || {
                self.put_once(key, value, self.write_chain(value)?, replace, Some(log), Some(gate))
            });
        }
        self.gated(gate, || self.put_once(key, value, Chain::none(), replace, Some(log), Some(gate)))
    }

    /// [`Tree::delete_logged`] for a writer that locks the gap it removes a key from (T28): when
    /// the key is present, `gate` is offered the closing key of the gap the removal widens (the
    /// key after it, or `None`, the end of the tree) with the leaf latched exclusively, before the
    /// removal; on a refusal the writer unlatches, waits and starts afresh. An absent key asks
    /// nothing. [`Gated::Beyond`]: the closing key lies in a later leaf; nothing changed.
    ///
    /// # Errors
    /// As [`Tree::delete_logged`], or the gate's.
    pub fn delete_gated(&self, key: &[u8], log: &dyn ChangeLog, gate: &dyn GapGate) -> Result<Gated<bool>> {
        self.check_open()?;
        self.gated(gate, || self.delete_once(key, Some(log), Some(gate)))
    }

    /// T28: runs `visit` (out of frames: again, B13) until it ends with the gate's consent or
    /// finds the closing key beyond its leaf; a refused closing key is waited for, unlatched.
    pub(crate) fn gated<T>(
        &self,
        gate: &dyn GapGate,
        mut visit: impl FnMut() -> Result<Visit<T>>,
    ) -> Result<Gated<T>> {
        loop {
            let write = self.begin_write()?;
            let visited = self.with_room(&mut visit)?;
            drop(write);
            match visited {
                Visit::Done(r) => return Ok(Gated::Done(r)),
                Visit::Beyond => return Ok(Gated::Beyond),
                Visit::Refused(next) => gate.wait(self, next.as_deref())?,
            }
        }
    }

    /// T28: asks `gate`, if there is one, about the closing key of the gap before slot `i` of
    /// the latched `leaf`; `Some` ends the visit with nothing changed.
    fn ask_gate<T>(&self, gate: Option<&dyn GapGate>, leaf: &[u8], i: usize) -> Result<Option<Visit<T>>> {
        let Some(gate) = gate.filter(|g| !g.passes_every_gap()) else { return Ok(None) };
        let next = match closing_key(leaf, i) {
            Closing::In(k) => k,
            Closing::Beyond => {
                let high = node::own_high(leaf).expect("a closing key beyond the leaf has an upper bound");
                return Ok((!gate.beyond(high)).then_some(Visit::Beyond));
            }
        };
        Ok((!gate.try_pass(self, next)?).then(|| Visit::Refused(next.map(<[u8]>::to_vec))))
    }

    /// One latched visit of a put; with `gate`, T28's question before a key is added.
    fn put_once(
        &self,
        key: &[u8],
        value: &[u8],
        chain: Chain<'_>,
        replace: bool,
        log: Log<'_>,
        gate: Option<&dyn GapGate>,
    ) -> Result<Visit<bool>> {
        let stored_len = overflow::stored_len(self.pool.page_size(), value.len());
        let (mut leaf, mut maintain) = self.leaf_exclusive(key)?;
        let mut asked = false;
        let existed = loop {
            let at = match node::search(&*leaf, key) {
                Ok(i) => {
                    if !replace {
                        return Err(TreeError::DuplicateKey);
                    }
                    if node::leaf_update_fits_len(&leaf, i, stored_len) {
                        self.replace_value(&mut leaf, i, key, value, chain, log, !maintain)?;
                        break true;
                    }
                    i
                }
                Err(i) => {
                    // T28: asked once; a split below keeps the leaf latched, so no key can
                    // enter the gap before the insert.
                    if !asked {
                        if let Some(end) = self.ask_gate(gate, &leaf, i)? {
                            return Ok(end);
                        }
                        asked = true;
                    }
                    if node::leaf_insert_fits_len(&leaf, key.len(), stored_len) {
                        self.insert_record(&mut leaf, i, key, value, chain, log, !maintain)?;
                        break false;
                    }
                    i
                }
            };
            self.split_toward(&mut leaf, at, key, log)?;
            maintain = true;
        };
        drop(leaf);
        self.maintain_if(maintain, key, log)?;
        Ok(Visit::Done(existed))
    }

    /// Replaces the value under `key` with what `f` makes of it, in one descent: `f` gets the
    /// current value, latched, and an empty buffer to write the new value into; the change is
    /// logged (T11) and applied before the leaf is released, so no other writer comes between
    /// the read and the write. Returns `f`'s result, or `None` (nothing called, nothing changed)
    /// if the key is absent. `f` must not call into the tree.
    ///
    /// `f` runs once. If the new value does not fit, the leaf is split first, still latched; if
    /// that split runs out of frames, the operation is retried after freeing some (B13) and
    /// writes the value `f` made then, so a writer that does not lock the key (see
    /// [`Tree::with_room`]) can slip in between only in that case.
    ///
    /// # Errors
    /// An oversize new value, pool or I/O errors, or the log failed; nothing changes then.
    pub fn update_logged<R>(
        &self,
        key: &[u8],
        log: &dyn ChangeLog,
        f: impl FnOnce(&[u8], &mut Vec<u8>) -> R,
    ) -> Result<Option<R>> {
        let _write = self.begin_write()?;
        // The new value's buffer is the thread's, taken for the call (an update allocated and
        // freed one per call before); a buffer grown past `KEPT_VALUE_BUFFER` is let go.
        thread_local! {
            static NEW_VALUE: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
        }
        const KEPT_VALUE_BUFFER: usize = 1 << 16;
        let (mut f, mut new, mut out) = (Some(f), NEW_VALUE.take(), None);
        new.clear();
        let found = self.with_room(|| self.update_once(key, Some(log), &mut f, &mut new, &mut out));
        if new.capacity() <= KEPT_VALUE_BUFFER {
            NEW_VALUE.set(new);
        }
        let found = found?;
        Ok(out.filter(|_| found))
    }

    fn update_once<R, F: FnOnce(&[u8], &mut Vec<u8>) -> R>(
        &self,
        key: &[u8],
        log: Log<'_>,
        f: &mut Option<F>,
        new: &mut Vec<u8>,
        out: &mut Option<R>,
    ) -> Result<bool> {
        let (mut leaf, mut maintain) = self.leaf_exclusive(key)?;
        let ps = self.pool.page_size();
        loop {
            let Ok(i) = node::search(&*leaf, key) else { return Ok(false) };
            if let Some(f) = f.take() {
                let mut large = Vec::new();
                let old = if node::is_stub(&*leaf, i) {
                    self.read_large(node::value(&leaf, i), leaf.page_id(), &mut large)?;
                    &large[..]
                } else {
                    node::value(&leaf, i)
                };
                // Room for a value of the old size, so a writer appending field by field does
                // not grow the buffer step by step.
                new.reserve(old.len());
                *out = Some(f(old, new));
                self.check_sizes(key, new)?;
            }
            if node::leaf_update_fits_len(&leaf, i, overflow::stored_len(ps, new.len())) {
                // T22: a large new value's chain is written while the leaf is latched.
                let chain = self.chain_for(new)?;
                self.replace_value(&mut leaf, i, key, new, chain, log, !maintain)?;
                break;
            }
            self.split_toward(&mut leaf, i, key, log)?;
            maintain = true;
        }
        drop(leaf);
        self.maintain_if(maintain, key, log)?;
        Ok(true)
    }

    /// Deletes `key`; returns true if it existed.
    ///
    /// # Errors
    /// Pool or I/O errors (nothing changes then).
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        self.check_open()?;
        match &self.auto_commit {
            Some(ac) => ac.delete(self, key),
            None => {
                let _write = self.begin_write()?;
                self.with_room(|| self.delete_once(key, None, None)).map(ungated)
            }
        }
    }

    /// [`Tree::delete`], logging the removal (with the old value, for undo) before it is made,
    /// and every structure change (T11, T13).
    ///
    /// # Errors
    /// Pool or I/O errors, or the log failed (nothing changes then).
    pub fn delete_logged(&self, key: &[u8], log: &dyn ChangeLog) -> Result<bool> {
        let _write = self.begin_write()?;
        self.with_room(|| self.delete_once(key, Some(log), None)).map(ungated)
    }

    /// One latched visit of a delete; with `gate`, T28's question before a key is removed.
    fn delete_once(&self, key: &[u8], log: Log<'_>, gate: Option<&dyn GapGate>) -> Result<Visit<bool>> {
        let (mut leaf, saw_foster) = self.leaf_exclusive(key)?;
        let Ok(i) = node::search(&*leaf, key) else {
            return Ok(Visit::Done(false));
        };
        if let Some(end) = self.ask_gate(gate, &leaf, i + 1)? {
            return Ok(end);
        }
        let merge = underfull_without(&leaf, i);
        self.remove_record(&mut leaf, i, key, log, !(saw_foster || merge))?;
        debug_assert_eq!(merge, underfull(&leaf), "T11: the removal's room was known before it");
        drop(leaf);
        if saw_foster || merge {
            maintenance(self.maintain(key, log), log)?;
        }
        Ok(Visit::Done(true))
    }

    // ------------------------------------------------------------------------------------------
    // Structure changes
    // ------------------------------------------------------------------------------------------

    /// Splits `left`: its upper half moves to a new foster child, which takes over `left`'s
    /// foster child if it had one (T2). Only `left` and the new node are latched. Where the
    /// split falls (T29): when the record that did not fit goes to the end of the node
    /// (`insert_at == count`, as in loads in key order), only the last record moves; when it
    /// continues an ascending run inside the node (the last insert took the slot before it, as
    /// each TPC-C district's new orders do), the records after it move, and it stays left.
    /// Either way ascending inserts leave full nodes behind, and the split logs only the few
    /// records it moves.
    fn split<'a>(
        &'a self,
        left: &mut ExclusiveGuard<'a>,
        insert_at: usize,
        log: Log<'_>,
    ) -> Result<ExclusiveGuard<'a>> {
        let pool = &*self.pool;
        let mut right = pool.allocate_page()?;
        let n = node::count(left);
        let run = if insert_at >= n && n >= 2 {
            Some(n - 1)
        } else if insert_at < n && node::continues_ascending_run(left, insert_at) {
            Some(insert_at)
        } else {
            None
        };
        let mut mid = run.unwrap_or_else(|| node::split_point(left));
        let mut moved = node::fill_split_off(&mut right, left, mid);
        if !moved && run.is_some() {
            // T29's split moves most of the node where the run starts near its front; with a
            // long separator as the new node's low fence the records after it may not fit
            // there. Balance bytes instead, as any other split does.
            mid = node::split_point(left);
            moved = node::fill_split_off(&mut right, left, mid);
        }
        debug_assert!(moved, "half a node and a foster key fit an empty node");
        let sep = node::key(left, mid).to_vec();
        if let Some(fs) = node::foster_swip(left) {
            pool.note_swip_moved(fs, &right);
        }
        self.note_children_moved(&right, 0);
        node::truncate(left, mid);
        let swip = pool.swip_for(&right, left);
        // The truncated records include `sep` itself, so the garbage covers the new foster key.
        let ok = node::set_foster(left, &sep, swip);
        debug_assert!(ok, "truncation freed room for the foster key");
        let split = NodeChange::Split { key: &sep, right: right.page_id() };
        let lsn = log_structure(log, &[(left, Some(split)), (&right, None)], &[])?;
        stamp(lsn, left);
        stamp(lsn, &mut right);
        Ok(right)
    }

    /// Replaces the value of record `i` of the latched `leaf` with `value`, whose chain (if
    /// large) is `chain`; the caller has checked that it fits. The change is logged before it is applied (T11): as one update
    /// while both values are stored in the leaf, and otherwise as a delete of the record and an
    /// insert of the new one (T22), so that no log record carries two large values. The old
    /// value's chain is freed with the change that removes it. If the insert cannot be logged
    /// after the delete was (a failed log, which stops the database, W11), the record stays
    /// deleted in the transaction, whose rollback puts it back. `last`: the operation does
    /// nothing after this (its last record says so, T11).
    #[allow(clippy::too_many_arguments)]
    fn replace_value<'a>(
        &'a self,
        leaf: &mut ExclusiveGuard<'a>,
        i: usize,
        key: &[u8],
        value: &[u8],
        chain: Chain<'a>,
        log: Log<'_>,
        last: bool,
    ) -> Result<()> {
        let mut stub = [0u8; overflow::STUB_LEN];
        let (stored, is_stub) = chain.stored_form(value, &mut stub);
        let mut old_value = Vec::new();
        let old_chain = self.latch_old(leaf, i, &mut old_value)?;
        let was_stub = node::is_stub(&**leaf, i);
        let Some(log) = log.filter(|_| was_stub || is_stub) else {
            if let Some(log) = log {
                // The old value is read from the latched leaf, not copied (T11).
                let change = LeafChange::Update { key, old: node::value(leaf, i), new: value };
                let lsn = leaf_record(log, last, self.root_page, leaf, &change, Overflow::NONE)?;
                stamp(Some(lsn), leaf);
            }
            let done = node::update_value_as(leaf, i, stored, is_stub);
            debug_assert!(done, "T11: the update was checked to fit");
            chain.keep(None);
            old_chain.free();
            return Ok(());
        };
        let freed = old_chain.ids();
        let old = if was_stub { &old_value[..] } else { node::value(leaf, i) };
        let delete = LeafChange::Delete { key, old };
        let lsn = log
            .leaf_change(self.root_page, leaf, &delete, Overflow { chain: &[], freed: &freed })
            .map_err(TreeError::Log)?;
        stamp(Some(lsn), leaf);
        node::remove(leaf, i);
        old_chain.free();
        // The removed record's room holds the new one.
        self.insert_record(leaf, i, key, value, chain, Some(log), last)
    }

    /// No room in `leaf` for the record at `at`: splits it first, so a failed split changes
    /// nothing (T6), and goes on with the half that holds `key`.
    fn split_toward<'a>(
        &'a self,
        leaf: &mut ExclusiveGuard<'a>,
        at: usize,
        key: &[u8],
        log: Log<'_>,
    ) -> Result<()> {
        let right = self.split(leaf, at, log)?;
        if node::goes_to_foster(leaf, key) {
            *leaf = right;
        }
        Ok(())
    }

    /// After a write that split a node or passed a foster child: maintenance along `key`'s path,
    /// opportunistic (the tree is correct with or without adoption, T9).
    fn maintain_if(&self, needed: bool, key: &[u8], log: Log<'_>) -> Result<()> {
        if needed {
            maintenance(self.maintain(key, log), log)
        } else {
            Ok(())
        }
    }

    /// T22: a new chain for `value` if it is large (none if it is stored in its leaf).
    fn chain_for(&self, value: &[u8]) -> Result<Chain<'_>> {
        if overflow::is_large(self.pool.page_size(), value.len()) {
            self.write_chain(value)
        } else {
            Ok(Chain::none())
        }
    }

    /// Inserts `key` → `value` at position `i` of the latched `leaf` (checked to fit), `chain`
    /// holding a large value (T22): logged before it is applied (T11), the chain the stub's
    /// once logged; `last` as for [`Tree::replace_value`].
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn insert_record<'a>(
        &'a self,
        leaf: &mut ExclusiveGuard<'a>,
        i: usize,
        key: &[u8],
        value: &[u8],
        chain: Chain<'a>,
        log: Log<'_>,
        last: bool,
    ) -> Result<()> {
        let mut stub = [0u8; overflow::STUB_LEN];
        let (stored, is_stub) = chain.stored_form(value, &mut stub);
        let overflow = Overflow { chain: &chain.guards, freed: &[] };
        let lsn = log_leaf(log, last, self.root_page, leaf, &LeafChange::Insert { key, value }, overflow)?;
        let done = node::insert_leaf_as(leaf, i, key, stored, is_stub);
        debug_assert!(done, "T11: the insert was checked to fit");
        chain.keep(lsn);
        Ok(())
    }

    /// Removes record `i` of the latched `leaf`: logged before it is made with the whole old
    /// value (T11), the old value's chain freed with it (T22); `last` as for
    /// [`Tree::replace_value`].
    fn remove_record<'a>(
        &'a self,
        leaf: &mut ExclusiveGuard<'a>,
        i: usize,
        key: &[u8],
        log: Log<'_>,
        last: bool,
    ) -> Result<()> {
        let mut old_value = Vec::new();
        let old_chain = self.latch_old(leaf, i, &mut old_value)?;
        if let Some(log) = log {
            let old = if node::is_stub(&**leaf, i) { &old_value[..] } else { node::value(leaf, i) };
            let change = LeafChange::Delete { key, old };
            let freed = old_chain.ids();
            let overflow = Overflow { chain: &[], freed: &freed };
            let lsn = leaf_record(log, last, self.root_page, leaf, &change, overflow)?;
            stamp(Some(lsn), leaf);
        }
        node::remove(leaf, i);
        old_chain.free();
        Ok(())
    }

    /// T22: the chain of record `i` of the latched `leaf`, latched exclusively to be freed
    /// with the change that replaces or removes the record, and its value read into `out`; no
    /// chain for a value stored in the leaf.
    fn latch_old<'a>(&'a self, leaf: &ExclusiveGuard<'a>, i: usize, out: &mut Vec<u8>) -> Result<Chain<'a>> {
        if !node::is_stub(&**leaf, i) {
            return Ok(Chain::none());
        }
        self.latch_large(node::value(leaf, i), leaf.page_id(), out)
    }

    /// B6: records that the swizzled children in records `from..` of `to` now live in `to`.
    fn note_children_moved(&self, to: &ExclusiveGuard<'_>, from: usize) {
        if node::is_leaf(to) {
            return;
        }
        for i in from..node::count(to) {
            if let Some(s) = node::child_swip(to, i) {
                self.pool.note_swip_moved(s, to);
            }
        }
    }

    /// Top-down pass with exclusive latch coupling along `key`'s path: grows the root, adopts
    /// foster children, merges underfull nodes (T9). Bounded; gives up quietly (the tree is valid
    /// either way).
    fn maintain(&self, key: &[u8], log: Log<'_>) -> Result<()> {
        let pool = &*self.pool;
        let Ok(mut p) = self.fix_own_root::<Exclusive>() else {
            // T25: dropped meanwhile; maintenance is opportunistic.
            return Ok(());
        };
        for _ in 0..256 {
            if p.frame() == self.root && node::has_foster(&p) {
                self.grow_root(&mut p, log)?;
                continue;
            }
            if node::is_leaf(&p) {
                return Ok(());
            }
            if node::goes_to_foster(&p, key) {
                p = self.step::<Exclusive, Exclusive>(&mut p, FOSTER_SWIP)?;
                continue;
            }
            let i = node::child_index(&*p, key);
            let off = node::child_swip_off(&p, i);
            let mut c = self.step::<Exclusive, Exclusive>(&mut p, off)?;
            if node::has_foster(&c) {
                if self.merge_foster(&mut c, (p.page_id(), p.frame()), log)?
                    || Self::adopt(pool, &mut p, i, &mut c, log)?
                {
                    continue;
                }
                // The parent is full: split it and start over, so its own parent adopts.
                drop(c);
                drop(self.split(&mut p, i + 1, log)?);
                drop(p);
                let Ok(root) = self.fix_own_root() else { return Ok(()) };
                p = root;
                continue;
            }
            if underfull(&c) && node::count(&p) > 1 {
                let empty = node::count(&c) == 0;
                drop(c);
                if self.merge_siblings(&mut p, i, empty, log)? {
                    continue;
                }
                c = self.step::<Exclusive, Exclusive>(&mut p, off)?;
            }
            p = c;
        }
        Ok(())
    }

    /// Root growth (T7): the root's contents move to a new node, and the root becomes its
    /// parent, one level up; the root's page id never changes.
    fn grow_root(&self, root: &mut ExclusiveGuard<'_>, log: Log<'_>) -> Result<()> {
        let pool = &*self.pool;
        let mut n = pool.allocate_page()?;
        n[HEADER_SIZE..].copy_from_slice(&root[HEADER_SIZE..]);
        let level = node::level(root);
        let ty = page::page_type(root).expect("root is a node");
        page::set_type(&mut n, ty, level);
        let mut offs = Vec::new();
        node::swip_offsets(&n, &mut offs);
        for off in offs {
            if let Some(s) = Swip::from_raw(page::get_u64(&n, off)) {
                pool.note_swip_moved(s, &n);
            }
        }
        node::init(root, level + 1, None, None);
        let swip = pool.swip_for(&n, root);
        let ok = node::insert_inner(root, 0, b"", swip);
        debug_assert!(ok, "an empty node holds one record");
        let lsn = log_structure(log, &[(root, None), (&n, None)], &[])?;
        stamp(lsn, root);
        stamp(lsn, &mut n);
        Ok(())
    }

    /// Adoption (T3): moves `c`'s foster child into `p` as the record after `c`. False if `p`
    /// has no room.
    fn adopt(
        pool: &BufferPool,
        p: &mut ExclusiveGuard<'_>,
        i: usize,
        c: &mut ExclusiveGuard<'_>,
        log: Log<'_>,
    ) -> Result<bool> {
        let (Some(fk), Some(fs)) = (node::foster_key(c).map(<[u8]>::to_vec), node::foster_swip(c)) else {
            return Ok(false);
        };
        if !node::insert_inner(p, i + 1, &fk, fs) {
            return Ok(false);
        }
        pool.note_swip_moved(fs, p);
        node::foster_key_becomes_high_fence(c);
        let child = pool.swip_page_id(fs);
        let changes =
            [(&*p, Some(NodeChange::Adopt { key: &fk, child })), (&*c, Some(NodeChange::Adopted { child }))];
        let lsn = log_structure(log, &changes, &[])?;
        stamp(lsn, p);
        stamp(lsn, c);
        Ok(true)
    }

    /// Merges `c`'s foster child back into `c` if both fit one node (T4); frees the foster child.
    /// `held` is `c`'s parent, latched exclusively by the caller: a foster swip naming it is
    /// damage (T16), refused before it is latched (the step would wait on the caller's latch).
    /// (The swip could be swizzled to it only if the parent was reached by page id, B6.)
    fn merge_foster<'a>(
        &'a self,
        c: &mut ExclusiveGuard<'a>,
        held: (PageId, FrameId),
        log: Log<'_>,
    ) -> Result<bool> {
        let pool = &*self.pool;
        let raw = page::get_u64(c, FOSTER_SWIP);
        if raw == Swip::page(held.0).raw() || raw == Swip::frame(held.1).raw() {
            return Err(TreeError::Damaged {
                page: c.page_id(),
                reason: format!("the foster swip names page {}, its parent", held.0),
            });
        }
        let f = self.step::<Exclusive, Exclusive>(c, FOSTER_SWIP)?;
        if !fits_merged(c, &f) {
            return Ok(false);
        }
        let before = node::count(c);
        if !node::append_records(c, &f, 0) {
            return Ok(false);
        }
        let ok = match (node::foster_key(&f).map(<[u8]>::to_vec), node::foster_swip(&f)) {
            (Some(fk), Some(fs)) => {
                let ok = node::set_foster(c, &fk, fs);
                if ok {
                    pool.note_swip_moved(fs, c);
                }
                ok
            }
            _ => {
                node::clear_foster(c);
                true
            }
        };
        if !ok {
            node::truncate(c, before);
            return Ok(false);
        }
        self.note_children_moved(c, before);
        let announced = pool.announce_change(); // buffer B37: logged, then freed
        let logged = log_structure(log, &[(c, None)], &[f.page_id()]);
        Self::release_page(pool, f);
        drop(announced);
        stamp(logged?, c);
        Ok(true)
    }

    /// Merges `p`'s underfull child `i` with its left sibling if both fit one node; the first
    /// child, or an `empty` one whose left sibling does not fit, with its right sibling if
    /// those fit (T4).
    fn merge_siblings<'a>(
        &'a self,
        p: &mut ExclusiveGuard<'a>,
        i: usize,
        empty: bool,
        log: Log<'_>,
    ) -> Result<bool> {
        if i > 0 && self.merge_pair(p, i - 1, log)? {
            return Ok(true);
        }
        // Deletes in descending order (a rolled-back run of ascending inserts) empty each leaf
        // after its right neighbour, while its left neighbour is still full: a merge that only
        // looked left left every one of them empty. Only an empty node looks right, so that
        // inserts, which leave young inner nodes underfull, do not merge what they will split.
        if (i == 0 || empty) && i + 1 < node::count(p) {
            return self.merge_pair(p, i, log);
        }
        Ok(false)
    }

    /// Merges `p`'s child `li + 1` into its child `li` if both fit one node (T4).
    fn merge_pair<'a>(&'a self, p: &mut ExclusiveGuard<'a>, li: usize, log: Log<'_>) -> Result<bool> {
        let pool = &*self.pool;
        let ri = li + 1;
        let (loff, roff) = (node::child_swip_off(p, li), node::child_swip_off(p, ri));
        // Latch order among siblings: left before right (T8).
        let mut l = self.step::<Exclusive, Exclusive>(p, loff)?;
        if node::has_foster(&l) {
            return Ok(false);
        }
        let r = self.step::<Exclusive, Exclusive>(p, roff)?;
        if !fits_merged(&l, &r) {
            return Ok(false);
        }
        let before = node::count(&l);
        let old_high = node::high_fence(&l).map(<[u8]>::to_vec);
        if !node::append_records(&mut l, &r, 0) {
            return Ok(false);
        }
        let new_high = node::high_fence(&r).map(<[u8]>::to_vec);
        let mut ok = node::set_high_fence(&mut l, new_high.as_deref());
        if ok {
            if let (Some(fk), Some(fs)) = (node::foster_key(&r).map(<[u8]>::to_vec), node::foster_swip(&r)) {
                ok = node::set_foster(&mut l, &fk, fs);
                if ok {
                    pool.note_swip_moved(fs, &l);
                } else {
                    let restored = node::set_high_fence(&mut l, old_high.as_deref());
                    debug_assert!(restored, "the old fence fitted before");
                }
            }
        }
        if !ok {
            node::truncate(&mut l, before);
            return Ok(false);
        }
        self.note_children_moved(&l, before);
        let unlinked = (node::key(p, ri).to_vec(), r.page_id());
        node::remove(p, ri);
        let unlink = NodeChange::Unlink { key: &unlinked.0, child: unlinked.1 };
        let announced = pool.announce_change(); // buffer B37: logged, then freed
        let logged = log_structure(log, &[(p, Some(unlink)), (&l, None)], &[r.page_id()]);
        Self::release_page(pool, r);
        drop(announced);
        let lsn = logged?;
        stamp(lsn, p);
        stamp(lsn, &mut l);
        Ok(true)
    }

    /// Frees a node whose records were moved elsewhere (B11: no swizzled swips may remain).
    fn release_page(pool: &BufferPool, mut g: ExclusiveGuard<'_>) {
        node::truncate(&mut g, 0);
        node::clear_foster(&mut g);
        pool.free_page(g);
    }

    // ------------------------------------------------------------------------------------------
    // Compare-and-swap (api.rs has the public entry points)
    // ------------------------------------------------------------------------------------------

    /// This handle's auto-commit (T14), if it has one.
    pub(crate) fn auto_commit(&self) -> Option<&dyn AutoCommit> {
        self.auto_commit.as_deref()
    }

    /// One attempt of a compare-and-swap under the leaf's exclusive latch: the comparison and
    /// the write happen with the leaf latched, so no other writer comes between them (T24).
    /// `Ok(Err(current))`: the value was not `expected`, nothing changed. A split for room
    /// happens before the write, still latched, and the comparison is made again after it.
    /// With `gate`, T28's question is asked once the comparison holds and before a key is
    /// added or removed, as a put's and a delete's visits ask it.
    pub(crate) fn cas_once(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
        log: Log<'_>,
        gate: Option<&dyn GapGate>,
    ) -> Result<Visit<std::result::Result<(), Option<Vec<u8>>>>> {
        let ps = self.pool.page_size();
        let (mut leaf, mut maintain) = self.leaf_exclusive(key)?;
        let mut asked = false;
        loop {
            let found = node::search(&*leaf, key);
            let mut large = Vec::new();
            let current = match found {
                Ok(i) if node::is_stub(&*leaf, i) => {
                    // T22: a large value is compared whole, read from its chain.
                    self.read_large(node::value(&leaf, i), leaf.page_id(), &mut large)?;
                    Some(&large[..])
                }
                Ok(i) => Some(node::value(&leaf, i)),
                Err(_) => None,
            };
            if current != expected {
                return Ok(Visit::Done(Err(current.map(<[u8]>::to_vec))));
            }
            // T28: asked once; a split below keeps the leaf latched, so no key can enter or
            // leave the gap before the write.
            let widens_at = match (found, new) {
                (Err(i), Some(_)) => Some(i),
                (Ok(i), None) => Some(i + 1),
                _ => None,
            };
            if let (Some(at), false) = (widens_at, asked) {
                if let Some(end) = self.ask_gate(gate, &leaf, at)? {
                    return Ok(end);
                }
                asked = true;
            }
            let stored_len = new.map_or(0, |v| overflow::stored_len(ps, v.len()));
            let at = match (found, new) {
                (Err(_), None) => return Ok(Visit::Done(Ok(()))),
                (Ok(i), None) => {
                    maintain |= underfull_without(&leaf, i);
                    self.remove_record(&mut leaf, i, key, log, !maintain)?;
                    break;
                }
                (Ok(i), Some(value)) => {
                    if node::leaf_update_fits_len(&leaf, i, stored_len) {
                        let chain = self.chain_for(value)?;
                        self.replace_value(&mut leaf, i, key, value, chain, log, !maintain)?;
                        break;
                    }
                    i
                }
                (Err(i), Some(value)) => {
                    if node::leaf_insert_fits_len(&leaf, key.len(), stored_len) {
                        let chain = self.chain_for(value)?;
                        self.insert_record(&mut leaf, i, key, value, chain, log, !maintain)?;
                        break;
                    }
                    i
                }
            };
            self.split_toward(&mut leaf, at, key, log)?;
            maintain = true;
        }
        drop(leaf);
        self.maintain_if(maintain, key, log)?;
        Ok(Visit::Done(Ok(())))
    }

    // ------------------------------------------------------------------------------------------
    // Drop (T25)
    // ------------------------------------------------------------------------------------------

    /// Whether the tree was dropped (T25).
    #[must_use]
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Drops the tree (T25): every handle refuses from now on ([`TreeError::Dropped`]), then
    /// every page is freed, root last, each group of freed pages logged before it is freed
    /// (T13). Returns the number of pages freed. The engine has taken the tree out of its
    /// catalog (and logged that) first. No operation on the tree may be running meanwhile;
    /// those that start later refuse.
    ///
    /// # Errors
    /// I/O errors reading a page, no frame, or the log failed: the pages not freed yet stay
    /// allocated (unreachable, but not damaged).
    pub fn destroy(&self, log: Option<&dyn ChangeLog>) -> Result<usize> {
        self.check_writable()?;
        let _write = self.begin_write()?;
        self.dropped.store(true, std::sync::atomic::Ordering::Release);
        let pool = &*self.pool;
        // Buffer B37: every page is freed after the record naming it; announced throughout.
        let _announced = pool.announce_change();
        let mut root: ExclusiveGuard<'_> = pool.fix_root(self.root);
        let mut freed = 0;
        self.free_below(&mut root, log, &mut freed)?;
        log_structure(log, &[], &[root.page_id()])?;
        node::truncate(&mut root, 0);
        node::clear_foster(&mut root);
        pool.free_root(root);
        Ok(freed + 1)
    }

    /// Frees every page below `g` (its children and foster child, recursively), each logged
    /// under its latch right before it is freed, and leaves `g` without records.
    fn free_below<'a>(&'a self, g: &mut ExclusiveGuard<'a>, log: Log<'_>, freed: &mut usize) -> Result<()> {
        // T22: a leaf's large values first, each chain logged before it is freed.
        let stubs: Vec<Vec<u8>> = (0..node::count(g))
            .filter(|&i| node::is_leaf(&**g) && node::is_stub(&**g, i))
            .map(|i| node::value(g, i).to_vec())
            .collect();
        let mut scratch = Vec::new();
        for stub in stubs {
            let len = overflow::Stub::decode(&stub).map(|s| s.len);
            if len.is_some_and(|len| usize::try_from(len).map_or(true, |len| len > self.max_value_len())) {
                // T22 5: longer than this pool takes latched at once (`latch_large` refuses it).
                self.free_chain_by_page(&stub, g.page_id(), log, freed)?;
                continue;
            }
            let chain = self.latch_large(&stub, g.page_id(), &mut scratch)?;
            log_structure(log, &[], &chain.ids())?;
            *freed += chain.guards.len();
            chain.free();
        }
        let mut offs = Vec::new();
        node::swip_offsets(g, &mut offs);
        if offs.is_empty() {
            return Ok(());
        }
        // Resident children first: in swizzling mode each is swizzled here, and `g`'s latch
        // keeps it from being evicted (B13), so freeing them first leaves their frames free for
        // the children read from disk after them. The walk then pins only its path.
        let resident = |off: &usize| Swip::from_raw(page::get_u64(g, *off)).is_some_and(Swip::is_swizzled);
        offs.sort_by_key(|off| !resident(off));
        for off in offs {
            let mut child = self.with_room(|| self.step::<Exclusive, Exclusive>(g, off))?;
            self.free_below(&mut child, log, freed)?;
            // Logged while the child is latched, right before it is freed: a split-off's image,
            // which another thread logs under its shared latch (buffer B36), then comes before
            // the record that frees it, never after it (restart would take it for allocated).
            log_structure(log, &[], &[child.page_id()])?;
            Self::release_page(&self.pool, child);
            *freed += 1;
        }
        node::truncate(g, 0);
        node::clear_foster(g);
        Ok(())
    }
}

impl Tree {
    /// Frees the chain of a dropped tree's large value a page at a time, each page logged under
    /// its latch right before it is freed, as [`Tree::free_below`] frees nodes (RECOVERY.md R23):
    /// for a value longer than this pool takes latched at once (T22 5), which only a drop frees
    /// (no handle reaches the tree any more). A chain that is not what its stub says stops the
    /// walk as `Damaged`, having freed only overflow pages of the chain.
    fn free_chain_by_page(&self, stub: &[u8], leaf: PageId, log: Log<'_>, freed: &mut usize) -> Result<()> {
        let damaged = |reason: String| TreeError::Damaged { page: leaf, reason };
        let s = overflow::Stub::decode(stub)
            .ok_or_else(|| damaged("a record's stub names no overflow page".into()))?;
        let ps = self.pool.page_size();
        let len = usize::try_from(s.len).unwrap_or(usize::MAX);
        if !overflow::is_large(ps, len) || len > overflow::MAX_VALUE_LEN {
            return Err(damaged(format!("a stub of a {len}-byte value")));
        }
        let pages = overflow::chain_len(ps, len);
        let mut seen = std::collections::HashSet::with_capacity(pages);
        let mut at = Some(s.first);
        for i in 0..pages {
            let id =
                at.ok_or_else(|| damaged(format!("the overflow chain ends after {i} of {pages} pages")))?;
            // Buffer B3a: a page freed here is never fixed again.
            if !seen.insert(id) {
                return Err(damaged(format!("the overflow chain names page {id} twice")));
            }
            let g: ExclusiveGuard<'_> = self.with_room(|| Ok(self.pool.fix_page(id)?))?;
            let ty = page::page_type(&g);
            if ty != Some(page::PageType::Overflow) {
                return Err(damaged(format!("page {id} of an overflow chain is a {ty:?} page")));
            }
            at = overflow::next(&g);
            log_structure(log, &[], &[id])?;
            self.pool.free_page(g);
            *freed += 1;
        }
        if let Some(id) = at {
            return Err(damaged(format!("the overflow chain goes on to page {id} past the value's end")));
        }
        Ok(())
    }
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").field("root_page", &self.root_page).finish_non_exhaustive()
    }
}
