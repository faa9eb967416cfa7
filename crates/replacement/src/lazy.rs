//! Per-frame state that costs memory for the frames a policy has seen, not for the pool's size
//! (README "Shared building blocks", rule S1).
//!
//! A pool may be sized far beyond the data it will hold (buffer README B30a): its frames and
//! descriptors are committed only as they are used. A policy that wrote an array of `capacity`
//! entries when it was built would cost that size anyway — gigabytes for a terabyte pool, and an
//! aborted process where the array could not be allocated at all. So per-frame arrays start empty:
//!
//! - [`FrameVec`]: for state the policy changes only under its own lock (`&mut self`).
//! - [`LazyCells`]: for atomics read or written without the policy's lock.
//!
//! Both keep their entries in chunks of up to 16,384, allocated by the first write into them and
//! never moved; an entry whose chunk was never written reads as the array's fill. The pool hands
//! out never-used frames in order (B30a), so the chunks are those of the frames in use (and, for
//! LIRS and CLOCK-Pro, of the ghosts they keep). A read costs one more load than a slice's, from
//! the chunks' directory, which for a pool of a million frames has 64 entries. A reader of a
//! [`LazyCells`] without the lock either finds no chunk (the cell still holds its fill) or the
//! chunk for good.

use std::sync::OnceLock;

/// Entries in chunks allocated by the first write into them; see the module documentation.
pub(crate) struct FrameVec<T: Copy> {
    chunks: Box<[Option<Box<[T]>>]>,
    /// Entries per chunk, a power of two: [`CHUNK`], or less for a smaller capacity.
    shift: Shift,
    capacity: usize,
    fill: T,
}

impl<T: Copy> FrameVec<T> {
    /// `capacity` entries, each `fill` until written. Allocates only the chunks' directory.
    pub(crate) fn new(capacity: usize, fill: T) -> FrameVec<T> {
        let shift = Shift::new(capacity);
        FrameVec { chunks: (0..shift.chunks(capacity)).map(|_| None).collect(), shift, capacity, fill }
    }

    /// The number of entries, written or not.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.capacity
    }

    /// The entry at `index`, if `index` is below the capacity.
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        match self.chunks.get(self.shift.chunk(index))? {
            Some(chunk) => chunk.get(self.shift.offset(index)),
            None => Some(&self.fill),
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

    #[cold]
    fn allocate(&mut self, c: usize) -> &mut [T] {
        let len = self.shift.len(c, self.capacity);
        self.chunks[c].insert(vec![self.fill; len].into_boxed_slice())
    }
}

impl<T: Copy> std::ops::Index<usize> for FrameVec<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        self.get(index).unwrap_or_else(|| panic!("index {index} beyond the capacity {}", self.capacity))
    }
}

impl<T: Copy> std::ops::IndexMut<usize> for FrameVec<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        assert!(index < self.capacity, "index {index} beyond the capacity {}", self.capacity);
        let (c, i) = (self.shift.chunk(index), self.shift.offset(index));
        match self.chunks[c] {
            Some(ref mut chunk) => &mut chunk[i],
            None => &mut self.allocate(c)[i],
        }
    }
}

/// Entries per chunk, at most.
const CHUNK: usize = 1 << 14;

/// The log2 of the entries per chunk: the capacity's power of two above, up to [`CHUNK`], so
/// that an index splits into chunk and offset by a shift and a mask.
#[derive(Clone, Copy)]
struct Shift(u32);

impl Shift {
    fn new(capacity: usize) -> Shift {
        Shift(capacity.clamp(1, CHUNK).next_power_of_two().trailing_zeros())
    }

    fn chunks(self, capacity: usize) -> usize {
        capacity.div_ceil(1 << self.0)
    }

    #[inline(always)]
    fn chunk(self, index: usize) -> usize {
        index >> self.0
    }

    #[inline(always)]
    fn offset(self, index: usize) -> usize {
        index & ((1 << self.0) - 1)
    }

    /// The entries of chunk `c`: all but the last are full.
    fn len(self, c: usize, capacity: usize) -> usize {
        (1usize << self.0).min(capacity - (c << self.0))
    }
}

/// Cells, each `fill()` until its chunk is allocated by a write into it; see the module
/// documentation.
pub(crate) struct LazyCells<T> {
    chunks: Box<[OnceLock<Box<[T]>>]>,
    /// Cells per chunk, a power of two: [`CHUNK`], or less for a smaller capacity.
    shift: Shift,
    capacity: usize,
    fill: fn() -> T,
}

impl<T> LazyCells<T> {
    /// `capacity` cells, each `fill()` until written. Allocates only the chunks' directory.
    pub(crate) fn new(capacity: usize, fill: fn() -> T) -> LazyCells<T> {
        let shift = Shift::new(capacity);
        LazyCells {
            chunks: (0..shift.chunks(capacity)).map(|_| OnceLock::new()).collect(),
            shift,
            capacity,
            fill,
        }
    }

    /// Cell `index`, if its chunk has been allocated. `None` means it holds its fill (or that
    /// `index` is beyond the capacity).
    pub(crate) fn get(&self, index: usize) -> Option<&T> {
        let chunk = self.chunks.get(self.shift.chunk(index))?.get()?;
        chunk.get(self.shift.offset(index))
    }

    /// Cell `index`, allocating its chunk first if no write reached it yet.
    ///
    /// # Panics
    /// If `index` is beyond the capacity.
    pub(crate) fn cell(&self, index: usize) -> &T {
        assert!(index < self.capacity, "index {index} beyond the capacity {}", self.capacity);
        let c = self.shift.chunk(index);
        let chunk = self.chunks[c]
            .get_or_init(|| (0..self.shift.len(c, self.capacity)).map(|_| (self.fill)()).collect());
        &chunk[self.shift.offset(index)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU8, Ordering};

    /// S1: unwritten entries read as the fill, writes land where they were made, and only the
    /// chunks written are allocated.
    #[test]
    fn s1_frame_vec_reads_its_fill_until_written_and_allocates_the_chunks_written() {
        let mut v = FrameVec::new(1 << 30, 7u32);
        assert_eq!((v.len(), v[0], v[(1 << 30) - 1], v.get(1 << 30)), (1 << 30, 7, 7, None));
        v[5] = 1;
        v[(1 << 30) - 1] = 2;
        assert_eq!((v[5], v[6], v[(1 << 30) - 1], v[(1 << 30) - 2], v[CHUNK]), (1, 7, 2, 7, 7));
        assert_eq!(v.chunks.iter().filter(|c| c.is_some()).count(), 2);
        let mut small = FrameVec::new(3, 0u8);
        small[2] = 9;
        assert_eq!((small[0], small[2], small.get(3), small.contains(&9)), (0, 9, None, true));
        assert_eq!(small.chunks.iter().map(|c| c.as_ref().map(|c| c.len())).collect::<Vec<_>>(), [Some(3)]);
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
