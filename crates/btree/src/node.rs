//! Node layout: a slotted page holding fence keys, an optional foster reference, and sorted
//! records (rules T1–T4 of `README.md`).
//!
//! ```text
//! offset  size  field
//!      0    32  common page header (buffer::page): checksum, type, level, page id, page LSN
//!     32     2  number of slots n
//!     34     2  heap start: lowest used byte of the record heap, which grows down from the end
//!     36     2  garbage: dead heap bytes, reclaimed by compaction
//!     38     1  flags: LOW_INF (low fence is -inf), HIGH_INF (high fence is +inf), HAS_FOSTER
//!     39     1  reserved
//!     40     4  low fence:  heap offset u16, length u16
//!     44     4  high fence: heap offset u16, length u16
//!     48     4  foster key: heap offset u16, length u16 (valid if HAS_FOSTER)
//!     52     2  prefix length p: bytes shared by every key of the node (from the fences)
//!     54     2  last insert: 1 + the slot the last insert took, 0 if none (a hint, T29)
//!     56     8  foster swip (valid if HAS_FOSTER)
//!     64 12n    slots, sorted by key: heap offset u16, key length u16, head u64 — the 8 key
//!               bytes after the prefix, big-endian, zero-padded (T10)
//!      …        free space
//!              record heap
//!   leaf record:  value length u16 | key | value — the length's top bit (STUB_FLAG) marks a
//!                 large value's stub: the value lives in overflow pages (T22, overflow.rs)
//!   inner record: child swip u64   | key        (slot 0's key is the node's low fence)
//! ```
//! A node covers the keys in `[low fence, high fence)`. With a foster child it keeps
//! `[low, foster key)` and its foster child holds `[foster key, high)`; the foster child's high
//! fence equals its foster parent's (T2).

use std::cmp::Ordering;
use swizzledb_buffer::page::{self, get_u16, get_u64, put_u16, put_u64, PageType, HEADER_SIZE};
use swizzledb_buffer::{LatchKind, PageGuard, PageId, PageView, Swip};

use crate::overflow::STUB_LEN;

const N_SLOTS: usize = 32;
const HEAP_START: usize = 34;
const GARBAGE: usize = 36;
const FLAGS: usize = 38;
const LOW: usize = 40;
const HIGH: usize = 44;
const FOSTER_KEY: usize = 48;
const PREFIX: usize = 52;
/// 1 + the slot of the node's last insert, 0 if none: a hint for choosing split points (T29).
const LAST_INSERT: usize = 54;
/// Byte offset of the foster swip in every node.
pub const FOSTER_SWIP: usize = 56;
const SLOTS: usize = 64;
const SLOT_SIZE: usize = 12;

/// The top bit of a leaf record's value length: the record holds a large value's stub (T22).
const STUB_FLAG: u16 = 0x8000;
/// The value-length bits of a leaf record's length field.
const VALUE_LEN: u16 = 0x7fff;

const LOW_INF: u8 = 1;
const HIGH_INF: u8 = 2;
const HAS_FOSTER: u8 = 4;

const _: () = assert!(SLOTS >= HEADER_SIZE + 32, "node header must follow the page header");
const _: () = assert!(FOSTER_SWIP.is_multiple_of(8) && FOSTER_SWIP + 8 == SLOTS);

/// A fence: a key, or infinity on that side.
pub type Fence<'a> = Option<&'a [u8]>;

/// What a search reads of a node: the bytes of a latched page, or an optimistic view of an
/// unlatched one (buffer README B24; btree README T20), whose loads return garbage rather
/// than fail when the page changes under them, and count only once the view validates. One
/// search code serves both.
pub trait NodeBytes {
    /// Byte `off`.
    fn byte(&self, off: usize) -> u8;
    /// The little-endian `u16` at `off`.
    fn u16_at(&self, off: usize) -> u16;
    /// The little-endian `u64` at `off`.
    fn u64_at(&self, off: usize) -> u64;
    /// Orders the key in bytes `off..off + len` against `k`, both from position `skip` on.
    fn cmp_key_at(&self, off: usize, len: usize, skip: usize, k: &[u8]) -> Ordering;
    /// Whether the `n` bytes at `off` equal `k`'s first `n` (`k` holds at least `n`).
    fn eq_prefix_at(&self, off: usize, n: usize, k: &[u8]) -> bool;
    /// Starts loading the cache line of byte `off` (a hint, F12 of the buffer README).
    fn prefetch_at(&self, off: usize);
    /// Copies the bytes from `off` into `out`.
    fn copy_at(&self, off: usize, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            *b = self.byte(off + i);
        }
    }
}

impl NodeBytes for [u8] {
    #[inline]
    fn byte(&self, off: usize) -> u8 {
        self[off]
    }
    #[inline]
    fn u16_at(&self, off: usize) -> u16 {
        get_u16(self, off)
    }
    #[inline]
    fn u64_at(&self, off: usize) -> u64 {
        get_u64(self, off)
    }
    #[inline]
    fn cmp_key_at(&self, off: usize, len: usize, skip: usize, k: &[u8]) -> Ordering {
        cmp_keys(&self[off + skip..off + len], &k[skip..])
    }
    #[inline]
    fn eq_prefix_at(&self, off: usize, n: usize, k: &[u8]) -> bool {
        eq_keys(&self[off..off + n], &k[..n])
    }
    #[inline]
    fn prefetch_at(&self, off: usize) {
        page::prefetch(self, off);
    }
    #[inline]
    fn copy_at(&self, off: usize, out: &mut [u8]) {
        out.copy_from_slice(&self[off..off + out.len()]);
    }
}

/// Delegates to the bytes a type dereferences to.
macro_rules! node_bytes_via_deref {
    ($(impl$([$($g:tt)*])? for $t:ty;)*) => {$(
        impl$(<$($g)*>)? NodeBytes for $t {
            #[inline]
            fn byte(&self, off: usize) -> u8 {
                (**self).byte(off)
            }
            #[inline]
            fn u16_at(&self, off: usize) -> u16 {
                (**self).u16_at(off)
            }
            #[inline]
            fn u64_at(&self, off: usize) -> u64 {
                (**self).u64_at(off)
            }
            #[inline]
            fn cmp_key_at(&self, off: usize, len: usize, skip: usize, k: &[u8]) -> Ordering {
                (**self).cmp_key_at(off, len, skip, k)
            }
            #[inline]
            fn eq_prefix_at(&self, off: usize, n: usize, k: &[u8]) -> bool {
                (**self).eq_prefix_at(off, n, k)
            }
            #[inline]
            fn prefetch_at(&self, off: usize) {
                (**self).prefetch_at(off);
            }
            #[inline]
            fn copy_at(&self, off: usize, out: &mut [u8]) {
                (**self).copy_at(off, out);
            }
        }
    )*};
}

node_bytes_via_deref! {
    impl[M: LatchKind] for PageGuard<'_, M>;
    impl for Vec<u8>;
}

impl NodeBytes for PageView<'_> {
    #[inline]
    fn byte(&self, off: usize) -> u8 {
        self.u8(off)
    }
    #[inline]
    fn u16_at(&self, off: usize) -> u16 {
        self.u16(off)
    }
    #[inline]
    fn u64_at(&self, off: usize) -> u64 {
        self.u64(off)
    }
    fn cmp_key_at(&self, off: usize, len: usize, skip: usize, k: &[u8]) -> Ordering {
        let n = len.min(k.len());
        let mut i = skip;
        // Eight bytes per atomic load where they fit, as `cmp_keys` compares words.
        while i + 8 <= n {
            let (x, y) = (self.u64(off + i).swap_bytes(), word(&k[i..i + 8]));
            if x != y {
                return x.cmp(&y);
            }
            i += 8;
        }
        if i < n && n >= 8 {
            // The last (up to 7) common bytes as the word ending at `n`, whose first bytes were
            // found equal already (`cmp_keys`' rule), instead of a load per byte.
            let (x, y) = (self.u64(off + n - 8).swap_bytes(), word(&k[n - 8..n]));
            return if x == y { len.cmp(&k.len()) } else { x.cmp(&y) };
        }
        for (j, &b) in k.iter().enumerate().take(n).skip(i) {
            match self.u8(off + j).cmp(&b) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        len.cmp(&k.len())
    }
    fn eq_prefix_at(&self, off: usize, n: usize, k: &[u8]) -> bool {
        // By words, as `cmp_key_at` compares.
        self.cmp_key_at(off, n, 0, &k[..n]) == Ordering::Equal
    }
    #[inline]
    fn prefetch_at(&self, off: usize) {
        self.prefetch(off);
    }
    #[inline]
    fn copy_at(&self, off: usize, out: &mut [u8]) {
        self.copy_to(off, out);
    }
}

/// Formats `page` (already holding a page header for its id) as an empty node.
pub fn init(page: &mut [u8], level: u8, low: Fence<'_>, high: Fence<'_>) {
    let id = page::page_id(page);
    let ty = if level == 0 { PageType::Leaf } else { PageType::Inner };
    page::format(page, PageId::new(id).expect("valid page id in header"), ty, level);
    put_u16(page, N_SLOTS, 0);
    put_u16(page, HEAP_START, len16(page.len()));
    put_u16(page, GARBAGE, 0);
    page[FLAGS] = 0;
    set_fence(page, LOW, LOW_INF, low);
    set_fence(page, HIGH, HIGH_INF, high);
    put_u16(page, PREFIX, len16(fence_prefix(low, high)));
}

/// Length of the prefix shared by every key in `[low, high)`: the common prefix of the fences.
fn fence_prefix(low: Fence<'_>, high: Fence<'_>) -> usize {
    match (low, high) {
        (Some(l), Some(h)) => l.iter().zip(h).take_while(|(a, b)| a == b).count(),
        _ => 0,
    }
}

/// Length of the prefix shared by all keys of the node (T10).
#[inline]
#[must_use]
pub fn prefix_len<P: NodeBytes + ?Sized>(page: &P) -> usize {
    usize::from(page.u16_at(PREFIX))
}

/// The slot head of `k` for prefix length `p`: the 8 bytes after the prefix, big-endian,
/// zero-padded. `head(a) < head(b)` implies `a < b` for keys sharing the prefix (T10).
#[inline]
#[must_use]
pub fn head_of(k: &[u8], p: usize) -> u64 {
    let rest = k.get(p..).unwrap_or(&[]);
    if rest.len() >= 8 {
        word(&rest[..8])
    } else if rest.is_empty() {
        0
    } else {
        be_value(rest) << (8 * (8 - rest.len()))
    }
}

/// Recomputes the prefix length from the fences and every slot head; needed when the fences
/// widen (a merge).
fn recompute_heads(page: &mut [u8]) {
    let p = fence_prefix(low_fence(page), high_fence(page));
    put_u16(page, PREFIX, len16(p));
    for i in 0..count(page) {
        let h = head_of(key(page, i), p);
        put_u64(page, SLOTS + i * SLOT_SIZE + 4, h);
    }
}

#[inline]
fn len16(n: usize) -> u16 {
    u16::try_from(n).expect("page sizes are at most 32 KiB")
}

fn set_fence(page: &mut [u8], field: usize, inf_flag: u8, fence: Fence<'_>) {
    match fence {
        None => {
            page[FLAGS] |= inf_flag;
            put_u16(page, field, 0);
            put_u16(page, field + 2, 0);
        }
        Some(k) => {
            page[FLAGS] &= !inf_flag;
            let off = heap_alloc(page, k.len()).expect("fences fit a freshly formatted node");
            page[off..off + k.len()].copy_from_slice(k);
            put_u16(page, field, len16(off));
            put_u16(page, field + 2, len16(k.len()));
        }
    }
}

/// Number of records.
#[inline]
#[must_use]
pub fn count<P: NodeBytes + ?Sized>(page: &P) -> usize {
    usize::from(page.u16_at(N_SLOTS))
}

/// Level: 0 for leaves.
#[inline]
#[must_use]
pub fn level<P: NodeBytes + ?Sized>(page: &P) -> u8 {
    page.byte(page::LEVEL)
}

/// True for leaves.
#[inline]
#[must_use]
pub fn is_leaf<P: NodeBytes + ?Sized>(page: &P) -> bool {
    level(page) == 0
}

#[inline]
fn flags<P: NodeBytes + ?Sized>(page: &P) -> u8 {
    page.byte(FLAGS)
}

#[inline]
fn bytes_at(page: &[u8], field: usize) -> &[u8] {
    let off = usize::from(get_u16(page, field));
    let len = usize::from(get_u16(page, field + 2));
    &page[off..off + len]
}

/// The low fence (inclusive), `None` for -inf.
#[must_use]
pub fn low_fence(page: &[u8]) -> Fence<'_> {
    (flags(page) & LOW_INF == 0).then(|| bytes_at(page, LOW))
}

/// The high fence (exclusive) of the foster chain, `None` for +inf.
#[must_use]
pub fn high_fence(page: &[u8]) -> Fence<'_> {
    (flags(page) & HIGH_INF == 0).then(|| bytes_at(page, HIGH))
}

/// True if the node has a foster child.
#[inline]
#[must_use]
pub fn has_foster<P: NodeBytes + ?Sized>(page: &P) -> bool {
    flags(page) & HAS_FOSTER != 0
}

/// The foster key, if the node has a foster child.
#[must_use]
pub fn foster_key(page: &[u8]) -> Option<&[u8]> {
    has_foster(page).then(|| bytes_at(page, FOSTER_KEY))
}

/// The foster swip, if the node has a foster child.
#[must_use]
pub fn foster_swip(page: &[u8]) -> Option<Swip> {
    if has_foster(page) {
        Swip::from_raw(get_u64(page, FOSTER_SWIP))
    } else {
        None
    }
}

/// The exclusive upper bound of the keys this node itself holds: the foster key if it has a
/// foster child, else the high fence.
#[must_use]
pub fn own_high(page: &[u8]) -> Fence<'_> {
    foster_key(page).or_else(|| high_fence(page))
}

/// True if `key` belongs to the foster child rather than to this node.
#[inline]
#[must_use]
pub fn goes_to_foster(page: &[u8], key: &[u8]) -> bool {
    match foster_key(page) {
        Some(fk) => cmp_keys(key, fk) != Ordering::Less,
        None => false,
    }
}

#[inline]
fn slot<P: NodeBytes + ?Sized>(page: &P, i: usize) -> (usize, usize) {
    let s = SLOTS + i * SLOT_SIZE;
    (usize::from(page.u16_at(s)), usize::from(page.u16_at(s + 2)))
}

#[inline]
fn set_slot(page: &mut [u8], i: usize, off: usize, klen: usize, head: u64) {
    let s = SLOTS + i * SLOT_SIZE;
    put_u16(page, s, len16(off));
    put_u16(page, s + 2, len16(klen));
    put_u64(page, s + 4, head);
}

#[inline]
fn slot_head<P: NodeBytes + ?Sized>(page: &P, i: usize) -> u64 {
    page.u64_at(SLOTS + i * SLOT_SIZE + 4)
}

/// Orders record `i`'s key against `k`, by head first (`h` = head of `k`). Always inlined: a
/// search's loop is little more than this, and a call per probe costs what the head saves.
#[inline(always)]
fn cmp_at<P: NodeBytes + ?Sized>(page: &P, i: usize, k: &[u8], h: Option<u64>) -> Ordering {
    // The slot's offset and length, and the node's level, are read only where the heads tie:
    // an optimistic view's loads are atomic, which the compiler keeps even where their values
    // go unused, and most probes of a search are decided by the head alone.
    match h {
        Some(h) => match slot_head(page, i).cmp(&h) {
            Ordering::Equal => {
                // Both keys share the node's prefix, and equal heads mean equal bytes up to
                // `p + 8` or the shorter key's end: only what follows can differ (T10).
                let (off, klen) = slot(page, i);
                let s = (prefix_len(page) + 8).min(klen).min(k.len());
                page.cmp_key_at(key_start(page, off), klen, s, k)
            }
            o => o,
        },
        None => {
            let (off, klen) = slot(page, i);
            page.cmp_key_at(key_start(page, off), klen, 0, k)
        }
    }
}

/// Byte-wise (lexicographic) order of two keys, as `<[u8]>::cmp`, comparing 8-byte big-endian
/// words inline: node keys are short, and a call into the C library's `memcmp` for each of a
/// search's comparisons costs more than the comparison.
#[inline]
#[must_use]
pub fn cmp_keys(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let (x, y) = (word(&a[i..i + 8]), word(&b[i..i + 8]));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    if i < n {
        // The last (up to 7) common bytes: as the word ending at `n` when there is one (its
        // first bytes were found equal already), else as numbers of the same length.
        let (x, y) = if n >= 8 {
            (word(&a[n - 8..n]), word(&b[n - 8..n]))
        } else {
            (be_value(&a[..n]), be_value(&b[..n]))
        };
        if x != y {
            return x.cmp(&y);
        }
    }
    a.len().cmp(&b.len())
}

/// Whether two keys are equal ([`cmp_keys`]' inline comparison).
#[inline]
#[must_use]
pub fn eq_keys(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && cmp_keys(a, b) == Ordering::Equal
}

#[inline]
fn word(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().unwrap_or([0; 8]))
}

/// Up to 8 bytes as a big-endian number.
#[inline]
fn be_value(b: &[u8]) -> u64 {
    let n = b.len();
    if n >= 8 {
        word(&b[..8])
    } else if n >= 4 {
        // Two overlapping 4-byte loads: the bytes they share land on the same bits.
        let hi = u64::from(u32::from_be_bytes(b[..4].try_into().unwrap_or([0; 4])));
        let lo = u64::from(u32::from_be_bytes(b[n - 4..n].try_into().unwrap_or([0; 4])));
        (hi << (8 * (n - 4))) | lo
    } else if n > 0 {
        // One to three bytes: the first, the middle and the last byte cover them all.
        let (a, m, z) = (u64::from(b[0]), u64::from(b[n / 2]), u64::from(b[n - 1]));
        (a << (8 * (n - 1))) | (m << (8 * (n - 1 - n / 2))) | z
    } else {
        0
    }
}

/// The head of `k` for this node, or `None` if `k` does not share the node's prefix (T10):
/// descents search a node only for keys inside its fences, but a damaged tree can lead a
/// search elsewhere, and then whole keys are compared (a correct position, never a panic).
#[inline]
fn search_head<P: NodeBytes + ?Sized>(page: &P, k: &[u8]) -> Option<u64> {
    let p = prefix_len(page);
    if p > 0
        && (flags(page) & LOW_INF != 0
            || k.len() < p
            || usize::from(page.u16_at(LOW + 2)) < p
            || !page.eq_prefix_at(usize::from(page.u16_at(LOW)), p, k))
    {
        return None;
    }
    Some(head_of(k, p))
}

#[inline]
fn key_start<P: NodeBytes + ?Sized>(page: &P, off: usize) -> usize {
    if is_leaf(page) {
        off + 2
    } else {
        off + 8
    }
}

/// Key of record `i`.
#[inline]
#[must_use]
pub fn key(page: &[u8], i: usize) -> &[u8] {
    let (off, klen) = slot(page, i);
    let k = key_start(page, off);
    &page[k..k + klen]
}

/// Whether leaf record `i` holds a large value's stub (T22) rather than the value: its value
/// bytes ([`value`]) are then the stub, which names the value's overflow chain.
#[inline]
#[must_use]
pub fn is_stub<P: NodeBytes + ?Sized>(page: &P, i: usize) -> bool {
    let (off, _) = slot(page, i);
    page.u16_at(off) & STUB_FLAG != 0
}

/// The bytes of leaf record `i`'s value field: the value, or its stub if [`is_stub`].
#[inline]
#[must_use]
pub fn value(page: &[u8], i: usize) -> &[u8] {
    let (off, klen) = slot(page, i);
    let vlen = usize::from(get_u16(page, off) & VALUE_LEN);
    let v = off + 2 + klen;
    &page[v..v + vlen]
}

/// Copies the value of leaf record `i` into `out` (T21), eight bytes per load where they fit,
/// for a page read through a view, whose bytes may change under the copy: the caller validates
/// the view before using `out`. Out-of-range bytes read as 0 (B24), so a changed page gives a
/// wrong value, never a read outside it; the length is at most a `u16`.
pub fn copy_value<P: NodeBytes + ?Sized>(page: &P, i: usize, out: &mut Vec<u8>) {
    let (off, klen) = slot(page, i);
    let len = usize::from(page.u16_at(off) & VALUE_LEN);
    out.clear();
    out.resize(len, 0);
    page.copy_at(off + 2 + klen, out);
}

/// Byte offset of inner record `i`'s child swip.
#[inline]
#[must_use]
pub fn child_swip_off<P: NodeBytes + ?Sized>(page: &P, i: usize) -> usize {
    slot(page, i).0
}

/// Child swip of inner record `i`.
#[must_use]
pub fn child_swip(page: &[u8], i: usize) -> Option<Swip> {
    Swip::from_raw(get_u64(page, child_swip_off(page, i)))
}

fn record_len(page: &[u8], i: usize) -> usize {
    let (off, klen) = slot(page, i);
    if is_leaf(page) {
        2 + klen + usize::from(get_u16(page, off) & VALUE_LEN)
    } else {
        8 + klen
    }
}

/// Slots between which a binary search prefetches (about five cache lines of slots or more).
const PREFETCH_SLOTS: usize = 26;

/// Starts the misses of the slot lines the first three probes of a binary search over
/// `lo..hi` can touch (its 1/8 points), so they overlap instead of following one another.
#[inline]
fn prefetch_probes<P: NodeBytes + ?Sized>(page: &P, lo: usize, hi: usize) {
    if hi - lo >= PREFETCH_SLOTS {
        let n = hi - lo;
        for k in 1..8 {
            page.prefetch_at(SLOTS + (lo + n * k / 8) * SLOT_SIZE + 4);
        }
    }
}

/// Binary search over the keys: `Ok(i)` if found, `Err(i)` for the insertion position. Give it
/// a latched page's bytes (`&*guard`) rather than the guard, through which every probe would
/// compute the page's address again.
#[inline]
pub fn search<P: NodeBytes + ?Sized>(page: &P, k: &[u8]) -> Result<usize, usize> {
    let (mut lo, mut hi) = (0, count(page));
    prefetch_probes(page, lo, hi);
    let h = search_head(page, k);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match cmp_at(page, mid, k, h) {
            Ordering::Less => lo = mid + 1,
            Ordering::Greater => hi = mid,
            Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

/// Inner nodes: the index of the child whose range holds `k` (the last record with key <= k;
/// record 0 stands for the low fence and matches every key of the node). As with [`search`],
/// give it a latched page's bytes, not the guard.
#[inline]
#[must_use]
pub fn child_index<P: NodeBytes + ?Sized>(page: &P, k: &[u8]) -> usize {
    let (mut lo, mut hi) = (1, count(page));
    prefetch_probes(page, lo, hi.max(lo));
    let h = search_head(page, k);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if cmp_at(page, mid, k, h) != Ordering::Greater {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo - 1
}

/// Inner nodes: the index of the child holding the greatest keys below `bound` (the last record
/// with key < bound; `None` means +inf, the last child). Record 0 qualifies for every bound above
/// the low fence.
#[must_use]
pub fn child_before(page: &[u8], bound: Option<&[u8]>) -> usize {
    let n = count(page);
    let Some(b) = bound else { return n - 1 };
    let h = search_head(page, b);
    let (mut lo, mut hi) = (1, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if cmp_at(page, mid, b, h) == Ordering::Less {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo - 1
}

/// Contiguous free bytes between the slot array and the heap.
#[must_use]
pub fn free_space(page: &[u8]) -> usize {
    usize::from(get_u16(page, HEAP_START)).saturating_sub(SLOTS + count(page) * SLOT_SIZE)
}

/// The unused bytes between the slot array and the heap: what a page image need not carry
/// (the write-ahead log zeroes them, and its encoding elides a run of zeros).
#[must_use]
pub fn free_gap(page: &[u8]) -> std::ops::Range<usize> {
    let start = (SLOTS + count(page) * SLOT_SIZE).min(page.len());
    let end = usize::from(get_u16(page, HEAP_START)).clamp(start, page.len());
    start..end
}

/// Bytes in use by slots, live records and fences (what a merge would have to move).
#[must_use]
pub fn used_bytes(page: &[u8]) -> usize {
    page.len() - SLOTS - free_space(page) - usize::from(get_u16(page, GARBAGE))
}

/// [`used_bytes`] once record `i` is removed ([`remove`]): its bytes turn to garbage and its
/// slot to free space.
#[must_use]
pub fn used_bytes_without(page: &[u8], i: usize) -> usize {
    used_bytes(page) - record_len(page, i) - SLOT_SIZE
}

/// Bytes a node could hold in records and fences.
#[must_use]
pub fn capacity(page_size: usize) -> usize {
    page_size - SLOTS
}

fn heap_alloc(page: &mut [u8], len: usize) -> Option<usize> {
    if free_space(page) < len {
        return None;
    }
    let start = usize::from(get_u16(page, HEAP_START)) - len;
    put_u16(page, HEAP_START, len16(start));
    Some(start)
}

fn add_garbage(page: &mut [u8], n: usize) {
    let g = usize::from(get_u16(page, GARBAGE)) + n;
    put_u16(page, GARBAGE, len16(g));
}

/// Makes room for `need` contiguous bytes (plus a slot if `slot`), compacting if that helps.
fn reserve(page: &mut [u8], need: usize) -> bool {
    if free_space(page) >= need {
        return true;
    }
    if free_space(page) + usize::from(get_u16(page, GARBAGE)) >= need {
        compact(page);
        return free_space(page) >= need;
    }
    false
}

/// Rewrites the heap without garbage.
pub fn compact(page: &mut [u8]) {
    let copy = page.to_vec();
    let n = count(&copy[..]);
    let mut top = page.len();
    let mut place = |page: &mut [u8], bytes: &[u8]| -> usize {
        top -= bytes.len();
        page[top..top + bytes.len()].copy_from_slice(bytes);
        top
    };
    for (field, flag) in [(LOW, LOW_INF), (HIGH, HIGH_INF)] {
        if copy[FLAGS] & flag == 0 {
            let off = place(page, bytes_at(&copy, field));
            put_u16(page, field, len16(off));
        }
    }
    if has_foster(&copy[..]) {
        let off = place(page, bytes_at(&copy, FOSTER_KEY));
        put_u16(page, FOSTER_KEY, len16(off));
    }
    for i in 0..n {
        let (off, klen) = slot(&copy[..], i);
        let len = record_len(&copy[..], i);
        let new = place(page, &copy[off..off + len]);
        set_slot(page, i, new, klen, slot_head(&copy[..], i));
    }
    put_u16(page, HEAP_START, len16(top));
    put_u16(page, GARBAGE, 0);
}

fn insert_slot(page: &mut [u8], i: usize, off: usize, k: &[u8]) {
    let n = count(page);
    let s = SLOTS + i * SLOT_SIZE;
    page.copy_within(s..SLOTS + n * SLOT_SIZE, s + SLOT_SIZE);
    let h = head_of(k, prefix_len(page));
    set_slot(page, i, off, k.len(), h);
    put_u16(page, N_SLOTS, len16(n + 1));
    put_u16(page, LAST_INSERT, len16(i + 1));
}

/// Whether the record to be inserted at `i` continues an ascending run: the node's last insert
/// took slot `i - 1` (T29). Only a hint, kept in the page and changed by inserts alone.
#[must_use]
pub fn continues_ascending_run(page: &[u8], i: usize) -> bool {
    i >= 1 && usize::from(get_u16(page, LAST_INSERT)) == i
}

/// Whether [`insert_leaf`] of a record with this key and value would succeed (compacting if
/// needed): lets a logged insert be logged before it is applied (T11).
#[must_use]
pub fn leaf_insert_fits(page: &[u8], k: &[u8], v: &[u8]) -> bool {
    leaf_insert_fits_len(page, k.len(), v.len())
}

/// [`leaf_insert_fits`] of a key and a value field of these lengths.
#[must_use]
pub fn leaf_insert_fits_len(page: &[u8], klen: usize, vlen: usize) -> bool {
    free_space(page) + usize::from(get_u16(page, GARBAGE)) >= 2 + klen + vlen + SLOT_SIZE
}

/// Whether [`update_value`] of record `i` to `v` would succeed: the old record becomes garbage
/// and its slot is reused.
#[must_use]
pub fn leaf_update_fits(page: &[u8], i: usize, v: &[u8]) -> bool {
    leaf_update_fits_len(page, i, v.len())
}

/// [`leaf_update_fits`] of a value field of `vlen` bytes.
#[must_use]
pub fn leaf_update_fits_len(page: &[u8], i: usize, vlen: usize) -> bool {
    let old = record_len(page, i);
    let new = 2 + key(page, i).len() + vlen;
    free_space(page) + usize::from(get_u16(page, GARBAGE)) + old >= new
}

/// Inserts a leaf record at position `i`. Returns false (changing nothing) if it does not fit.
pub fn insert_leaf(page: &mut [u8], i: usize, k: &[u8], v: &[u8]) -> bool {
    insert_leaf_as(page, i, k, v, false)
}

/// [`insert_leaf`] of a value field that is a large value's stub (`stub`, T22) or the value.
#[inline]
pub fn insert_leaf_as(page: &mut [u8], i: usize, k: &[u8], v: &[u8], stub: bool) -> bool {
    debug_assert!(is_leaf(page));
    debug_assert!(v.len() <= usize::from(VALUE_LEN) && (!stub || v.len() == STUB_LEN));
    let len = 2 + k.len() + v.len();
    if !reserve(page, len + SLOT_SIZE) {
        return false;
    }
    let off = heap_alloc(page, len).expect("reserved");
    put_u16(page, off, len16(v.len()) | if stub { STUB_FLAG } else { 0 });
    page[off + 2..off + 2 + k.len()].copy_from_slice(k);
    page[off + 2 + k.len()..off + len].copy_from_slice(v);
    insert_slot(page, i, off, k);
    true
}

/// Inserts an inner record (separator `k`, child `swip`) at position `i`. False if it does not fit.
pub fn insert_inner(page: &mut [u8], i: usize, k: &[u8], swip: Swip) -> bool {
    debug_assert!(!is_leaf(page));
    let len = 8 + k.len();
    if !reserve(page, len + SLOT_SIZE) {
        return false;
    }
    let off = heap_alloc(page, len).expect("reserved");
    put_u64(page, off, swip.raw());
    page[off + 8..off + len].copy_from_slice(k);
    insert_slot(page, i, off, k);
    true
}

/// Replaces the value of leaf record `i`. False (changing nothing) if the new value does not fit.
pub fn update_value(page: &mut [u8], i: usize, v: &[u8]) -> bool {
    update_value_as(page, i, v, false)
}

/// [`update_value`] to a value field that is a large value's stub (`stub`, T22) or the value.
pub fn update_value_as(page: &mut [u8], i: usize, v: &[u8], stub: bool) -> bool {
    let (off, klen) = slot(page, i);
    let was_stub = get_u16(page, off) & STUB_FLAG != 0;
    let old = usize::from(get_u16(page, off) & VALUE_LEN);
    if v.len() == old {
        put_u16(page, off, len16(old) | if stub { STUB_FLAG } else { 0 });
        page[off + 2 + klen..off + 2 + klen + old].copy_from_slice(v);
        return true;
    }
    let k = key(page, i).to_vec();
    let hint = get_u16(page, LAST_INSERT);
    remove(page, i);
    let done = insert_leaf_as(page, i, &k, v, stub);
    // An update is no insert: the hint stays (T29).
    put_u16(page, LAST_INSERT, hint);
    if done {
        return true;
    }
    // Undo: the old record's bytes are still in the heap (now garbage); re-insert them.
    let restored = {
        let old_v = page[off + 2 + klen..off + 2 + klen + old].to_vec();
        insert_leaf_as(page, i, &k, &old_v, was_stub)
    };
    debug_assert!(restored, "a record that fitted fits again");
    put_u16(page, LAST_INSERT, hint);
    false
}

/// Removes record `i`.
pub fn remove(page: &mut [u8], i: usize) {
    let n = count(page);
    let len = record_len(page, i);
    let s = SLOTS + i * SLOT_SIZE;
    page.copy_within(s + SLOT_SIZE..SLOTS + n * SLOT_SIZE, s);
    put_u16(page, N_SLOTS, len16(n - 1));
    add_garbage(page, len);
}

/// Sets (or replaces) the foster child. False if the key does not fit.
pub fn set_foster(page: &mut [u8], k: &[u8], swip: Swip) -> bool {
    let old = foster_key(page).map_or(0, <[u8]>::len);
    if !reserve(page, k.len()) {
        return false;
    }
    add_garbage(page, old);
    let off = heap_alloc(page, k.len()).expect("reserved");
    page[off..off + k.len()].copy_from_slice(k);
    put_u16(page, FOSTER_KEY, len16(off));
    put_u16(page, FOSTER_KEY + 2, len16(k.len()));
    put_u64(page, FOSTER_SWIP, swip.raw());
    page[FLAGS] |= HAS_FOSTER;
    true
}

/// Removes the foster child; the node's high fence becomes the old foster key (adoption, T3).
pub fn foster_key_becomes_high_fence(page: &mut [u8]) {
    debug_assert!(has_foster(page));
    let old_high = high_fence(page).map_or(0, <[u8]>::len);
    add_garbage(page, old_high);
    let (off, len) = (get_u16(page, FOSTER_KEY), get_u16(page, FOSTER_KEY + 2));
    put_u16(page, HIGH, off);
    put_u16(page, HIGH + 2, len);
    page[FLAGS] &= !(HIGH_INF | HAS_FOSTER);
    put_u64(page, FOSTER_SWIP, 0);
}

/// Removes the foster child, keeping the high fence (used when the foster child is merged back).
pub fn clear_foster(page: &mut [u8]) {
    let old = foster_key(page).map_or(0, <[u8]>::len);
    add_garbage(page, old);
    page[FLAGS] &= !HAS_FOSTER;
    put_u64(page, FOSTER_SWIP, 0);
}

/// Sets the high fence. False if it does not fit.
pub fn set_high_fence(page: &mut [u8], high: Fence<'_>) -> bool {
    let old = high_fence(page).map_or(0, <[u8]>::len);
    match high {
        None => {
            add_garbage(page, old);
            page[FLAGS] |= HIGH_INF;
            recompute_heads(page);
            true
        }
        Some(k) => {
            if !reserve(page, k.len()) {
                return false;
            }
            add_garbage(page, old);
            let off = heap_alloc(page, k.len()).expect("reserved");
            page[off..off + k.len()].copy_from_slice(k);
            put_u16(page, HIGH, len16(off));
            put_u16(page, HIGH + 2, len16(k.len()));
            page[FLAGS] &= !HIGH_INF;
            recompute_heads(page);
            true
        }
    }
}

/// Index at which to split: the first record that goes right, balancing bytes; at least one
/// record stays on each side. Requires at least two records.
#[must_use]
pub fn split_point(page: &[u8]) -> usize {
    let n = count(page);
    debug_assert!(n >= 2);
    let total: usize = (0..n).map(|i| record_len(page, i)).sum();
    let mut acc = 0;
    for i in 0..n {
        acc += record_len(page, i);
        if acc * 2 >= total {
            return (i + 1).clamp(1, n - 1);
        }
    }
    n - 1
}

/// The new node of a split of `left` at its record `mid` (T2), written into `right`, whose
/// header already names its page id: `left`'s level, the fences `[key(mid), left's high
/// fence)`, the records from `mid` on, and `left`'s foster key and child if it has them. The
/// live split (`Tree::split`) and redo of a split-off (`log::split_off`) both build the new
/// node with it, so the two cannot differ. Returns false if it does not fit (never for the
/// records of a split, T6).
pub fn fill_split_off(right: &mut [u8], left: &[u8], mid: usize) -> bool {
    let sep = key(left, mid).to_vec();
    init(right, level(left), Some(&sep), high_fence(left));
    if !append_records(right, left, mid) {
        return false;
    }
    match (foster_key(left), foster_swip(left)) {
        (Some(fk), Some(fs)) => set_foster(right, fk, fs),
        _ => true,
    }
}

/// Copies records `from..` of `src` to the end of `dst` (same node kind). False if they do not
/// fit; `dst` is unchanged then.
pub fn append_records(dst: &mut [u8], src: &[u8], from: usize) -> bool {
    let n = count(src);
    let need: usize = (from..n).map(|i| record_len(src, i) + SLOT_SIZE).sum();
    if !reserve(dst, need) {
        return false;
    }
    let hint = get_u16(dst, LAST_INSERT);
    for i in from..n {
        let at = count(dst);
        let ok = if is_leaf(src) {
            insert_leaf_as(dst, at, key(src, i), value(src, i), is_stub(src, i))
        } else {
            let swip = child_swip(src, i).expect("valid swip");
            insert_inner(dst, at, key(src, i), swip)
        };
        debug_assert!(ok, "reserved space");
    }
    // Moved records are no inserts (T29).
    put_u16(dst, LAST_INSERT, hint);
    true
}

/// Drops records `from..` (after they were copied elsewhere).
pub fn truncate(page: &mut [u8], from: usize) {
    let n = count(page);
    let dead: usize = (from..n).map(|i| record_len(page, i)).sum();
    put_u16(page, N_SLOTS, len16(from));
    add_garbage(page, dead);
}

/// Offsets of every swip in the node: one per inner record, plus the foster swip.
pub fn swip_offsets(page: &[u8], out: &mut Vec<usize>) {
    if !is_leaf(page) {
        out.extend((0..count(page)).map(|i| child_swip_off(page, i)));
    }
    if has_foster(page) {
        out.push(FOSTER_SWIP);
    }
}

/// Marks bytes `off..off + len` in `bits`; false if one of them was marked already.
fn claim_bytes(bits: &mut [u64], off: usize, len: usize) -> bool {
    let (mut i, end) = (off, off + len);
    while i < end {
        let (w, b) = (i / 64, i % 64);
        let k = (64 - b).min(end - i);
        let mask = if k == 64 { u64::MAX } else { ((1u64 << k) - 1) << b };
        if bits[w] & mask != 0 {
            return false;
        }
        bits[w] |= mask;
        i += k;
    }
    true
}

/// Highest level a node may have: a tree of 33 levels would hold more pages than a file can.
pub const MAX_LEVEL: u8 = 32;

/// Checks a node fully before it is used (T5, T17): every length and offset stays within the
/// page, heap items do not overlap and the garbage count fits, the level is plausible, fences
/// are ordered and the foster key lies strictly between them, the prefix length is one the
/// fences allow and every slot head is the one of its key (T10), keys are strictly increasing
/// and inside the node's own range (an inner node's first key is its low fence), and child
/// references name no page twice and never the page itself. So no accessor above can panic and
/// no search can go astray on a page that passed its checksum but is structurally wrong.
/// Allocates only for inner nodes (the duplicate check).
///
/// # Errors
/// The first inconsistency found.
pub fn validate(page: &[u8]) -> Result<(), String> {
    let ps = page.len();
    let ty = page::page_type(page);
    match (ty, level(page)) {
        (Some(PageType::Leaf), 0) => {}
        (Some(PageType::Inner), l) if l > 0 && l <= MAX_LEVEL => {}
        _ => return Err(format!("page type {:?} does not match level {}", ty, level(page))),
    }
    if flags(page) & !(LOW_INF | HIGH_INF | HAS_FOSTER) != 0 {
        return Err(format!("unknown flags {:#x}", flags(page)));
    }
    let n = count(page);
    let heap = usize::from(get_u16(page, HEAP_START));
    if SLOTS + n * SLOT_SIZE > heap || heap > ps {
        return Err(format!("slot array of {n} slots overlaps heap start {heap}"));
    }
    // Every heap item (fences, foster key, records): inside the heap, no two overlapping (each
    // claims its bytes in a bitmap of the heap), and together with the garbage no more than the
    // heap (compaction relies on it).
    HEAP_BITS.with(|bits| validate_with(page, heap, &mut bits.borrow_mut()))
}

thread_local! {
    /// The heap bitmap of [`validate`], kept per thread: clearing the words a page's heap needs
    /// costs far less than zeroing one for the largest page on every call.
    static HEAP_BITS: std::cell::RefCell<Vec<u64>> = std::cell::RefCell::new(vec![0; page::MAX_PAGE_SIZE / 64]);
}

/// [`validate`] past the slot-array check, with `bits` to claim heap bytes in.
fn validate_with(page: &[u8], heap: usize, bits: &mut [u64]) -> Result<(), String> {
    let ps = page.len();
    let n = count(page);
    let leaf = is_leaf(page);
    let bits = &mut bits[..(ps - heap).div_ceil(64)];
    bits.fill(0);
    let mut live = 0;
    let mut claim = |what: &dyn Fn() -> String, off: usize, len: usize| -> Result<(), String> {
        if off < heap || off + len > ps {
            return Err(format!("{} outside the heap", what()));
        }
        if !claim_bytes(bits, off - heap, len) {
            return Err(format!("{} overlaps another heap item", what()));
        }
        live += len;
        Ok(())
    };
    for (field, flag) in [(LOW, LOW_INF), (HIGH, HIGH_INF)] {
        if flags(page) & flag == 0 {
            let (off, len) = (usize::from(get_u16(page, field)), usize::from(get_u16(page, field + 2)));
            claim(&|| format!("fence key of {len} bytes at {off}"), off, len)?;
        }
    }
    if has_foster(page) {
        let (off, len) = (usize::from(get_u16(page, FOSTER_KEY)), usize::from(get_u16(page, FOSTER_KEY + 2)));
        claim(&|| format!("foster key of {len} bytes at {off}"), off, len)?;
    }
    for i in 0..n {
        let (off, klen) = slot(page, i);
        let head = if leaf { 2 } else { 8 };
        if off < heap || off + head > ps {
            return Err(format!("record {i} outside the heap"));
        }
        let len = if leaf { head + klen + usize::from(get_u16(page, off) & VALUE_LEN) } else { head + klen };
        if leaf
            && get_u16(page, off) & STUB_FLAG != 0
            && usize::from(get_u16(page, off) & VALUE_LEN) != STUB_LEN
        {
            return Err(format!(
                "record {i} is a stub of {} bytes, not {STUB_LEN}",
                get_u16(page, off) & VALUE_LEN
            ));
        }
        claim(&|| format!("record {i}"), off, len)?;
    }
    let garbage = usize::from(get_u16(page, GARBAGE));
    if live + garbage > ps - heap {
        return Err(format!(
            "{live} live and {garbage} garbage bytes exceed the heap of {} bytes",
            ps - heap
        ));
    }
    if !leaf && n == 0 {
        return Err("inner node without children".into());
    }
    // Fences, foster key and prefix (T1, T2, T10).
    let (low, high) = (low_fence(page), high_fence(page));
    if let (Some(l), Some(h)) = (low, high) {
        if l >= h {
            return Err("low fence not below the high fence".into());
        }
    }
    let fk = foster_key(page);
    if let Some(fk) = fk {
        if low.is_some_and(|l| fk <= l) || high.is_some_and(|h| fk >= h) {
            return Err("foster key not strictly between the fences".into());
        }
    }
    let p = prefix_len(page);
    if p > fence_prefix(low, high) {
        return Err(format!("prefix length {p} longer than the fences share"));
    }
    // Keys: heads match, strictly increasing, inside [low, own high); an inner node's first key
    // is its low fence.
    let own_high = fk.or(high);
    for i in 0..n {
        let k = key(page, i);
        if slot_head(page, i) != head_of(k, p) {
            return Err(format!("slot {i}'s head does not match its key"));
        }
        if i > 0 && cmp_at(page, i - 1, k, Some(slot_head(page, i))) != Ordering::Less {
            return Err(format!("keys {} and {i} out of order", i - 1));
        }
    }
    if n > 0 {
        let first = key(page, 0);
        let first_ok = if leaf { low.is_none_or(|l| first >= l) } else { first == low.unwrap_or(b"") };
        if !first_ok {
            return Err("first key below the low fence (inner: not the low fence)".into());
        }
        if own_high.is_some_and(|h| key(page, n - 1) >= h) {
            return Err("last key not below the node's upper bound".into());
        }
    }
    // Child references: never the page itself, never one page twice.
    let own = page::page_id(page);
    let mut swips = Vec::new();
    swip_offsets(page, &mut swips);
    let mut raws: Vec<u64> = swips.iter().map(|&o| get_u64(page, o)).collect();
    for &raw in &raws {
        match Swip::from_raw(raw).map(Swip::target) {
            None => return Err(format!("invalid child reference {raw:#x}")),
            Some(swizzledb_buffer::SwipTarget::Page(id)) if id.get() == own => {
                return Err("a child reference names the page itself".into());
            }
            Some(_) => {}
        }
    }
    if raws.len() > 1 {
        raws.sort_unstable();
        if let Some(w) = raws.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("child reference {:#x} appears twice", w[0]));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys over a small alphabet that includes 0 and 255, of every length to 20, so that words,
    /// overlapping tails, zero bytes and prefixes all meet.
    fn sample_keys() -> Vec<Vec<u8>> {
        let mut keys = vec![Vec::new()];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for len in 1..=20usize {
            for _ in 0..24 {
                let k: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        [0u8, 1, 0x7f, 0x80, 0xfe, 0xff][(x % 6) as usize]
                    })
                    .collect();
                keys.push(k);
            }
        }
        // Keys that differ only past a shared start, and proper prefixes of each other.
        let base: Vec<u8> = (1..=17).collect();
        for cut in 0..=base.len() {
            keys.push(base[..cut].to_vec());
            let mut k = base[..cut].to_vec();
            k.push(0);
            keys.push(k);
        }
        keys
    }

    #[test]
    fn t10_inline_key_order_is_byte_order() {
        let keys = sample_keys();
        for a in &keys {
            for b in &keys {
                assert_eq!(cmp_keys(a, b), a.as_slice().cmp(b.as_slice()), "{a:?} vs {b:?}");
                assert_eq!(eq_keys(a, b), a == b);
            }
        }
    }

    #[test]
    fn t10_head_is_the_eight_bytes_after_the_prefix() {
        for k in sample_keys() {
            for p in 0..=k.len() + 1 {
                let mut b = [0u8; 8];
                let rest = k.get(p..).unwrap_or(&[]);
                let n = rest.len().min(8);
                b[..n].copy_from_slice(&rest[..n]);
                assert_eq!(head_of(&k, p), u64::from_be_bytes(b), "{k:?} prefix {p}");
            }
        }
    }

    fn fresh(level: u8) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        page::format(&mut p, PageId::new(3).unwrap(), PageType::Leaf, 0);
        init(&mut p, level, None, None);
        p
    }

    #[test]
    fn t1_leaf_insert_search_remove_keeps_order() {
        let mut p = fresh(0);
        for k in [5u8, 1, 9, 3, 7] {
            let i = search(&p, &[k]).unwrap_err();
            assert!(insert_leaf(&mut p, i, &[k], &[k, k]));
        }
        let keys: Vec<u8> = (0..count(&p)).map(|i| key(&p, i)[0]).collect();
        assert_eq!(keys, vec![1, 3, 5, 7, 9]);
        assert_eq!(value(&p, search(&p, &[7]).unwrap()), &[7, 7]);
        remove(&mut p, 0);
        assert_eq!(search(&p, &[1]), Err(0));
        assert!(validate(&p).is_ok());
    }

    #[test]
    fn t1_update_value_grows_and_shrinks() {
        let mut p = fresh(0);
        assert!(insert_leaf(&mut p, 0, b"k", b"v"));
        assert!(update_value(&mut p, 0, &[1u8; 300]));
        assert_eq!(value(&p, 0), &[1u8; 300][..]);
        assert!(update_value(&mut p, 0, b"x"));
        assert_eq!(value(&p, 0), b"x");
        assert!(!update_value(&mut p, 0, &vec![2u8; 5000]), "cannot exceed the page");
        assert_eq!(value(&p, 0), b"x", "a failed update changes nothing");
    }

    #[test]
    fn t1_full_page_compacts_garbage() {
        let mut p = fresh(0);
        let mut n = 0u16;
        while insert_leaf(&mut p, usize::from(n), &n.to_be_bytes(), &[0u8; 60]) {
            n += 1;
        }
        assert!(n > 50);
        for _ in 0..10 {
            remove(&mut p, 0);
        }
        // A 500-byte value does not fit the free gap, only the gap plus the garbage.
        assert!(free_space(&p) < 500, "heap not yet compacted");
        let at = count(&p);
        assert!(insert_leaf(&mut p, at, &[0xff, 0xff], &[0u8; 500]), "compaction frees room");
        assert_eq!(value(&p, at), &[0u8; 500][..]);
        assert!(validate(&p).is_ok());
    }

    #[test]
    fn t10_search_finds_what_a_sorted_list_finds() {
        let mut p = vec![0u8; 16384];
        page::format(&mut p, PageId::new(3).unwrap(), PageType::Leaf, 0);
        init(&mut p, 0, Some(b"pre:"), Some(b"pre;"));
        assert_eq!(prefix_len(&p), 3);
        let with_prefix = |k: &[u8]| [b"pre:".as_slice(), k].concat();
        let mut stored: Vec<Vec<u8>> = sample_keys().iter().step_by(2).map(|k| with_prefix(k)).collect();
        stored.sort();
        stored.dedup();
        for k in &stored {
            let i = search(&p, k).unwrap_err();
            assert!(insert_leaf(&mut p, i, k, b""));
        }
        for probe in sample_keys().iter().map(|k| with_prefix(k)) {
            assert_eq!(search(&p, &probe), stored.binary_search(&probe), "{probe:?}");
        }
    }

    #[test]
    fn t10_heads_order_keys_with_a_shared_prefix() {
        let mut p = vec![0u8; 4096];
        page::format(&mut p, PageId::new(3).unwrap(), PageType::Leaf, 0);
        init(&mut p, 0, Some(b"user:0000"), Some(b"user:9999"));
        assert_eq!(prefix_len(&p), 5);
        // Keys that tie on their 8 head bytes, and keys shorter than prefix + 8.
        let keys: [&[u8]; 7] = [
            b"user:1",
            b"user:1\0",
            b"user:12345678",
            b"user:123456789",
            b"user:12345679",
            b"user:2",
            b"user:9",
        ];
        for k in keys.iter().rev() {
            let i = search(&p, k).unwrap_err();
            assert!(insert_leaf(&mut p, i, k, b"v"));
        }
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(key(&p, i), *k, "slot {i}");
            assert_eq!(search(&p, k), Ok(i));
        }
        assert_eq!(search(&p, b"user:12345678\0"), Err(3));
        // Widening the fences (a merge) recomputes the prefix and the heads.
        assert!(set_high_fence(&mut p, None));
        assert_eq!(prefix_len(&p), 0);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(search(&p, k), Ok(i));
        }
    }

    #[test]
    fn t2_inner_child_index_uses_low_fence_slot() {
        let mut p = fresh(1);
        let s = |n| Swip::page(PageId::new(n).unwrap());
        assert!(insert_inner(&mut p, 0, b"", s(10)));
        assert!(insert_inner(&mut p, 1, b"m", s(11)));
        assert!(insert_inner(&mut p, 2, b"t", s(12)));
        assert_eq!(child_index(&p, b"a"), 0);
        assert_eq!(child_index(&p, b"m"), 1);
        assert_eq!(child_index(&p, b"s"), 1);
        assert_eq!(child_index(&p, b"zz"), 2);
        assert_eq!(child_swip(&p, 2), Some(s(12)));
        let mut offs = Vec::new();
        swip_offsets(&p, &mut offs);
        assert_eq!(offs.len(), 3);
    }

    #[test]
    fn t3_foster_key_becomes_high_fence_on_adoption() {
        let mut p = fresh(0);
        let s = Swip::page(PageId::new(9).unwrap());
        assert!(set_foster(&mut p, b"k", s));
        assert_eq!(foster_key(&p), Some(&b"k"[..]));
        assert!(goes_to_foster(&p, b"z") && !goes_to_foster(&p, b"a"));
        assert_eq!(own_high(&p), Some(&b"k"[..]));
        foster_key_becomes_high_fence(&mut p);
        assert!(!has_foster(&p));
        assert_eq!(high_fence(&p), Some(&b"k"[..]));
        assert!(validate(&p).is_ok());
    }

    #[test]
    fn t4_split_and_append_preserve_records() {
        let mut a = fresh(0);
        for i in 0..40u8 {
            assert!(insert_leaf(&mut a, i as usize, &[i], &[i; 20]));
        }
        let mut b = fresh(0);
        let mid = split_point(&a);
        assert!(append_records(&mut b, &a, mid));
        truncate(&mut a, mid);
        assert_eq!(count(&a) + count(&b), 40);
        assert_eq!(key(&b, 0), &[mid as u8]);
        assert!(append_records(&mut a, &b, 0));
        assert_eq!(count(&a), 40);
        for i in 0..40u8 {
            assert_eq!(value(&a, i as usize), &[i; 20]);
        }
    }

    /// T17: each structural rule is checked on its own (the page passes before each change).
    #[test]
    fn t17_validate_checks_order_ranges_prefix_overlap_and_children() {
        let leaf = || {
            let mut p = vec![0u8; 4096];
            page::format(&mut p, PageId::new(3).unwrap(), PageType::Leaf, 0);
            init(&mut p, 0, Some(b"user:0000"), Some(b"user:9999"));
            for (i, k) in [b"user:1", b"user:2", b"user:3"].iter().enumerate() {
                assert!(insert_leaf(&mut p, i, *k, b"value"));
            }
            assert_eq!(validate(&p), Ok(()));
            p
        };
        let refused = |p: &[u8], what: &str| {
            let e = validate(p).expect_err(what);
            assert!(e.contains(what), "{e:?} lacks {what:?}");
        };
        // Keys out of order: swap two slots.
        let mut p = leaf();
        let s = SLOTS;
        let tmp = p[s..s + SLOT_SIZE].to_vec();
        p.copy_within(s + SLOT_SIZE..s + 2 * SLOT_SIZE, s);
        p[s + SLOT_SIZE..s + 2 * SLOT_SIZE].copy_from_slice(&tmp);
        refused(&p, "out of order");
        // A head that does not match its key.
        let mut p = leaf();
        put_u64(&mut p, SLOTS + 4, 0);
        refused(&p, "head");
        // A prefix the fences do not share.
        let mut p = leaf();
        put_u16(&mut p, PREFIX, 6);
        refused(&p, "prefix");
        // A key outside the node's own range: a foster key below the last key.
        let mut p = leaf();
        assert!(set_foster(&mut p, b"user:2", Swip::page(PageId::new(9).unwrap())));
        refused(&p, "upper bound");
        // Overlapping records: record 1 claims record 0's bytes.
        let mut p = leaf();
        let s0 = p[SLOTS..SLOTS + 4].to_vec();
        p[SLOTS + SLOT_SIZE..SLOTS + SLOT_SIZE + 4].copy_from_slice(&s0);
        refused(&p, "overlaps");
        // Garbage beyond the heap.
        let mut p = leaf();
        put_u16(&mut p, GARBAGE, 4000);
        refused(&p, "garbage");
        // A foster key at the high fence.
        let mut p = leaf();
        assert!(set_foster(&mut p, b"user:9999", Swip::page(PageId::new(9).unwrap())));
        refused(&p, "foster key");
        // A level no tree reaches; unknown flags.
        let mut p = leaf();
        page::set_type(&mut p, PageType::Inner, MAX_LEVEL + 1);
        refused(&p, "level");
        let mut p = leaf();
        p[FLAGS] |= 0x80;
        refused(&p, "flags");
        // Children: the page itself, or one page twice.
        let mut inner = fresh(1);
        let s = |n| Swip::page(PageId::new(n).unwrap());
        assert!(insert_inner(&mut inner, 0, b"", s(10)));
        assert!(insert_inner(&mut inner, 1, b"m", s(11)));
        assert_eq!(validate(&inner), Ok(()));
        let mut p = inner.clone();
        put_u64(&mut p, child_swip_off(&inner, 1), 3);
        refused(&p, "itself");
        let mut p = inner.clone();
        put_u64(&mut p, child_swip_off(&inner, 1), 10);
        refused(&p, "twice");
        // An inner node whose first key is not its low fence.
        let mut p = inner;
        remove(&mut p, 0);
        refused(&p, "low fence");
    }

    #[test]
    fn t5_validate_rejects_garbage_without_panicking() {
        let mut x: u64 = 0x1234_5678;
        for _ in 0..2000 {
            let mut p = fresh(0);
            for _ in 0..8 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = 32 + (x as usize % 64);
                p[at] = (x >> 32) as u8;
            }
            if validate(&p).is_ok() {
                // Whatever passed validation must be readable without panics.
                for i in 0..count(&p) {
                    let _ = key(&p, i);
                    if is_leaf(&p) {
                        let _ = value(&p, i);
                    }
                }
                let _ = (low_fence(&p), high_fence(&p), foster_key(&p));
            }
        }
    }
}
