//! Roots and the catalog: which trees the file holds, and their root frames, resident for the
//! pool's life (B5).

use super::{BufferPool, PoolMode};
use crate::error::Result;
use crate::guard::{Exclusive, LatchKind, PageGuard};
use crate::stats::bump;
use crate::trace::EventKind;
use std::sync::atomic::Ordering::Relaxed;
use swizzledb_sync::{FrameId, PageId};

impl BufferPool {
    /// The root page of the named tree, from the catalog on the metadata page.
    #[must_use]
    pub fn catalog_get(&self, name: &str) -> Option<PageId> {
        self.meta.lock().trees.get(name).copied()
    }

    /// Names of all trees in the catalog.
    #[must_use]
    pub fn catalog_names(&self) -> Vec<String> {
        self.meta.lock().trees.keys().cloned().collect()
    }

    /// Whether a tree named `name` would fit the catalog now, without adding it (a logged
    /// database checks before it logs the new tree).
    ///
    /// # Errors
    /// [`BufferError::CatalogFull`](crate::BufferError::CatalogFull) (or `Config` for an invalid
    /// name) as `catalog_insert` would.
    pub fn catalog_fits(&self, name: &str) -> Result<()> {
        let mut meta = self.meta.lock().clone();
        let held = meta.trees.len();
        meta.trees.insert(name.to_owned(), PageId::new(1).expect("page 1"));
        let mut probe = vec![0u8; self.page_size];
        meta.encode(&mut probe).map_err(|e| full_at(e, held))
    }

    /// Records a tree in the catalog (persisted by the next flush).
    ///
    /// # Errors
    /// The catalog would no longer fit the metadata page.
    pub fn catalog_insert(&self, name: &str, root: PageId) -> Result<()> {
        let mut meta = self.meta.lock();
        let held = meta.trees.len();
        meta.trees.insert(name.to_owned(), root);
        let mut probe = vec![0u8; self.page_size];
        if let Err(e) = meta.encode(&mut probe) {
            meta.trees.remove(name);
            return Err(full_at(e, held));
        }
        Ok(())
    }

    /// Removes a tree from the catalog (persisted by the next flush); returns its root page, or
    /// `None` if no tree has that name. The caller frees the tree's pages.
    pub fn catalog_remove(&self, name: &str) -> Option<PageId> {
        self.meta.lock().trees.remove(name)
    }

    /// Frees the root page of a dropped tree (B5's one exception): the frame stops being a
    /// root, then is freed as [`BufferPool::free_page`] frees any page. The caller has removed
    /// the tree from the catalog and freed every other page of it, so `g` holds no swips, and
    /// makes sure that no handle reaches the root frame any more.
    pub fn free_root(&self, g: PageGuard<'_, Exclusive>) {
        let f = g.frame;
        self.desc(f).root.store(false, Relaxed);
        self.roots.lock().retain(|&r| r != f);
        self.free_page(g);
    }

    /// Loads a tree's root and keeps it resident for the pool's life (B5). In main-memory mode the
    /// whole tree is loaded and swizzled.
    ///
    /// # Errors
    /// I/O errors, corruption, or too little memory.
    pub fn load_root(&self, root: PageId) -> Result<FrameId> {
        let g = self.fix_page::<Exclusive>(root)?;
        self.desc(g.frame).root.store(true, Relaxed);
        let f = g.frame;
        self.roots.lock().push(f);
        if self.mode == PoolMode::MainMemory {
            let mut g = g;
            self.load_subtree(&mut g)?;
        }
        Ok(f)
    }

    /// Marks a freshly allocated page as a tree root (B5).
    pub fn make_root(&self, g: &PageGuard<'_, Exclusive>) {
        self.desc(g.frame).root.store(true, Relaxed);
        self.roots.lock().push(g.frame);
    }

    /// Main-memory mode: loads every descendant of `g` and swizzles every reference.
    fn load_subtree(&self, g: &mut PageGuard<'_, Exclusive>) -> Result<()> {
        let mut offs = Vec::new();
        self.owner.swip_offsets(g, &mut offs);
        for off in offs {
            let mut child = self.fix_child::<Exclusive, Exclusive>(g, off)?;
            self.load_subtree(&mut child)?;
        }
        Ok(())
    }

    /// Fixes a root frame returned by [`BufferPool::load_root`].
    #[inline]
    pub fn fix_root<M: LatchKind>(&self, root: FrameId) -> PageGuard<'_, M> {
        // B5: a root stays resident, so no page table is asked. The one exception, a dropped
        // tree (`free_root`), may bring a handle that checked its tree before the drop here with
        // a frame no longer its root: it latches what the frame holds, and the tree then finds
        // its dropped flag set under that latch (btree T25).
        let d = self.desc(root);
        d.latch.lock(M::MODE);
        self.count(|b| {
            bump(&b.fixes);
            bump(&b.hits);
        });
        self.trace(EventKind::Fix, root, None, Some(M::MODE), Some(true));
        PageGuard::adopt(self, root)
    }
}

/// `Meta::encode`'s refusal of a catalog with a new tree added, counting the trees the catalog
/// holds without it (`held`), as [`BufferError::CatalogFull`](crate::BufferError::CatalogFull)
/// documents; any other error as it is.
fn full_at(e: crate::BufferError, held: usize) -> crate::BufferError {
    match e {
        crate::BufferError::CatalogFull { .. } => crate::BufferError::CatalogFull { trees: held },
        e => e,
    }
}
