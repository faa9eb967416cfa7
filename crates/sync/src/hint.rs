//! Performance hints that change no program state (README "Hints", rule H1).

/// Asks the CPU to start loading the cache line of `value`, so that a read of it soon after
/// finds it in the cache; the caller goes on at once. A hint only (H1): it reads nothing the
/// program can see, and where no prefetch instruction is available it does nothing.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: H1 — PREFETCHT0 reads no value and cannot fault, whatever the address, and SSE
    // (which the instruction needs) is part of the x86_64 baseline; `value` is a live reference
    // besides.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use super::prefetch;

    /// H1: a prefetch leaves every value as it was, for values of any size and alignment.
    #[test]
    fn h1_prefetch_changes_nothing() {
        let words = vec![7u64; 1024];
        let bytes = [1u8, 2, 3];
        for w in &words {
            prefetch(w);
        }
        prefetch(&bytes[1]);
        prefetch(&words);
        assert!(words.iter().all(|&w| w == 7));
        assert_eq!(bytes, [1, 2, 3]);
    }
}
