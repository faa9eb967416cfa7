//! Per-frame state that costs memory for the frames a policy has seen, not for the pool's size
//! (README "Shared building blocks", rule S1).
//!
//! A pool may be sized far beyond the data it will hold (buffer README B30a): its frames and
//! descriptors are committed only as they are used. A policy that wrote an array of `capacity`
//! entries when it was built would cost that size anyway — gigabytes for a terabyte pool, and an
//! aborted process where the array could not be allocated at all. So per-frame arrays start empty:
//!
//! - [`FrameVec`]: for state the policy changes only under its own lock (`&mut self`). An entry
//!   never written reads as the array's fill (free, unlinked, no page); a write grows a vector,
//!   by doubling, to the highest index written. A read or a write costs what a slice's does, a
//!   bounds check, plus a well-predicted test; growing copies, amortized over the writes. LIRS's
//!   and CLOCK-Pro's ghost nodes, numbered above the frames, grow a second vector.
//! - [`LazyCells`]: for atomics read or written without the policy's lock, which cannot move. Its
//!   cells come in chunks of 16,384, each allocated by the first write into it and never moved;
//!   a reader without the lock either finds no chunk (the cell still holds its fill) or the
//!   chunk for good. A read costs one load more than a slice's, from the chunks' directory.
//!
//! The pool hands out never-used frames in order (buffer B30a), so either array holds the frames
//! in use (and the ghosts kept).

use std::sync::OnceLock;

/// log2 of the entries per chunk: an index splits into chunk and offset by a shift and a mask
/// that are constants.
const CHUNK_SHIFT: u32 = 14;
/// Entries per chunk. The last chunk holds only the entries below the capacity.
const CHUNK: usize = 1 << CHUNK_SHIFT;
/// The fewest entries a [`FrameVec`]'s vector grows to.
const MIN_GROWTH: usize = 64;

#[inline(always)]
fn chunk_of(index: usize) -> usize {
    index >> CHUNK_SHIFT
}

#[inline(always)]
fn offset_of(index: usize) -> usize {
    index & (CHUNK - 1)
}

/// The entries of chunk `c` of an array of `capacity`: all but the last are full.
fn chunk_len(c: usize, capacity: usize) -> usize {
    CHUNK.min(capacity - (c << CHUNK_SHIFT))
}

/// The panic of an index at or beyond the capacity, out of the callers' inlined paths.
#[cold]
#[inline(never)]
fn beyond(index: usize, capacity: usize) -> ! {
    panic!("index {index} beyond the capacity {capacity}")
}

/// Entries that read as `fill` until written, in vectors that grow, by doubling, to the highest
/// index written; see the module documentation. Indices from `split` on (LIRS's and CLOCK-Pro's
/// ghost nodes, above their frames) grow a second vector of their own.
pub(crate) struct FrameVec<T: Copy> {
    /// Entries `0..low.len()`, all below `split`.
    low: Vec<T>,
    /// Entries `split..split + high.len()`.
    high: Vec<T>,
    split: usize,
    capacity: usize,
    fill: T,
}

impl<T: Copy> FrameVec<T> {
    /// `capacity` entries, each `fill` until written. Allocates nothing.
    pub(crate) fn new(capacity: usize, fill: T) -> FrameVec<T> {
        FrameVec::with_split(capacity, capacity, fill)
    }

    /// As [`FrameVec::new`], with the entries from `split` on grown apart from those below it.
    pub(crate) fn with_split(split: usize, capacity: usize, fill: T) -> FrameVec<T> {
        FrameVec { low: Vec::new(), high: Vec::new(), split: split.min(capacity), capacity, fill }
    }

    /// The number of entries, written or not.
    pub(crate) fn len(&self) -> usize {
        self.capacity
    }

    /// The entries grown so far (written, or reading as the fill), with their indices.
    pub(crate) fn written(&self) -> impl Iterator<Item = (usize, &T)> + '_ {
        self.low.iter().enumerate().chain(self.high.iter().enumerate().map(|(at, v)| (self.split + at, v)))
    }

    /// The entry at `index`, if `index` is below the capacity.
    #[inline(always)]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        // `low` holds no index at or beyond `split`: a frame written before decides at once.
        match self.low.get(index) {
            Some(entry) => Some(entry),
            None => self.get_beyond_low(index),
        }
    }

    /// [`FrameVec::get`] of an index `low` does not hold.
    fn get_beyond_low(&self, index: usize) -> Option<&T> {
        if index < self.split {
            Some(&self.fill)
        } else if index < self.capacity {
            Some(self.high.get(index - self.split).unwrap_or(&self.fill))
        } else {
            None
        }
    }

    /// Whether any entry holds `value`.
    #[cfg(test)]
    pub(crate) fn contains(&self, value: &T) -> bool
    where
        T: PartialEq,
    {
        (0..self.capacity).any(|i| self[i] == *value)
    }

    /// Entry `index`, beyond the entries allocated so far.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, index: usize) -> &mut T {
        if index >= self.capacity {
            beyond(index, self.capacity);
        }
        let (cells, at, end) = if index < self.split {
            (&mut self.low, index, self.split)
        } else {
            (&mut self.high, index - self.split, self.capacity - self.split)
        };
        let len = (at + 1).next_power_of_two().max(MIN_GROWTH).min(end);
        cells.resize(len, self.fill);
        &mut cells[at]
    }
}

impl<T: Copy> std::ops::Index<usize> for FrameVec<T> {
    type Output = T;

    #[inline(always)]
    fn index(&self, index: usize) -> &T {
        match self.get(index) {
            Some(entry) => entry,
            None => beyond(index, self.capacity),
        }
    }
}

impl<T: Copy> std::ops::IndexMut<usize> for FrameVec<T> {
    #[inline(always)]
    fn index_mut(&mut self, index: usize) -> &mut T {
        // `low` holds no index at or beyond `split`, so the first test alone decides there.
        if index < self.low.len() {
            return &mut self.low[index];
        }
        if let Some(at) = index.checked_sub(self.split).filter(|&at| at < self.high.len()) {
            return &mut self.high[at];
        }
        self.grow(index)
    }
}

/// Cells, each `fill()` until its chunk is allocated by a write into it; see the module
/// documentation.
pub(crate) struct LazyCells<T> {
    chunks: Box<[OnceLock<Box<[T]>>]>,
    capacity: usize,
    fill: fn() -> T,
}

impl<T> LazyCells<T> {
    /// `capacity` cells, each `fill()` until written. Allocates only the chunks' directory.
    pub(crate) fn new(capacity: usize, fill: fn() -> T) -> LazyCells<T> {
        LazyCells { chunks: (0..capacity.div_ceil(CHUNK)).map(|_| OnceLock::new()).collect(), capacity, fill }
    }

    /// The number of cells, written or not.
    pub(crate) fn len(&self) -> usize {
        self.capacity
    }

    /// Cell `index`, if its chunk has been allocated. `None` means it holds its fill (or that
    /// `index` is beyond the capacity).
    #[inline(always)]
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        self.chunks.get(chunk_of(index))?.get()?.get(offset_of(index))
    }

    /// Cell `index`, allocating its chunk first if no write reached it yet.
    ///
    /// # Panics
    /// If `index` is beyond the capacity.
    #[inline(always)]
    pub(crate) fn cell(&self, index: usize) -> &T {
        match self.get(index) {
            Some(cell) => cell,
            None => self.allocate(index),
        }
    }

    /// Cell `index`, in a chunk no write reached yet (or that another thread is allocating).
    #[cold]
    #[inline(never)]
    fn allocate(&self, index: usize) -> &T {
        if index >= self.capacity {
            beyond(index, self.capacity);
        }
        let c = chunk_of(index);
        let chunk =
            self.chunks[c].get_or_init(|| (0..chunk_len(c, self.capacity)).map(|_| (self.fill)()).collect());
        &chunk[offset_of(index)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// S1: unwritten entries read as the fill, writes land where they were made, and each
    /// vector grows only to the power of two above the highest index written in its part.
    #[test]
    fn s1_frame_vec_reads_its_fill_until_written_and_grows_to_the_highest_write() {
        let mut v = FrameVec::new(1 << 30, 7u32);
        assert_eq!((v.len(), v[0], v[(1 << 30) - 1], v.get(1 << 30)), (1 << 30, 7, 7, None));
        v[5] = 1;
        v[100] = 2;
        assert_eq!((v[5], v[6], v[100], v[101], v.low.len(), v.high.len()), (1, 7, 2, 7, 128, 0));
        let mut nodes = FrameVec::with_split(1000, 3000, 0u8);
        nodes[1000] = 1;
        nodes[1001] = 2;
        nodes[3] = 3;
        assert_eq!((nodes[1000], nodes[1001], nodes[1002], nodes[3], nodes[999]), (1, 2, 0, 3, 0));
        assert_eq!((nodes.low.len(), nodes.high.len()), (64, 64), "ghost nodes grow their own part");
        nodes[2999] = 4;
        assert_eq!((nodes[2999], nodes.high.len(), nodes.get(3000)), (4, 2000, None));
        let mut small = FrameVec::new(3, 0u8);
        small[2] = 9;
        assert_eq!(
            (small[0], small[2], small.get(3), small.contains(&9), small.low.len()),
            (0, 9, None, true, 3)
        );
    }

    /// S1: a cell reads as unallocated until a write reaches its chunk; the chunk then holds the
    /// fill everywhere else, and other chunks stay unallocated.
    #[test]
    fn s1_lazy_cells_allocate_the_chunk_of_a_write_only() {
        let cells = LazyCells::new(3 * CHUNK + 5, || AtomicU8::new(9));
        assert!(cells.get(0).is_none() && cells.get(3 * CHUNK + 4).is_none());
        cells.cell(CHUNK + 1).store(1, Ordering::Relaxed);
        cells.cell(3 * CHUNK + 4).store(2, Ordering::Relaxed);
        let load = |i: usize| cells.get(i).map(|c| c.load(Ordering::Relaxed));
        assert_eq!(
            (load(CHUNK), load(CHUNK + 1), load(0), load(3 * CHUNK + 4)),
            (Some(9), Some(1), None, Some(2))
        );
        assert_eq!(cells.get(3 * CHUNK + 5).map(|_| ()), None, "beyond the capacity");
        let chunks = cells.chunks.iter().map(|c| c.get().map(|c| c.len())).collect::<Vec<_>>();
        assert_eq!(chunks, [None, Some(CHUNK), None, Some(5)], "two chunks, the last one short");
    }
}
