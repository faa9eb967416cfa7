//! Allocation and structure changes: new and freed pages (B11), swips that move between
//! parents (B6, B16), and the disk image of a page (B8).

use super::announce::Announced;
use super::{BufferPool, PoolMode, FREE};
use crate::error::Result;
use crate::guard::{Exclusive, LatchKind, PageGuard};
use crate::page::{self, get_u64, put_u64, PageType};
use crate::stats::bump;
use crate::swip::{Swip, SwipTarget};
use crate::trace::EventKind;
use std::sync::atomic::Ordering::{Relaxed, Release};
use swizzledb_sync::{FrameId, LatchMode, PageId};

impl BufferPool {
    /// Allocates a new page (reusing a free page if there is one), formatted as an empty leaf and
    /// fixed exclusively.
    ///
    /// # Errors
    /// No free frame (PoolExhausted / MemoryLimit) or I/O errors during eviction; `Corrupted`
    /// when the free-page list names a page that is resident, so in use (B3b).
    pub fn allocate_page(&self) -> Result<PageGuard<'_, Exclusive>> {
        let f = self.grab_free_frame()?;
        let pid = {
            let mut meta = self.meta.lock();
            if let Some(p) = meta.free_pages.pop() {
                p
            } else {
                let p = PageId::new(meta.page_count).expect("page count below 2^63");
                meta.page_count += 1;
                p
            }
        };
        let d = self.desc(f);
        d.latch.lock_exclusive();
        d.page_id.store(pid.get(), Relaxed);
        if self.table.insert_if_absent(pid, f).is_err() {
            // B3b: the free-page list names a page the table holds, one in use. Its id leaves
            // the list (the page is not free), the frame goes back, and nothing is formatted.
            d.latch.unlock_exclusive();
            self.push_free(f);
            return Err(self.corrupted(
                pid,
                "it is on the free-page list but in use (resident in the pool): the free list, \
                 or the log or checkpoint it was rebuilt from, is damaged; nothing was overwritten \
                 — copy the database aside and run `swizzledb verify` on the copy",
            ));
        }
        // SAFETY: B1 — exclusive latch on a frame taken from the free list.
        let page = unsafe { self.page_mut(f) };
        page::format(page, pid, PageType::Leaf, 0);
        self.enter_resident(f, pid, true);
        self.trace(EventKind::Alloc, f, None, Some(LatchMode::Exclusive), None);
        Ok(PageGuard::adopt(self, f))
    }

    /// The swip a parent should store to reference `child` (B6/B7): swizzled in swizzling modes
    /// (recording the parent in the child's descriptor), the page id otherwise.
    pub fn swip_for(&self, child: &PageGuard<'_, Exclusive>, parent: &PageGuard<'_, Exclusive>) -> Swip {
        if self.mode.swizzles() {
            self.desc(child.frame).set_parent(Some(parent.frame));
            self.gained_child(parent.frame);
            self.count(|b| bump(&b.swizzles));
            Swip::frame(child.frame)
        } else {
            Swip::page(child.page_id())
        }
    }

    /// B6: a swip moved into `new_parent`'s page; if it is swizzled, the child's descriptor must
    /// name the new parent. The caller holds both the old and the new parent exclusively.
    pub fn note_swip_moved(&self, swip: Swip, new_parent: &PageGuard<'_, Exclusive>) {
        if let SwipTarget::Frame(f) = swip.target() {
            let d = self.desc(f);
            let old = d.parent();
            if old != Some(new_parent.frame) {
                d.set_parent(Some(new_parent.frame));
                self.gained_child(new_parent.frame);
                if let Some(old) = old {
                    self.lost_child(old);
                }
            }
        }
    }

    /// The page id a swip refers to (reads the descriptor for swizzled swips). The caller holds
    /// the latch of the page containing the swip, which keeps a swizzled child resident (B6).
    #[must_use]
    pub fn swip_page_id(&self, swip: Swip) -> PageId {
        match swip.target() {
            SwipTarget::Page(p) => p,
            SwipTarget::Frame(f) => self.frame_page_id(f),
        }
    }

    /// The page as it must reach the disk (B8): a copy of the latched page in which every
    /// swizzled swip holds its child's page id. The write-ahead log records these images.
    #[must_use]
    pub fn disk_image<M: LatchKind>(&self, g: &PageGuard<'_, M>) -> Vec<u8> {
        let mut out = g.to_vec();
        let mut offs = Vec::new();
        self.owner.swip_offsets(&out, &mut offs);
        for o in offs {
            if let Some(s) = Swip::from_raw(get_u64(&out, o)) {
                // Children of a latched page stay resident (B6), so the id is current.
                put_u64(&mut out, o, Swip::page(self.swip_page_id(s)).raw());
            }
        }
        out
    }

    /// The frame a swizzled swip's child records as its parent (for structural checks).
    #[must_use]
    pub fn swizzled_parent(&self, swip: Swip) -> Option<FrameId> {
        match swip.target() {
            SwipTarget::Page(_) => None,
            SwipTarget::Frame(f) => self.desc(f).parent(),
        }
    }

    /// B37: announces a change of the allocation or the catalog that is logged before it is
    /// made (a free, a tree created or dropped), until the returned guard drops: take it before
    /// the change's record is appended and keep it until the change is made. A checkpoint that
    /// reads the allocation and the catalog after its begin record waits for every
    /// announcement standing then ([`BufferPool::wait_announced`]).
    pub fn announce_change(&self) -> Announced<'_> {
        self.announced.announce()
    }

    /// B37: waits until no change announced before this call ([`BufferPool::announce_change`]) is
    /// still between its record and its making: a slot that shows none once has none older. Never
    /// call it holding an announcement.
    pub fn wait_announced(&self) {
        self.announced.wait();
    }

    /// Frees a page that no swip references any more and that holds no swizzled swips (B11). Its
    /// frame returns to the free list and its page id to the free-page set.
    pub fn free_page(&self, g: PageGuard<'_, Exclusive>) {
        debug_assert!(!self.has_swizzled_children(&g), "B11: freeing a page with swizzled children");
        let pid = g.page_id();
        self.forget_dependant(pid);
        let f = g.into_frame();
        let d = self.desc(f);
        debug_assert!(!d.root.load(Relaxed), "B5: roots are never freed");
        debug_assert_eq!(d.kids.load(Relaxed), 0, "B16: freeing a page with swizzled children");
        let parent = d.parent();
        self.trace(EventKind::Free, f, None, None, None);
        d.set_parent(None);
        if let Some(p) = parent {
            self.lost_child(p);
        }
        self.table.remove(pid, f);
        d.state.store(FREE, Release);
        d.dirty.store(false, Relaxed);
        d.rec_lsn.store(0, Relaxed);
        if self.mode != PoolMode::MainMemory {
            self.policy.on_remove(f, false, &d.hook);
        }
        d.latch.unlock_exclusive();
        self.push_free(f);
        self.meta.lock().free_pages.push(pid);
    }

    /// B16: `parent` now holds one more swizzled swip; the policy hears of its first (R8). Called
    /// with the parent latched exclusively.
    pub(super) fn gained_child(&self, parent: FrameId) {
        let d = self.desc(parent);
        if d.kids.fetch_add(1, Relaxed) == 0 && self.mode != PoolMode::MainMemory {
            self.policy.on_children(parent, true, &d.hook);
        }
    }

    /// B16: `parent` holds one swizzled swip fewer; the policy hears of its last (R8). Called
    /// with the parent latched exclusively.
    pub(super) fn lost_child(&self, parent: FrameId) {
        let d = self.desc(parent);
        let before = d.kids.fetch_sub(1, Relaxed);
        debug_assert!(before > 0, "B16: {parent} lost a swizzled child it did not have");
        if before == 1 && self.mode != PoolMode::MainMemory {
            self.policy.on_children(parent, false, &d.hook);
        }
    }

    pub(super) fn has_swizzled_children(&self, page: &[u8]) -> bool {
        let mut offs = Vec::new();
        self.owner.swip_offsets(page, &mut offs);
        offs.iter().any(|&o| Swip::from_raw(get_u64(page, o)).is_some_and(Swip::is_swizzled))
    }
}
