//! Thread numbers: small numbers, distinct among the live threads, for indexing per-thread
//! slots (BP-Wrapper's queues, the snapshot slots of the record versions).
//!
//! A thread takes a number on its first call and returns it when it exits; a returned number
//! is handed to the next new thread (the last returned first), so the numbers of live threads
//! are distinct and stay below the largest number of threads alive at once, however many
//! threads came and went. A table indexed by them stays as short as the threads that run at
//! once. The fast path reads a copy of the number kept in a constant-initialized thread-local
//! (one load).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Source of numbers never handed out yet.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Numbers of threads that have exited, for reuse.
static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());

/// A thread's number, returned for reuse when the thread exits.
struct Number(usize);

impl Number {
    fn take() -> Number {
        let reused = FREE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
        Number(reused.unwrap_or_else(|| NEXT.fetch_add(1, Ordering::Relaxed)))
    }
}

impl Drop for Number {
    fn drop(&mut self) {
        // Forgotten by the fast path before it is handed to another thread.
        let _ = CACHED.try_with(|n| n.set(NONE));
        FREE.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(self.0);
    }
}

/// `CACHED` before the thread's number is taken, and after it was returned.
const NONE: usize = usize::MAX;

thread_local! {
    /// This thread's number, taken on first use.
    static NUMBER: Number = Number::take();
    /// A copy of this thread's number while it holds one: a constant-initialized word without a
    /// destructor, so reading it is one load (`NUMBER` has a destructor, and every access to it
    /// checks whether it is alive).
    static CACHED: Cell<usize> = const { Cell::new(NONE) };
}

/// The calling thread's number; `None` while the thread is being torn down.
#[inline]
#[must_use]
pub fn thread_number() -> Option<usize> {
    let cached = CACHED.get();
    if cached != NONE {
        return Some(cached);
    }
    let number = NUMBER.try_with(|n| n.0).ok()?;
    CACHED.set(number);
    Some(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_threads_have_distinct_numbers_and_exited_ones_give_theirs_back() {
        let mine = thread_number().expect("a live thread has a number");
        // Eight threads alive at once hold eight distinct numbers, none of them this thread's.
        let barrier = std::sync::Barrier::new(8);
        let numbers: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        let n = thread_number().expect("a live thread has a number");
                        barrier.wait();
                        n
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("no panic")).collect()
        });
        let mut distinct = numbers.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 8, "live threads shared a number: {numbers:?}");
        assert!(!numbers.contains(&mine));
        // 500 threads one after another reuse returned numbers: the numbers stay below the
        // threads alive at once (other tests' threads may hold some meanwhile).
        let highest = (0..500)
            .map(|_| std::thread::spawn(|| thread_number().expect("live")).join().expect("no panic"))
            .max()
            .expect("500 numbers");
        assert!(highest < 100, "threads one after another reached number {highest}");
    }
}
