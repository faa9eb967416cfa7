//! An owned, zero-initialised, aligned heap region.
//!
//! The buffer pool allocates its whole frame region as one [`AlignedBuf`] and hands out page
//! slices through raw pointers; the page file uses single-page `AlignedBuf`s as bounce buffers
//! for direct I/O. The rules every `unsafe` block here relies on are in the crate README (F1).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fmt;
use std::ptr::NonNull;

use crate::error::{BufferError, Result};

/// An owned heap region of `len` bytes whose start is a multiple of `align`, zeroed at
/// allocation and freed on drop (README F1).
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
    /// Set for regions from [`AlignedBuf::new_lazy`]: the whole anonymous mapping (start,
    /// length), of which `ptr..ptr+len` is the aligned part.
    mapping: Option<(NonNull<u8>, usize)>,
}

/// Size of a transparent huge page on x86-64 and aarch64 Linux.
pub const HUGE_PAGE: usize = 2 << 20;

// The region is exclusively owned by this value, like a `Box<[u8]>`.
// SAFETY: F1 — exclusive ownership: sending the owner sends the only safe access path.
unsafe impl Send for AlignedBuf {}
// Shared references give only shared access; mutation needs `&mut self` or the raw pointer.
// SAFETY: F1 — `&self` methods only read; raw-pointer writers must exclude races themselves.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zeroed bytes aligned to `align`.
    ///
    /// # Errors
    /// [`BufferError::Config`] if `len` is zero, `align` is not a power of two, the rounded-up
    /// size overflows `isize`, or the allocator cannot provide the memory.
    pub fn new(len: usize, align: usize) -> Result<AlignedBuf> {
        if len == 0 {
            return Err(BufferError::Config("cannot allocate an aligned buffer of 0 bytes".into()));
        }
        let layout = Layout::from_size_align(len, align).map_err(|_| {
            BufferError::Config(format!(
                "cannot allocate {len} bytes aligned to {align}: the alignment must be a power \
                 of two and the size must fit in isize"
            ))
        })?;
        // SAFETY: F1 — `layout` has a non-zero size (checked above), as `alloc_zeroed` requires.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(|| {
            BufferError::Config(format!(
                "out of memory allocating {len} bytes aligned to {align}; use a smaller buffer \
                 pool"
            ))
        })?;
        Ok(AlignedBuf { ptr, layout, mapping: None })
    }

    /// Allocates `len` zeroed bytes aligned to `HUGE_PAGE` from an anonymous mapping that the
    /// kernel fills on first touch (so memory is committed on demand), advised for transparent
    /// huge pages. For the buffer pool's frame region.
    ///
    /// # Errors
    /// [`BufferError::Config`] if `len` is zero or the kernel refuses the mapping.
    pub fn new_lazy(len: usize) -> Result<AlignedBuf> {
        // Miri has no `mmap`: a zeroed allocation of the same alignment stands in (F1).
        if cfg!(miri) {
            return Self::new(len, HUGE_PAGE);
        }
        let layout = Layout::from_size_align(len, HUGE_PAGE)
            .ok()
            .filter(|_| len > 0)
            .ok_or_else(|| BufferError::Config(format!("cannot map a region of {len} bytes")))?;
        let map_len = len
            .checked_add(HUGE_PAGE)
            .ok_or_else(|| BufferError::Config(format!("cannot map a region of {len} bytes")))?;
        // SAFETY: F1 — an anonymous private mapping at an address of the kernel's choice touches
        // no existing memory; the result is checked against MAP_FAILED below.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(BufferError::Config(format!(
                "cannot map {len} bytes for the buffer pool ({}); use a smaller pool",
                std::io::Error::last_os_error()
            )));
        }
        let base = raw.cast::<u8>();
        let skip = base.align_offset(HUGE_PAGE);
        // SAFETY: F1 — `skip < HUGE_PAGE` and the mapping is `len + HUGE_PAGE` long, so the
        // aligned start and the `len` bytes after it lie inside the mapping.
        let aligned = unsafe { base.add(skip) };
        // SAFETY: F1 — advice on a range inside our own mapping; it changes neither contents nor
        // validity, only how the kernel backs the range. Failure (no THP) is harmless.
        let _ = unsafe { libc::madvise(aligned.cast(), len, libc::MADV_HUGEPAGE) };
        let ptr = NonNull::new(aligned).expect("mmap never returns null on success");
        let start = NonNull::new(base).expect("mmap never returns null on success");
        Ok(AlignedBuf { ptr, layout, mapping: Some((start, map_len)) })
    }

    /// Faults the whole region in now (F1b): `MADV_POPULATE_WRITE` (Linux 5.14), else one
    /// write of a zero byte per 4 KiB page. The contents stay zero; the memory is committed.
    /// For a pool whose data will grow: later first touches then cost no page fault, which on
    /// a virtual machine can mean zeroing memory the host backs only then.
    pub fn prefault(&mut self) {
        let len = self.len();
        let p = self.ptr.as_ptr();
        // SAFETY: F1b — advice on our own region; POPULATE_WRITE faults pages in as a write
        // would, without changing a byte. Failure (an older kernel) falls back below.
        #[cfg(all(target_os = "linux", not(miri)))]
        if unsafe { libc::madvise(p.cast(), len, libc::MADV_POPULATE_WRITE) } == 0 {
            return;
        }
        for off in (0..len).step_by(4096) {
            // SAFETY: F1, F1b — `off < len`, inside the region `&mut self` owns exclusively; the
            // byte is written back as it was read, so the contents do not change.
            unsafe { p.add(off).write_volatile(p.add(off).read_volatile()) };
        }
    }

    /// Advises the kernel to back the untouched spare capacity of `v` with transparent huge
    /// pages, where it covers whole huge pages (F1a). For large per-frame arrays filled right
    /// after: one TLB entry then covers 2 MiB of them instead of 4 KiB, so a hit on a cold frame
    /// costs no page walk for its descriptor.
    pub fn advise_huge<T>(v: &Vec<T>) {
        if cfg!(miri) {
            return; // no `madvise` there; advice changes nothing (F1a)
        }
        let bytes = v.capacity() * std::mem::size_of::<T>();
        let start = v.as_ptr().cast::<u8>();
        let skip = start.align_offset(HUGE_PAGE);
        if skip >= bytes {
            return;
        }
        let len = (bytes - skip) / HUGE_PAGE * HUGE_PAGE;
        if len == 0 {
            return;
        }
        // SAFETY: F1a — advice on whole pages inside the vector's own allocation
        // (`skip + len <= capacity` bytes from its start); MADV_HUGEPAGE changes neither contents
        // nor validity, only how the kernel backs the range. Failure (no THP) is harmless.
        let _ = unsafe { libc::madvise(start.add(skip).cast_mut().cast(), len, libc::MADV_HUGEPAGE) };
    }

    /// Length of the region in bytes (never zero).
    #[inline]
    #[must_use]
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Always `false`: zero-length buffers cannot be created.
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.layout.size() == 0
    }

    /// The alignment the region was allocated with.
    #[inline]
    #[must_use]
    pub fn align(&self) -> usize {
        self.layout.align()
    }

    /// The whole region as a shared slice.
    #[inline]
    #[must_use]
    pub fn as_slice(&self) -> &[u8] {
        // `&self` excludes `as_mut_slice`; raw-pointer writers must not race with this slice.
        // SAFETY: F1 — the region is valid, aligned and initialised for `len` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len()) }
    }

    /// The whole region as a mutable slice.
    #[inline]
    #[must_use]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: F1 — valid and initialised for `len` bytes; `&mut self` makes this unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len()) }
    }

    /// Pointer to the first byte, for reads. Valid for `len` bytes until `self` is dropped.
    #[inline]
    #[must_use]
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// Pointer to the first byte, for reads and writes. Valid for `len` bytes until `self` is
    /// dropped.
    ///
    /// The pointer is a copy of the allocation's own pointer, not derived from the `&mut self`
    /// borrow: it stays usable after the borrow ends and after `self` is moved (the region does
    /// not move). This is how the buffer pool addresses its frames from `&self`; it must then
    /// ensure (F1) that no other thread reads or writes the same bytes at the same time and that
    /// no slice from [`as_slice`](Self::as_slice) covering them is alive.
    #[inline]
    #[must_use]
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        match self.mapping {
            Some((start, map_len)) => {
                // SAFETY: F1 — `start..start+map_len` is the mapping made in `new_lazy`,
                // unmapped only here, once.
                let _ = unsafe { libc::munmap(start.as_ptr().cast(), map_len) };
            }
            None => {
                // SAFETY: F1 — `ptr` came from `alloc_zeroed(self.layout)` and is freed only
                // here, once.
                unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
            }
        }
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("ptr", &self.ptr)
            .field("len", &self.len())
            .field("align", &self.align())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_region_is_zeroed_aligned_and_writable() {
        let mut buf = AlignedBuf::new_lazy(3 * HUGE_PAGE + 4096).expect("mapping");
        assert_eq!(buf.as_ptr() as usize % HUGE_PAGE, 0);
        assert!(buf.as_slice().iter().step_by(4096).all(|&b| b == 0));
        let n = buf.len();
        buf.as_mut_slice()[n - 1] = 7;
        assert_eq!(buf.as_slice()[n - 1], 7);
        assert!(AlignedBuf::new_lazy(0).is_err());
    }

    #[test]
    fn f1b_prefault_keeps_the_contents() {
        // Under Miri, which interprets each byte's check, a region of a few pages.
        let len = if cfg!(miri) { 3 * 4096 } else { HUGE_PAGE + 3 * 4096 };
        let mut buf = AlignedBuf::new_lazy(len).expect("mapping");
        buf.as_mut_slice()[5000] = 7;
        buf.prefault();
        assert!(buf.as_slice().iter().enumerate().all(|(i, &b)| b == if i == 5000 { 7 } else { 0 }));
        let mut small = AlignedBuf::new(8192, 4096).expect("allocation");
        small.prefault();
        assert!(small.as_slice().iter().all(|&b| b == 0));
    }

    #[test]
    fn allocates_zeroed_and_aligned() {
        for align in [1, 8, 512, 4096, 65536] {
            let buf = AlignedBuf::new(3 * 4096, align).expect("allocation");
            assert_eq!(buf.as_ptr() as usize % align, 0);
            assert_eq!(buf.len(), 3 * 4096);
            assert_eq!(buf.align(), align);
            assert!(!buf.is_empty());
            assert!(buf.as_slice().iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn writes_are_visible() {
        let mut buf = AlignedBuf::new(4096, 4096).expect("allocation");
        buf.as_mut_slice()[4095] = 7;
        buf.as_mut_slice()[0] = 1;
        assert_eq!(buf.as_slice()[4095], 7);
        assert_eq!(buf.as_slice()[0], 1);
        let p = buf.as_mut_ptr();
        assert_eq!(p.cast_const(), buf.as_ptr());
        // The pointer outlives the borrow and a move of the owner.
        let moved = buf;
        // SAFETY: F1 — `p` points into `moved`'s live region; offset 4094 < len, no slice alive.
        unsafe { p.add(4094).write(9) };
        assert_eq!(moved.as_slice()[4094], 9);
    }

    #[test]
    fn rejects_bad_arguments_without_panicking() {
        assert!(matches!(AlignedBuf::new(0, 4096), Err(BufferError::Config(_))));
        assert!(matches!(AlignedBuf::new(4096, 0), Err(BufferError::Config(_))));
        assert!(matches!(AlignedBuf::new(4096, 3000), Err(BufferError::Config(_))));
        assert!(matches!(AlignedBuf::new(usize::MAX - 10, 4096), Err(BufferError::Config(_))));
    }

    #[test]
    fn is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<AlignedBuf>();
        let buf = AlignedBuf::new(8192, 4096).expect("allocation");
        std::thread::scope(|s| {
            s.spawn(|| assert!(buf.as_slice().iter().all(|&b| b == 0)));
        });
    }
}
