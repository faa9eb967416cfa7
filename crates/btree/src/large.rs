//! A tree's large values (README T22): writing, reading, latching and verifying the chain of
//! overflow pages a stub names. The chain's page format, the stub and [`Chain`] are in
//! `overflow.rs`.

use swizzledb_buffer::page::PageType;
use swizzledb_buffer::{ExclusiveGuard, PageId, Shared};

use crate::error::{Result, TreeError};
use crate::overflow::{
    append, chain_len, fill_page, is_large, max_inline_value_len, page_payload, validate, Appended, Chain,
    Stub, MAX_VALUE_LEN,
};
use crate::tree::Tree;

impl Tree {
    /// The longest value this tree accepts (T22): at most [`MAX_VALUE_LEN`], at most what an
    /// eighth of the pool's frames hold in overflow pages, and at most what the engine's log
    /// takes in one record (set with [`Tree::with_value_limit`]).
    #[must_use]
    pub fn max_value_len(&self) -> usize {
        let ps = self.pool.page_size();
        let by_pool = (self.pool.capacity() / 8) * page_payload(ps);
        MAX_VALUE_LEN.min(by_pool).min(self.value_limit).max(max_inline_value_len(ps))
    }

    /// This handle with values limited to `max` bytes (the engine passes what its log can
    /// record in one record; T22).
    #[must_use]
    pub fn with_value_limit(mut self, max: usize) -> Tree {
        self.value_limit = max;
        self
    }

    /// Writes `value`'s chain on newly allocated pages, latched exclusively (T22). Nothing is
    /// logged; dropped before its change is logged, the chain is freed again.
    pub(crate) fn write_chain(&self, value: &[u8]) -> Result<Chain<'_>> {
        // T31: before any page is allocated.
        self.check_writable()?;
        let ps = self.pool.page_size();
        let n = chain_len(ps, value.len());
        let mut chain = Chain::fresh(Vec::with_capacity(n));
        for _ in 0..n {
            chain.guards.push(self.pool.allocate_page()?);
        }
        let ids = chain.ids();
        for (i, g) in chain.guards.iter_mut().enumerate() {
            fill_page(g, value, &ids, i);
        }
        Ok(chain)
    }

    /// Reads the value a stub names into `out` (the leaf holding the stub is latched by the
    /// caller), checking each page, the length and the checksum.
    pub(crate) fn read_large(&self, stub: &[u8], leaf: PageId, out: &mut Vec<u8>) -> Result<()> {
        self.walk_chain(stub, leaf, out, |tree, id, out| {
            let g = tree.pool.fix_page::<Shared>(id)?;
            Ok((append(&g, out), None))
        })
        .map(|_| ())
    }

    /// Latches the chain a stub names exclusively (to free it) and reads its value into `out`.
    /// A value longer than this tree accepts now ([`Tree::max_value_len`]: written by an open
    /// with a larger pool or log) is refused with [`TreeError::ValueTooLarge`] before any page
    /// is latched: its chain may not fit latched in this pool at once, and freeing frames for
    /// it again and again would never end.
    pub(crate) fn latch_large(&self, stub: &[u8], leaf: PageId, out: &mut Vec<u8>) -> Result<Chain<'_>> {
        if let Some(s) = Stub::decode(stub) {
            let (len, max) = (usize::try_from(s.len).unwrap_or(usize::MAX), self.max_value_len());
            if len > max {
                return Err(TreeError::ValueTooLarge { len, max });
            }
        }
        // Before the change that frees it is logged (buffer B37).
        let announced = self.pool.announce_change();
        let guards = self.walk_chain(stub, leaf, out, |tree, id, out| {
            let g: ExclusiveGuard<'_> = tree.pool.fix_page(id)?;
            Ok((append(&g, out), Some(g)))
        })?;
        Ok(Chain::old(guards, announced))
    }

    /// [`Tree::verify`] of one large value in leaf `leaf`: every page of its chain an overflow
    /// page (T17 for overflow pages) reached by no other reference, the chain as long as the
    /// value, and the value matching its checksum. Returns the chain's length.
    pub(crate) fn verify_chain(
        &self,
        stub: &[u8],
        leaf: PageId,
        seen: &mut std::collections::HashSet<PageId>,
    ) -> std::result::Result<usize, String> {
        let mut value = Vec::new();
        let mut pages = 0;
        self.walk_chain(stub, leaf, &mut value, |tree, id, out| {
            if !seen.insert(id) {
                return Err(TreeError::Damaged {
                    page: id,
                    reason: "reached by more than one reference".into(),
                });
            }
            let g = tree.with_room(|| Ok(tree.pool.fix_page::<Shared>(id)?))?;
            validate(&g).map_err(|reason| TreeError::Damaged { page: id, reason })?;
            pages += 1;
            Ok((append(&g, out), None))
        })
        .map_err(|e| match e {
            TreeError::Damaged { page, reason } => format!("{page:?}: {reason}"),
            e => format!("{leaf:?}: {e}"),
        })?;
        Ok(pages)
    }

    /// Follows the chain a stub names: `fix` latches each page, appends it to `out` with
    /// [`append`](crate::overflow::append) and keeps its latch if it returns the guard; the chain's length, page types,
    /// byte counts and the value's checksum are checked.
    fn walk_chain<'a>(
        &'a self,
        stub: &[u8],
        leaf: PageId,
        out: &mut Vec<u8>,
        mut fix: impl FnMut(&'a Tree, PageId, &mut Vec<u8>) -> Result<(Appended, Option<ExclusiveGuard<'a>>)>,
    ) -> Result<Vec<ExclusiveGuard<'a>>> {
        let damaged = |reason: String| TreeError::Damaged { page: leaf, reason };
        let s = Stub::decode(stub).ok_or_else(|| damaged("a record's stub names no overflow page".into()))?;
        let ps = self.pool.page_size();
        let len = usize::try_from(s.len).unwrap_or(usize::MAX);
        if !is_large(ps, len) || len > MAX_VALUE_LEN {
            return Err(damaged(format!("a stub of a {len}-byte value")));
        }
        let pages = chain_len(ps, len);
        out.clear();
        out.reserve(len);
        let mut guards = Vec::new();
        let mut at = Some(s.first);
        for i in 0..pages {
            let id =
                at.ok_or_else(|| damaged(format!("the overflow chain ends after {i} of {pages} pages")))?;
            let (Appended { bytes, next: nxt, ty }, g) = fix(self, id, out)?;
            if ty != Some(PageType::Overflow) {
                return Err(damaged(format!("page {id} of an overflow chain is a {ty:?} page")));
            }
            let want = if i + 1 == pages { len - i * page_payload(ps) } else { page_payload(ps) };
            if bytes != want {
                return Err(damaged(format!("overflow page {id} holds {bytes} bytes, not {want}")));
            }
            guards.extend(g);
            at = nxt;
        }
        if let Some(id) = at {
            return Err(damaged(format!("the overflow chain goes on to page {id} past the value's end")));
        }
        if crc32c::crc32c(out) != s.crc {
            return Err(damaged("a large value does not match its checksum".into()));
        }
        Ok(guards)
    }
}
