//! What the buffer pool and the callers know of a tree's pages: the `PageOwner` seam (where a
//! node's swips are, whether a page read from disk is well formed) and the longest keys and
//! values a page size allows.

use swizzledb_buffer::page;
use swizzledb_buffer::PageOwner;

use crate::{node, overflow};

/// The B-tree's side of the PageOwner seam: where the swips of a node are, and whether a page read
/// from disk is a well-formed node.
#[derive(Debug, Default)]
pub struct BTreeOwner;

impl PageOwner for BTreeOwner {
    fn swip_offsets(&self, page: &[u8], out: &mut Vec<usize>) {
        node::swip_offsets(page, out);
    }

    fn check_page(&self, page: &[u8]) -> std::result::Result<(), String> {
        validate_page(page)
    }

    /// The foster swip, or the record whose key range holds `child`'s low fence (binary
    /// search); a full scan only if neither holds `raw` (a child whose fences are not yet those
    /// of its place, which T2/T3 do not produce, so this is a safety net).
    fn find_swip(&self, parent: &[u8], child: &[u8], raw: u64) -> Option<usize> {
        if node::has_foster(parent) && page::get_u64(parent, node::FOSTER_SWIP) == raw {
            return Some(node::FOSTER_SWIP);
        }
        if !node::is_leaf(parent) && node::count(parent) > 0 {
            let i = node::child_index(parent, node::low_fence(child).unwrap_or(b""));
            let off = node::child_swip_off(parent, i);
            if page::get_u64(parent, off) == raw {
                return Some(off);
            }
        }
        // Not asserted: a damaged page that passed validation (T17) can have separators that do
        // not match its children's fences, and that is damage to report, not a bug to panic on.
        let mut offs = Vec::new();
        node::swip_offsets(parent, &mut offs);
        offs.into_iter().find(|&o| page::get_u64(parent, o) == raw)
    }
}

/// Checks a page the tree owns — a node (T17) or an overflow page (T22) — before anything
/// reads it.
///
/// # Errors
/// The first inconsistency found.
pub fn validate_page(page: &[u8]) -> std::result::Result<(), String> {
    if page::page_type(page) == Some(page::PageType::Overflow) {
        return overflow::validate(page);
    }
    node::validate(page)
}

/// Longest key for a page size: a node must hold its three fence keys and two records (T6).
#[must_use]
pub fn max_key_len(page_size: usize) -> usize {
    page_size / 16
}

/// Longest value a tree accepts, whatever its page size (T22): values longer than
/// [`overflow::max_inline_value_len`] live in overflow pages. A tree's own limit
/// ([`Tree::max_value_len`]) can be lower: it depends on its pool and log too.
#[must_use]
pub fn max_value_len(page_size: usize) -> usize {
    overflow::MAX_VALUE_LEN.max(overflow::max_inline_value_len(page_size))
}
