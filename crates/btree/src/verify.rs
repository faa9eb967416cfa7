//! Reading a tree whole: its structure checked node by node (T17, `Tree::verify`) and its
//! record count estimated from a few nodes per level (T30, `Tree::approximate_len`).

use std::collections::HashSet;

use swizzledb_buffer::page;
use swizzledb_buffer::{PageId, Shared, SharedGuard, Swip};

use crate::error::Result;
use crate::node::{self, Fence, FOSTER_SWIP};
use crate::tree::Tree;

/// Counts gathered by [`Tree::verify`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeShape {
    /// Levels, counting the leaf level.
    pub height: usize,
    /// All nodes.
    pub nodes: usize,
    /// Leaf nodes.
    pub leaves: usize,
    /// Nodes reachable only through a foster parent (not yet adopted).
    pub foster_children: usize,
    /// Records in leaves.
    pub records: usize,
    /// Swizzled references met on the way.
    pub swizzled: usize,
    /// Records whose value lives in overflow pages (T22).
    pub large_values: usize,
    /// Overflow pages of those values.
    pub overflow_pages: usize,
}

/// What `verify` expects of a child: (swip offset in the parent, low fence, high fence, level).
type ChildSpec = (usize, Option<Vec<u8>>, Option<Vec<u8>>, u8);

impl Tree {
    /// An estimate of the number of records from a few nodes per level (T30): a node's
    /// estimate is its record count for a leaf; for an inner node, the sum of its children's
    /// if it has at most three, else its child count times the mean estimate of children
    /// sampled inside it (at a quarter, a half and three quarters below the two top levels,
    /// the middle one below that), plus its foster child's. It reads at most
    /// `1 + 3 + 9 * (height - 1)` nodes; exact for a one-leaf tree, and as close as the sampled
    /// leaves' fill is to the rest. Uncommitted records count. Concurrent writers only move it
    /// by what they change meanwhile; a node freed under it counts as empty.
    ///
    /// # Errors
    /// The tree was closed or dropped (T15, T25); I/O errors reading a node.
    pub fn approximate_len(&self) -> Result<u64> {
        self.check_open()?;
        let root: SharedGuard<'_> = self.fix_own_root()?;
        // T25: with the tree dropped meanwhile, the pages below may be another tree's.
        let estimate = self.unless_dropped(self.estimate(root, 2))?;
        Ok(estimate.round() as u64)
    }

    /// [`Tree::approximate_len`] below `g`, sampling three children down `wide` more levels.
    fn estimate(&self, g: SharedGuard<'_>, wide: u32) -> Result<f64> {
        let level = node::level(&g);
        let n = node::count(&g);
        let mut picks = Vec::new();
        let mut estimate = 0.0;
        if node::is_leaf(&g) {
            estimate = n as f64;
        } else if n > 0 {
            // Inner children only: a tree's edges hold its partly filled nodes (the last leaf
            // of a load in key order), which would weigh as much as all the full ones between.
            picks = match (wide, n) {
                (_, ..=3) => (0..n).collect(),
                (0, _) => vec![n / 2],
                _ => vec![n / 4, n / 2, 3 * n / 4],
            };
        }
        let swips: Vec<(usize, bool)> = picks
            .iter()
            .map(|&i| (node::child_swip_off(&g, i), false))
            .chain(node::foster_key(&g).map(|_| (node::FOSTER_SWIP, true)))
            .collect();
        let pool = &*self.pool;
        let targets: Vec<(PageId, bool)> = swips
            .into_iter()
            .filter_map(|(off, foster)| {
                Swip::from_raw(page::get_u64(&g, off)).map(|s| (pool.swip_page_id(s), foster))
            })
            .collect();
        drop(g);
        let mut sampled = 0.0;
        for (pid, foster) in targets {
            let c = self.with_room(|| Ok(pool.fix_page::<Shared>(pid)?))?;
            // Freed or reused meanwhile: nothing to count there.
            let expected = if foster { level } else { level.wrapping_sub(1) };
            if node::validate(&c).is_err() || node::level(&c) != expected {
                continue;
            }
            let e = self.estimate(c, if foster { 0 } else { wide.saturating_sub(1) })?;
            if foster {
                estimate += e;
            } else {
                sampled += e;
            }
        }
        if !picks.is_empty() {
            // Every child read: their sum; else the mean of those read, times the children.
            estimate += if picks.len() == n { sampled } else { sampled / picks.len() as f64 * n as f64 };
        }
        Ok(estimate)
    }

    /// Full structural check (T1–T4 and B6): fences, key order, levels, every node reached by
    /// exactly one reference, swizzled references matching the child's recorded parent. Call it
    /// while no other thread changes the tree.
    ///
    /// # Errors
    /// A description of the first violation (or an I/O error while reading pages); the
    /// message of [`TreeError::Closed`](crate::TreeError::Closed) or
    /// [`TreeError::Dropped`](crate::TreeError::Dropped) through a handle of a closed database
    /// or a dropped tree (T15, T25), whose root page may be another tree's by then.
    pub fn verify(&self) -> std::result::Result<TreeShape, String> {
        self.check_open().map_err(|e| e.to_string())?;
        let mut shape = TreeShape::default();
        let mut seen = HashSet::new();
        let root: SharedGuard<'_> = self.pool.fix_root(self.root);
        shape.height = usize::from(node::level(&root)) + 1;
        self.verify_node(root, None, None, None, &mut seen, &mut shape)?;
        Ok(shape)
    }

    /// Checks one node, then its children. The node is unlatched before its children are visited
    /// (the caller guarantees no concurrent changes), so a small pool can evict visited siblings.
    fn verify_node(
        &self,
        g: SharedGuard<'_>,
        low: Fence<'_>,
        high: Fence<'_>,
        level: Option<u8>,
        seen: &mut HashSet<PageId>,
        shape: &mut TreeShape,
    ) -> std::result::Result<(), String> {
        let pid = g.page_id();
        let at = |msg: String| format!("{pid:?}: {msg}");
        if !seen.insert(pid) {
            return Err(at("reached by more than one reference".into()));
        }
        node::validate(&g).map_err(&at)?;
        let lvl = node::level(&g);
        if level.is_some_and(|l| l != lvl) {
            return Err(at(format!("level {lvl}, expected {level:?}")));
        }
        if node::low_fence(&g) != low || node::high_fence(&g) != high {
            return Err(at(format!(
                "fences {:?}..{:?}, expected {low:?}..{high:?}",
                node::low_fence(&g),
                node::high_fence(&g)
            )));
        }
        let own_high = node::own_high(&g).map(<[u8]>::to_vec);
        if let Some(fk) = node::foster_key(&g) {
            if low.is_some_and(|l| fk <= l) || high.is_some_and(|h| fk >= h) {
                return Err(at("foster key outside the fences".into()));
            }
        }
        let n = node::count(&g);
        shape.nodes += 1;
        let keys: Vec<Vec<u8>> = (0..n).map(|i| node::key(&g, i).to_vec()).collect();
        if keys.windows(2).any(|w| w[0] >= w[1]) {
            return Err(at("keys out of order".into()));
        }
        let first_checked = usize::from(!node::is_leaf(&g));
        for k in keys.iter().skip(first_checked) {
            if low.is_some_and(|l| k.as_slice() < l) || own_high.as_ref().is_some_and(|h| k >= h) {
                return Err(at(format!("key {k:?} outside its range")));
            }
        }
        let mut children: Vec<ChildSpec> = Vec::new();
        let mut stubs = Vec::new();
        if node::is_leaf(&g) {
            shape.leaves += 1;
            shape.records += n;
            stubs.extend((0..n).filter(|&i| node::is_stub(&*g, i)).map(|i| node::value(&g, i).to_vec()));
        } else {
            if keys[0].as_slice() != low.unwrap_or(b"") {
                return Err(at("first separator differs from the low fence".into()));
            }
            for i in 0..n {
                let clow = if i == 0 { low.map(<[u8]>::to_vec) } else { Some(keys[i].clone()) };
                let chigh = if i + 1 < n { Some(keys[i + 1].clone()) } else { own_high.clone() };
                children.push((node::child_swip_off(&g, i), clow, chigh, lvl - 1));
            }
        }
        if let Some(fk) = node::foster_key(&g) {
            shape.foster_children += 1;
            children.push((FOSTER_SWIP, Some(fk.to_vec()), high.map(<[u8]>::to_vec), lvl));
        }
        let pool = &*self.pool;
        let mut targets = Vec::with_capacity(children.len());
        for (off, clow, chigh, clvl) in children {
            let swip = Swip::from_raw(page::get_u64(&g, off)).ok_or_else(|| at("invalid swip".into()))?;
            if swip.is_swizzled() {
                shape.swizzled += 1;
                if pool.swizzled_parent(swip) != Some(g.frame()) {
                    return Err(at(format!("swizzled child {swip:?} records another parent")));
                }
            }
            targets.push((pool.swip_page_id(swip), clow, chigh, clvl));
        }
        drop(g);
        for stub in stubs {
            shape.large_values += 1;
            shape.overflow_pages += self.verify_chain(&stub, pid, seen)?;
        }
        for (cpid, clow, chigh, clvl) in targets {
            let c = self.with_room(|| Ok(pool.fix_page::<Shared>(cpid)?)).map_err(|e| at(e.to_string()))?;
            self.verify_node(c, clow.as_deref(), chigh.as_deref(), Some(clvl), seen, shape)?;
        }
        Ok(())
    }
}
