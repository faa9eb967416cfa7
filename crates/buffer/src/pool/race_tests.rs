//! The page-table hit race (README B3, B10): the page-table hit path of `fix_page_from` finds a
//! frame, and before it latches it the frame is evicted and reused for another page. The caller
//! may hold the parent's latch; if the frame now holds an ancestor of that parent, latched
//! exclusively by a thread that waits for the parent, a blocking latch wait never ends. The test
//! holds a thread at the pause point between the lookup and the latch ([`found_in_table`]).

use super::*;
use crate::guard::{Exclusive, Shared};
use crate::page::{self, get_u16, put_u16, put_u64, PageType, HEADER_SIZE};
use std::sync::mpsc;
use std::time::Duration;
use swizzledb_io::{FaultFs, Vfs};

type Hook = Arc<dyn Fn(PageId, FrameId) + Send + Sync>;

/// The pause point's hook; global, so it acts only on the thread a test names.
static HOOK: Mutex<Option<Hook>> = Mutex::new(None);

/// Called by `fix_page_from` (tests only) after the page table named frame `f` for `pid`, before
/// the latch is taken.
pub(super) fn found_in_table(pid: PageId, f: FrameId) {
    let hook = HOOK.lock().clone();
    if let Some(h) = hook {
        h(pid, f);
    }
}

/// Where an inner page keeps its child count; its swips follow at `SWIPS`.
pub(super) const COUNT: usize = HEADER_SIZE;
pub(super) const SWIPS: usize = HEADER_SIZE + 8;

/// Inner pages hold a count and that many swips; leaves hold none.
pub(super) struct Owner;

impl PageOwner for Owner {
    fn swip_offsets(&self, page: &[u8], out: &mut Vec<usize>) {
        if page::page_type(page) == Some(PageType::Inner) {
            let n = usize::from(get_u16(page, COUNT)).min((page.len() - SWIPS) / 8);
            out.extend((0..n).map(|i| SWIPS + 8 * i));
        }
    }

    fn check_page(&self, _page: &[u8]) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// A pool of the smallest size (`MIN_FRAMES` pages of 4 KiB) on `fs`.
pub(super) fn smallest_config(fs: &FaultFs, mode: PoolMode, log: Option<Arc<dyn LogFlush>>) -> PoolConfig {
    PoolConfig {
        vfs: Arc::new(fs.clone()),
        mode,
        pool_bytes: MIN_FRAMES * 4096,
        page_size: 4096,
        log,
        ..PoolConfig::default()
    }
}

/// A new inner page at `level` whose only child is `child`.
pub(super) fn inner(pool: &BufferPool, child: PageId, level: u8) -> PageId {
    let mut g = pool.allocate_page().unwrap();
    let pid = g.page_id();
    page::format(&mut g, pid, PageType::Inner, level);
    put_u16(&mut g, COUNT, 1);
    put_u64(&mut g, SWIPS, Swip::page(child).raw());
    pid
}

/// Evicts frame `f` as an eviction batch would, and puts it first on the free list, so that the
/// next page loaded takes it.
pub(super) fn evict_to_front(pool: &BufferPool, f: FrameId) {
    assert!(matches!(pool.try_evict(f, None), Ok(None)), "frame {f} could not be evicted");
    pool.policy.on_remove(f, true, &pool.desc(f).hook);
    pool.push_free(f);
}

const HOLDER: &str = "race4-holder";
const WAIT: Duration = Duration::from_secs(10);

/// B3/B10 (the page-table hit race), through the pool's own calls: a three-level chain G → P → C
/// in traditional mode (swips are page ids, so every child fix goes through the page table).
///
/// 1. Thread A latches P exclusively and fixes its child C: the page table names C's frame F,
///    and A stops at the pause point before latching F.
/// 2. C is evicted (nobody holds F) and F goes first on the free list.
/// 3. Thread B fixes G, P's parent, exclusively: G is loaded into F. B then fixes its child P,
///    which A holds.
/// 4. A resumes. F is latched exclusively by B, which waits for P, which A holds.
///
/// With `latch_while_holding` A sees that F no longer holds C, looks C up again and loads it
/// elsewhere; both threads finish. With the old blocking `d.latch.lock(M::MODE)` both wait
/// forever: the watchdog (a bounded wait for each thread's result, the threads left behind)
/// turns that into a failure instead of a hang.
#[test]
fn b3_a_hit_whose_frame_is_reused_for_the_parents_parent_does_not_deadlock() {
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/r")).unwrap();
    let config = smallest_config(&fs, PoolMode::Traditional, None);
    let pool = Arc::new(BufferPool::create(Path::new("/r/db"), &config, Arc::new(Owner)).unwrap());
    let c = pool.allocate_page().unwrap().page_id();
    let p = inner(&pool, c, 1);
    let g = inner(&pool, p, 2);
    let c_frame = pool.table.get(c).unwrap();
    evict_to_front(&pool, pool.table.get(g).unwrap());

    let (reached_tx, reached) = mpsc::channel::<FrameId>();
    let (go, go_rx) = mpsc::channel::<()>();
    let armed = Mutex::new(Some((reached_tx, go_rx)));
    *HOOK.lock() = Some(Arc::new(move |pid, f| {
        if pid != c || std::thread::current().name() != Some(HOLDER) {
            return;
        }
        if let Some((reached, go)) = armed.lock().take() {
            let _ = reached.send(f);
            let _ = go.recv_timeout(WAIT * 3);
        }
    }));

    // A: holds P, fixes C (pauses between the lookup and the latch).
    let (a_done, a_result) = mpsc::channel();
    let pool_a = Arc::clone(&pool);
    std::thread::Builder::new()
        .name(HOLDER.into())
        .spawn(move || {
            let mut parent = pool_a.fix_page::<Exclusive>(p).unwrap();
            let child = pool_a.fix_child::<Exclusive, Shared>(&mut parent, SWIPS).unwrap();
            let id = child.page_id();
            // Unlatched before the result is sent: the checks after it expect no latch held.
            drop(child);
            drop(parent);
            let _ = a_done.send(id);
        })
        .unwrap();
    let found = reached.recv_timeout(WAIT).expect("A found C in the page table");
    assert_eq!(found, c_frame);

    // C leaves F; B loads G into F, holds it and asks for P.
    evict_to_front(&pool, c_frame);
    let (b_holds, b_frame) = mpsc::channel();
    let (b_done, b_result) = mpsc::channel();
    let pool_b = Arc::clone(&pool);
    std::thread::spawn(move || {
        let mut grand = pool_b.fix_page::<Exclusive>(g).unwrap();
        let _ = b_holds.send(grand.frame());
        let parent = pool_b.fix_child::<Exclusive, Exclusive>(&mut grand, SWIPS).unwrap();
        let id = parent.page_id();
        drop(parent);
        drop(grand);
        let _ = b_done.send(id);
    });
    let frame = b_frame.recv_timeout(WAIT).expect("B fixed G");
    assert_eq!(frame, c_frame, "precondition: G took the frame C left");
    go.send(()).unwrap();

    let a = a_result.recv_timeout(WAIT);
    let b = b_result.recv_timeout(WAIT);
    *HOOK.lock() = None;
    assert_eq!(
        (a, b),
        (Ok(c), Ok(p)),
        "A (holding P, waiting for C's old frame) and B (holding G in that frame, waiting for P) \
         did not both finish within {WAIT:?}: deadlock"
    );
    pool.check_invariants().unwrap();
}
