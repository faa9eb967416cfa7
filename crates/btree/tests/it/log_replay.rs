//! T11–T13: the log a tree reports to is complete and page-local. A recording `ChangeLog` keeps
//! every leaf change and every structure change (logical node changes as such, other pages as
//! images); replaying that log alone, page by page (images replace a page, leaf and node
//! changes are redone on it, each from that page's replayed state only), must rebuild exactly
//! the pages the live tree has, in every buffer mode and with a pool small enough to evict and
//! un-swizzle all the time. Each replayed node change must give a page with the meaning of the
//! one the tree made (records, fences, foster key and child); mostly the bytes are the same too
//! (they differ only where the tree left layout changes unlogged, T13: compaction, a merge
//! tried and taken back).

use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use swizzledb_btree::log::{redo, redo_node, LogFailure};
use swizzledb_btree::{
    node, overflow, BTreeOwner, ChangeLog, LeafChange, NodeChange, Overflow, PageChange, Tree, TreeError,
};
use swizzledb_buffer::page;
use swizzledb_buffer::{BufferPool, ExclusiveGuard, PageId, PoolConfig, PoolMode, Shared};
use swizzledb_sync::Lsn;

/// A leaf change with owned bytes.
#[derive(Clone, Debug)]
enum Change {
    Insert(Vec<u8>, Vec<u8>),
    Update(Vec<u8>, Vec<u8>, Vec<u8>),
    Delete(Vec<u8>, Vec<u8>),
}

impl Change {
    fn of(c: &LeafChange<'_>) -> Change {
        match *c {
            LeafChange::Insert { key, value } => Change::Insert(key.to_vec(), value.to_vec()),
            LeafChange::Update { key, old, new } => Change::Update(key.to_vec(), old.to_vec(), new.to_vec()),
            LeafChange::Delete { key, old } => Change::Delete(key.to_vec(), old.to_vec()),
        }
    }

    fn borrow(&self) -> LeafChange<'_> {
        match self {
            Change::Insert(key, value) => LeafChange::Insert { key, value },
            Change::Update(key, old, new) => LeafChange::Update { key, old, new },
            Change::Delete(key, old) => LeafChange::Delete { key, old },
        }
    }
}

/// A node change with owned bytes.
#[derive(Clone, Debug)]
enum Node {
    Split(Vec<u8>, PageId),
    Adopt(Vec<u8>, PageId),
    Adopted(PageId),
    Unlink(Vec<u8>, PageId),
}

impl Node {
    fn of(c: &NodeChange<'_>) -> Node {
        match *c {
            NodeChange::Split { key, right } => Node::Split(key.to_vec(), right),
            NodeChange::Adopt { key, child } => Node::Adopt(key.to_vec(), child),
            NodeChange::Adopted { child } => Node::Adopted(child),
            NodeChange::Unlink { key, child } => Node::Unlink(key.to_vec(), child),
        }
    }

    fn borrow(&self) -> NodeChange<'_> {
        match self {
            Node::Split(key, right) => NodeChange::Split { key, right: *right },
            Node::Adopt(key, child) => NodeChange::Adopt { key, child: *child },
            Node::Adopted(child) => NodeChange::Adopted { child: *child },
            Node::Unlink(key, child) => NodeChange::Unlink { key, child: *child },
        }
    }
}

/// How a structure change logged one page: its image, or a node change (with the image the
/// tree made, to compare the replay with).
#[derive(Debug)]
enum Logged {
    Image(Vec<u8>),
    Change(Node, Vec<u8>),
}

#[derive(Debug)]
enum Entry {
    Leaf { lsn: Lsn, tree: PageId, page: PageId, change: Change, chain: Vec<PageId>, freed: Vec<PageId> },
    Structure { lsn: Lsn, pages: Vec<(PageId, Logged)>, freed: Vec<PageId> },
}

/// Records every call; fails the `fail_at`-th call (1-based) if set.
#[derive(Default)]
struct Recorder {
    entries: Mutex<Vec<Entry>>,
    calls: AtomicU64,
    fail_at: Option<u64>,
}

impl Recorder {
    fn next(&self) -> Result<Lsn, LogFailure> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_at == Some(n) {
            return Err("injected log failure".into());
        }
        Ok(Lsn(n * 100))
    }
}

impl ChangeLog for Recorder {
    fn leaf_change(
        &self,
        tree: PageId,
        leaf: &ExclusiveGuard<'_>,
        change: &LeafChange<'_>,
        overflow: Overflow<'_, '_>,
    ) -> Result<Lsn, LogFailure> {
        let mut entries = self.entries.lock().unwrap();
        let lsn = self.next()?;
        let chain = overflow.chain.iter().map(ExclusiveGuard::page_id).collect();
        let freed = overflow.freed.to_vec();
        entries.push(Entry::Leaf {
            lsn,
            tree,
            page: leaf.page_id(),
            change: Change::of(change),
            chain,
            freed,
        });
        Ok(lsn)
    }

    fn structure_change(&self, pages: &[PageChange<'_, '_>], freed: &[PageId]) -> Result<Lsn, LogFailure> {
        let mut entries = self.entries.lock().unwrap();
        let lsn = self.next()?;
        let pages = pages
            .iter()
            .map(|(g, change)| {
                let image = g.pool().disk_image(g);
                let logged = match change {
                    Some(c) => Logged::Change(Node::of(c), image),
                    None => Logged::Image(image),
                };
                (g.page_id(), logged)
            })
            .collect();
        entries.push(Entry::Structure { lsn, pages, freed: freed.to_vec() });
        Ok(lsn)
    }
}

/// A page's bytes with the fields a replay does not reproduce (checksum, page LSN) cleared.
fn normalized(p: &[u8]) -> Vec<u8> {
    let mut p = p.to_vec();
    p[..4].fill(0);
    page::set_page_lsn(&mut p, Lsn(0));
    p
}

/// How many node changes the replay redid, by kind (split, adopt, adopted, unlink), and how many of
/// them gave the tree's page byte for byte.
#[derive(Debug, Default)]
struct Redone {
    by_kind: [usize; 4],
    same_bytes: usize,
}

/// Replays the log: the pages it rebuilds, by id (freed pages dropped), and the node changes
/// it redid. Each record is applied to each page it names from that page's replayed state
/// alone (page-local redo).
fn replay(entries: &[Entry]) -> (BTreeMap<PageId, Vec<u8>>, Redone) {
    let mut pages: BTreeMap<PageId, Vec<u8>> = BTreeMap::new();
    let mut redone = Redone::default();
    for e in entries {
        match e {
            Entry::Structure { lsn, pages: logged, freed } => {
                for (id, logged) in logged {
                    match logged {
                        Logged::Image(image) => {
                            let mut p = image.clone();
                            page::set_page_lsn(&mut p, *lsn);
                            pages.insert(*id, p);
                        }
                        Logged::Change(change, made) => {
                            let p = pages
                                .get_mut(id)
                                .unwrap_or_else(|| panic!("node change on {id:?} before any image"));
                            redo_node(p, &change.borrow())
                                .unwrap_or_else(|e| panic!("redo of {change:?} at {lsn:?} on {id:?}: {e}"));
                            page::set_page_lsn(p, *lsn);
                            assert_eq!(
                                logical(p),
                                logical(&{
                                    let mut m = made.clone();
                                    page::set_page_lsn(&mut m, *lsn);
                                    m
                                }),
                                "{change:?} at {lsn:?} on {id:?}"
                            );
                            redone.same_bytes += usize::from(normalized(p) == normalized(made));
                            redone.by_kind[match change {
                                Node::Split(..) => 0,
                                Node::Adopt(..) => 1,
                                Node::Adopted(..) => 2,
                                Node::Unlink(..) => 3,
                            }] += 1;
                        }
                    }
                }
                for id in freed {
                    pages.remove(id);
                }
            }
            Entry::Leaf { lsn, page: id, change, chain, freed, .. } => {
                let p = pages.get_mut(id).unwrap_or_else(|| panic!("leaf change on {id:?} before any image"));
                redo(p, &change.borrow(), chain).unwrap_or_else(|e| panic!("redo at {lsn:?} on {id:?}: {e}"));
                page::set_page_lsn(p, *lsn);
                // T22: the new value's chain, rebuilt from the value; the old one's pages freed.
                let (LeafChange::Insert { value, .. } | LeafChange::Update { new: value, .. }) =
                    change.borrow()
                else {
                    assert!(chain.is_empty(), "a delete writes no overflow pages");
                    for f in freed {
                        pages.remove(f);
                    }
                    continue;
                };
                for (i, c) in chain.iter().enumerate() {
                    let mut image = overflow::page_image(4096, value, chain, i);
                    page::set_page_lsn(&mut image, *lsn);
                    pages.insert(*c, image);
                }
                for f in freed {
                    pages.remove(f);
                }
            }
        }
    }
    (pages, redone)
}

/// What a node means, whatever its byte layout: type, level, page LSN, fences, foster key and
/// child, records (child swips as page ids).
fn logical(p: &[u8]) -> String {
    if page::page_type(p) == Some(page::PageType::Overflow) {
        return format!(
            "overflow lsn {:?} next {:?} data {:?}",
            page::page_lsn(p),
            overflow::next(p),
            overflow::data(p)
        );
    }
    let mut s = format!(
        "type {:?} level {} lsn {:?} low {:?} high {:?} foster {:?}/{:?}",
        page::page_type(p),
        node::level(p),
        page::page_lsn(p),
        node::low_fence(p),
        node::high_fence(p),
        node::foster_key(p),
        node::foster_swip(p).map(|s| s.raw()),
    );
    for i in 0..node::count(p) {
        if node::is_leaf(p) {
            s += &format!(" [{:?}={:?}]", node::key(p, i), node::value(p, i));
        } else {
            s += &format!(" [{:?}->{:?}]", node::key(p, i), node::child_swip(p, i).map(|s| s.raw()));
        }
    }
    s
}

#[derive(Clone, Debug)]
enum Op {
    Put(u16, u8),
    Delete(u16),
}

fn key(k: u16) -> Vec<u8> {
    let mut v = format!("key-{k:05}").into_bytes();
    v.extend(std::iter::repeat_n(b'x', usize::from(k % 5) * 9));
    v
}

fn value(k: u16, v: u8) -> Vec<u8> {
    // T22: some values go to overflow pages (up to two of them, an eighth of the 16-frame pool).
    if k.is_multiple_of(7) && v.is_multiple_of(2) {
        return vec![v; 1100 + usize::from(k % 13) * 530];
    }
    vec![v; 10 + usize::from(k % 11) * 23 + usize::from(v % 3) * 60]
}

fn pool(dir: &std::path::Path, mode: PoolMode) -> Arc<BufferPool> {
    let bytes = if mode == PoolMode::MainMemory { 16 << 20 } else { 16 * 4096 };
    let config = PoolConfig { mode, pool_bytes: bytes, page_size: 4096, ..PoolConfig::default() };
    Arc::new(BufferPool::create(&dir.join("t.swz"), &config, Arc::new(BTreeOwner)).unwrap())
}

fn check_replay(mode: PoolMode, ops: &[Op]) -> Redone {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), mode);
    let log = Recorder::default();
    let tree = Tree::create_logged(&pool, Some(&log)).unwrap();
    let mut oracle = BTreeMap::new();
    for op in ops {
        match *op {
            Op::Put(k, v) => {
                let existed = tree.put_logged(&key(k), &value(k, v), true, &log).unwrap();
                assert_eq!(existed, oracle.insert(k, v).is_some());
            }
            Op::Delete(k) => {
                assert_eq!(tree.delete_logged(&key(k), &log).unwrap(), oracle.remove(&k).is_some());
            }
        }
    }
    let shape = tree.verify().unwrap();
    // No page leaks: every allocated page is a node or an overflow page of the tree (T22 4).
    let alloc = pool.allocation();
    let allocated = alloc.page_count as usize - 1 - alloc.free_pages.len();
    assert_eq!(allocated, shape.nodes + shape.overflow_pages, "{shape:?}");
    let entries = log.entries.into_inner().unwrap();
    let (rebuilt, redone) = replay(&entries);
    // Every page of the live tree (and no other page) is rebuilt, with the same meaning.
    let mut live = BTreeSet::new();
    let mut todo = vec![tree.root_page()];
    while let Some(id) = todo.pop() {
        live.insert(id);
        let g = pool.fix_page::<Shared>(id).unwrap();
        let image = pool.disk_image(&g);
        drop(g);
        let got = rebuilt.get(&id).unwrap_or_else(|| panic!("{id:?} is in the tree but not in the log"));
        assert_eq!(logical(got), logical(&image), "{id:?} rebuilt from the log differs");
        if page::page_type(&image) == Some(page::PageType::Overflow) {
            todo.extend(overflow::next(&image));
            continue;
        }
        let children = (0..node::count(&image))
            .filter(|_| !node::is_leaf(&image))
            .filter_map(|i| node::child_swip(&image, i))
            .chain(node::foster_swip(&image));
        for s in children {
            todo.push(PageId::new(s.raw()).unwrap());
        }
        for i in (0..node::count(&image)).filter(|&i| node::is_leaf(&image) && node::is_stub(&image[..], i)) {
            todo.push(overflow::Stub::decode(node::value(&image, i)).unwrap().first);
        }
    }
    let extra: Vec<_> = rebuilt.keys().filter(|id| !live.contains(id)).collect();
    assert!(
        extra.is_empty(),
        "the log rebuilds pages the tree does not have: {:?}",
        extra.iter().map(|id| (id, logical(&rebuilt[id]))).take(3).collect::<Vec<_>>()
    );
    // Every logged leaf change names the tree.
    for e in &entries {
        if let Entry::Leaf { tree: t, .. } = e {
            assert_eq!(*t, tree.root_page());
        }
    }
    redone
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            3 => (0u16..600, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
            1 => (0u16..600).prop_map(Op::Delete),
        ],
        1..1200,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn t11_t13_the_log_rebuilds_every_page(ops in ops(), mode in prop_oneof![
        Just(PoolMode::Traditional), Just(PoolMode::Swizzling), Just(PoolMode::MainMemory)
    ]) {
        check_replay(mode, &ops);
    }
}

/// Loads then deletes most keys, so splits, adoptions, root growth and both kinds of merge all
/// happen, in every mode.
#[test]
fn t13_every_structure_change_is_logged() {
    let mut ops: Vec<Op> =
        (0..1500u32).map(|k| Op::Put(((k * 7919) % 1500) as u16, (k % 251) as u8)).collect();
    ops.extend((0..1500).filter(|k| k % 10 != 0).map(Op::Delete));
    ops.extend((0..300).map(|k| Op::Put(k * 5, 9)));
    for mode in [PoolMode::Traditional, PoolMode::Swizzling, PoolMode::MainMemory] {
        let redone = check_replay(mode, &ops);
        assert!(
            redone.by_kind.iter().all(|&n| n > 10),
            "{mode:?}: every node change is exercised: {redone:?}"
        );
        let total: usize = redone.by_kind.iter().sum();
        assert!(redone.same_bytes * 2 > total, "{mode:?}: redo repeats the tree's own steps: {redone:?}");
    }
}

/// T11: a change the log refuses is not made; the operation fails with `TreeError::Log`.
#[test]
fn t11_a_refused_change_is_not_made() {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool(dir.path(), PoolMode::Swizzling);
    let setup = Recorder::default();
    let tree = Tree::create_logged(&pool, Some(&setup)).unwrap();
    for k in 0..50 {
        tree.put_logged(&key(k), &value(k, 1), true, &setup).unwrap();
    }
    let failing = Recorder { fail_at: Some(1), ..Recorder::default() };
    assert!(matches!(tree.put_logged(&key(7), &value(7, 2), true, &failing), Err(TreeError::Log(_))));
    assert!(matches!(
        tree.put_logged(&key(999), b"v", true, &Recorder { fail_at: Some(1), ..Recorder::default() }),
        Err(TreeError::Log(_))
    ));
    assert!(matches!(
        tree.delete_logged(&key(3), &Recorder { fail_at: Some(1), ..Recorder::default() }),
        Err(TreeError::Log(_))
    ));
    assert_eq!(tree.get(&key(7)).unwrap(), Some(value(7, 1)), "update not made");
    assert_eq!(tree.get(&key(999)).unwrap(), None, "insert not made");
    assert_eq!(tree.get(&key(3)).unwrap(), Some(value(3, 1)), "delete not made");
    tree.verify().unwrap();
}
