//! Page-local redo (RECOVERY.md R9): what one log record does to one page, given only that
//! page's state before it. Restart (`restart.rs`) applies it to every page of its dirty page
//! table, single-page recovery (`repair.rs`, R18) to one page.

use swizzledb_btree::log::{redo, redo_node, split_off, LeafChange};
use swizzledb_buffer::page;
use swizzledb_buffer::PageId;
use swizzledb_sync::Lsn;

use crate::error::{Error, Result};
use crate::record::{Change, NodeLog, Record};

/// A damaged or inconsistent log record at `lsn` (R10).
pub(crate) fn corrupted(lsn: Lsn, reason: impl Into<String>) -> Error {
    Error::LogCorrupted { lsn, reason: reason.into() }
}

/// Where page-local redo finds the page a record applies to, and puts an image (R9).
pub(crate) trait RedoTarget {
    /// The page's current state, for a change on top of it; `lsn` names the record that needs
    /// it, for errors.
    ///
    /// # Errors
    /// The page is not available (damaged on disk, or no image precedes the record).
    fn page(&mut self, id: PageId, lsn: Lsn) -> Result<&mut Vec<u8>>;

    /// Makes `image` the page's state, stamped with `lsn` (`Lsn(0)` for a base image, which
    /// precedes its record's change).
    ///
    /// # Errors
    /// The image is not a valid node of this page (R9).
    fn install(&mut self, id: PageId, image: &[u8], lsn: Lsn) -> Result<()>;

    /// The size of the pages.
    fn page_size(&self) -> usize;

    /// R29: the page's own copy if it holds the record at `lsn` already (restart: the file's
    /// copy, when it verifies and carries a page LSN of at least `lsn`), made the page's state;
    /// `None` otherwise, and by default.
    ///
    /// # Errors
    /// An I/O error reading it.
    fn holds_already(&mut self, id: PageId, lsn: Lsn) -> Result<bool> {
        let _ = (id, lsn);
        Ok(false)
    }
}

/// R17: what each page's entry in the log archive holds for the record `body`, which changes
/// `pages` (`Record::pages_in`): the whole body, except for the pages a record writes whole or
/// frees beside others — a large value's overflow pages, whose entry is a structure record
/// with the page's image (what redo rebuilds from the value, T22), and freed pages, whose entry
/// is a structure record that frees that page alone. For each page the entry carries an image,
/// frees the page or redoes on it exactly as the whole record does (`redo_on_page`,
/// `carries_image`, `frees`), so single-page recovery and the archive's readers need nothing
/// else; and a value's entries cost its size, where the whole record per page cost its size
/// times its pages. Records that name at most two pages, or that do not decode (their readers
/// report them), keep the whole body for every page.
pub(crate) fn archive_entries(body: Vec<u8>, pages: &[PageId], page_size: usize) -> Vec<(PageId, Vec<u8>)> {
    // A run holds one entry per page and LSN (wal A2): a record naming a page twice, which no
    // engine writes, keeps its whole body once for each page it names (its redo on the page is
    // the whole record's), so that the run is written and the record is met where it is redone.
    let mut unique = Vec::new();
    let pages = if has_repeats(pages) {
        unique = pages.to_vec();
        unique.sort_unstable();
        unique.dedup();
        &unique[..]
    } else {
        pages
    };
    let whole = |body: Vec<u8>| {
        let mut out: Vec<(PageId, Vec<u8>)> = pages.iter().map(|p| (*p, Vec::new())).collect();
        if let Some(((_, last), rest)) = out.split_last_mut() {
            for (_, b) in rest {
                b.clone_from(&body);
            }
            *last = body;
        }
        out
    };
    if pages.len() <= 2 || !unique.is_empty() {
        return whole(body);
    }
    let Ok(record) = Record::decode(&body) else { return whole(body) };
    let alone = |p: PageId| Record::Structure { pages: Vec::new(), freed: vec![p] }.encode();
    match &record {
        Record::Leaf { page, change, chain, freed, .. } => {
            if overlap(chain, freed) || chain.contains(page) || freed.contains(page) {
                return whole(body);
            }
            let images: std::result::Result<Vec<Vec<u8>>, String> =
                (0..chain.len()).map(|at| chain_page_image(page_size, change, chain, at)).collect();
            let Ok(images) = images else { return whole(body) };
            let mut out = Vec::with_capacity(pages.len());
            for (p, image) in chain.iter().zip(images) {
                out.push((
                    *p,
                    Record::Structure { pages: vec![(*p, NodeLog::Image(image))], freed: Vec::new() }
                        .encode(),
                ));
            }
            out.extend(freed.iter().map(|p| (*p, alone(*p))));
            out.push((*page, body));
            out
        }
        Record::Structure { pages: nodes, freed } if !freed.is_empty() => {
            let written: Vec<PageId> = nodes.iter().map(|(p, _)| *p).collect();
            if overlap(&written, freed) {
                return whole(body);
            }
            let mut out: Vec<(PageId, Vec<u8>)> = freed.iter().map(|p| (*p, alone(*p))).collect();
            if let Some((last, rest)) = written.split_last() {
                out.extend(rest.iter().map(|p| (*p, body.clone())));
                out.push((*last, body));
            }
            out
        }
        _ => whole(body),
    }
}

/// T22: the image of overflow page `chain[at]` that a leaf change writes (its part of the new
/// value), or why the change writes none (a delete, or a value whose length does not match the
/// chain): what redo installs and what the archive keeps for that page (R17).
fn chain_page_image(
    page_size: usize,
    change: &Change,
    chain: &[PageId],
    at: usize,
) -> std::result::Result<Vec<u8>, String> {
    let (Change::Insert { value, .. } | Change::Update { new: value, .. }) = change else {
        return Err(format!("a delete that writes overflow page {}", chain[at]));
    };
    if swizzledb_btree::overflow::chain_len(page_size, value.len()) != chain.len() {
        return Err(format!("a value of {} bytes with {} overflow pages", value.len(), chain.len()));
    }
    Ok(swizzledb_btree::overflow::page_image(page_size, value, chain, at))
}

/// Whether a page appears in `pages` more than once.
fn has_repeats(pages: &[PageId]) -> bool {
    match pages.len() {
        0 | 1 => false,
        2 => pages[0] == pages[1],
        _ => {
            let mut sorted = pages.to_vec();
            sorted.sort_unstable();
            sorted.windows(2).any(|w| w[0] == w[1])
        }
    }
}

/// Whether a page is in both lists.
fn overlap(a: &[PageId], b: &[PageId]) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let mut a = a.to_vec();
    a.sort_unstable();
    b.iter().any(|p| a.binary_search(p).is_ok())
}

/// Checks an image from the log before anything uses it (R9): its size, its node structure
/// (btree README T17) and the page id it names.
pub(crate) fn check_image(id: PageId, image: &[u8], page_size: usize, lsn: Lsn) -> Result<()> {
    if image.len() != page_size {
        return Err(corrupted(lsn, format!("an image of page {id} of {} bytes", image.len())));
    }
    swizzledb_btree::validate_page(image)
        .map_err(|e| corrupted(lsn, format!("the image of page {id} is damaged: {e}")))?;
    if page::page_id(image) != id.get() {
        return Err(corrupted(lsn, format!("the image of page {id} names page {}", page::page_id(image))));
    }
    Ok(())
}

/// Page-local redo (R9): what the record at `lsn` does to page `id`, given only that page's
/// state before it (or nothing, when the record carries the page's image). Restart applies it
/// to every page of its dirty page table; single-page recovery (R18) to one page. Returns
/// whether the record changed the page (a change already in the page, by its page LSN, is
/// skipped).
///
/// # Errors
/// The page is missing or damaged, or the change does not match it (`LogCorrupted`).
pub(crate) fn redo_on_page(
    target: &mut impl RedoTarget,
    id: PageId,
    lsn: Lsn,
    record: &Record,
) -> Result<bool> {
    match record {
        Record::Leaf { page: leaf, change, base, chain, .. } if *leaf == id => {
            if let Some(image) = base {
                target.install(id, image, Lsn(0))?;
            }
            let p = target.page(id, lsn)?;
            if page::page_lsn(p) >= lsn {
                return Ok(false);
            }
            let spliced;
            let leaf_change = match change.borrow() {
                Some(c) => c,
                None => {
                    spliced = patched(p, change).ok_or_else(|| {
                        corrupted(lsn, format!("redo on page {id}: the patch does not fit its value"))
                    })?;
                    LeafChange::Update { key: change.key(), old: &spliced.0, new: &spliced.1 }
                }
            };
            redo(p, &leaf_change, chain).map_err(|e| corrupted(lsn, format!("redo on page {id}: {e}")))?;
            page::set_page_lsn(p, lsn);
            Ok(true)
        }
        // T22: a page of the new value's overflow chain, rebuilt from the value (its image).
        Record::Leaf { change, chain, .. } if chain.contains(&id) => {
            let at = chain.iter().position(|p| *p == id).unwrap_or_default();
            let image =
                chain_page_image(target.page_size(), change, chain, at).map_err(|e| corrupted(lsn, e))?;
            target.install(id, &image, lsn)?;
            Ok(true)
        }
        Record::Structure { pages, .. }
            if pages.iter().any(|(p, n)| *p == id && matches!(n, NodeLog::SplitOff)) =>
        {
            // R29: the new node of a split logged without its image: the page's own copy if it
            // reached the file after the split, else rebuilt from the split's source as it
            // stood just before this record (redo handles it before the source, R9).
            if target.holds_already(id, lsn)? {
                return Ok(false);
            }
            let Some((source, key)) = record.split_off_source(id) else {
                return Err(corrupted(lsn, format!("page {id} is a split-off, but no split names it")));
            };
            let before = target.page(source, lsn)?;
            if page::page_lsn(before) >= lsn {
                return Err(corrupted(
                    lsn,
                    format!("split-off page {id}: its source, page {source}, is already past the split"),
                ));
            }
            let image = split_off(before, key, id)
                .map_err(|e| corrupted(lsn, format!("split-off page {id} of page {source}: {e}")))?;
            target.install(id, &image, lsn)?;
            Ok(true)
        }
        Record::Structure { pages, .. } => {
            match pages.iter().find(|(p, _)| *p == id).map(|(_, n)| n.change()) {
                Some(Err(image)) => {
                    target.install(id, image, lsn)?;
                    Ok(true)
                }
                // A logical change, on the page's state before it (R9).
                Some(Ok(change)) => {
                    let p = target.page(id, lsn)?;
                    if page::page_lsn(p) >= lsn {
                        return Ok(false);
                    }
                    redo_node(p, &change).map_err(|e| corrupted(lsn, format!("redo on page {id}: {e}")))?;
                    page::set_page_lsn(p, lsn);
                    Ok(true)
                }
                // A freed page: its contents no longer matter (it is allocated again only with
                // a new image).
                None => Ok(false),
            }
        }
        // Records that change no page, or not this one.
        Record::Leaf { .. }
        | Record::Begin { .. }
        | Record::Commit { .. }
        | Record::Abort { .. }
        | Record::End { .. }
        | Record::CreateTree { .. }
        | Record::DropTree { .. }
        | Record::CheckpointBegin
        | Record::CheckpointEnd(_)
        | Record::CheckpointPart(_)
        | Record::PageWrite { .. } => Ok(false),
    }
}

/// The values before and after a [`Change::Patch`] made on the record of its key in the leaf
/// `page`: `None` if the key is absent, its value is in an overflow chain, or does not hold
/// the bytes the patch replaces.
fn patched(page: &[u8], change: &Change) -> Option<(Vec<u8>, Vec<u8>)> {
    let Change::Patch { key, edits } = change else { return None };
    let i = swizzledb_btree::node::search(page, key).ok()?;
    if swizzledb_btree::node::is_stub(page, i) {
        return None;
    }
    let before = swizzledb_btree::node::value(page, i);
    let after = crate::record::splice(before, edits, crate::record::Direction::Forward)?;
    Some((before.to_vec(), after))
}
