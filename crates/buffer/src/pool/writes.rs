//! The trees' writes in flight (B22): `close` flushes only after the last write that began
//! before it has ended, so that no write lands in a page behind the flush's back.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

/// Stripes of the count (a power of two): writers on different threads touch different lines.
const STRIPES: usize = 16;

/// One stripe, alone on its cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Stripe(AtomicUsize);

/// How many tree writes run, counted per stripe of threads (B22).
#[derive(Default)]
pub(super) struct InFlight {
    stripes: [Stripe; STRIPES],
}

/// A write counted in flight; the count drops with it, on unwinding too.
#[must_use = "the write is counted only while the guard lives"]
pub struct WriteGuard<'p>(&'p AtomicUsize);

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl InFlight {
    /// Counts a write of the calling thread, then asks `closed`: `None` (uncounted) if the
    /// pool is closed. Sequentially consistent with [`InFlight::wait_for_none`]'s reads, which
    /// follow the store of `closed`: either the write sees the pool closed, or the close sees
    /// the write counted and waits for it.
    pub(super) fn enter(&self, closed: &std::sync::atomic::AtomicBool) -> Option<WriteGuard<'_>> {
        let stripe = &self.stripes[super::free::home() % STRIPES].0;
        stripe.fetch_add(1, SeqCst);
        let guard = WriteGuard(stripe);
        (!closed.load(SeqCst)).then_some(guard)
    }

    /// Waits until no counted write runs (called after `closed` was set, so none begins).
    pub(super) fn wait_for_none(&self) {
        let mut pause = Duration::from_micros(10);
        while self.stripes.iter().any(|s| s.0.load(SeqCst) != 0) {
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }
}
