//! The pool's recorder (B17): per-thread blocks written without a lock, one file.

use super::encode::{now_unix_ns, Block, Sink};
use super::error::TraceError;
use super::format::{EventKind, TraceHeader, TraceSummary, BLOCK_HEADER_LEN};
use crate::config::PoolMode;
use parking_lot::Mutex;
use std::cell::{RefCell, UnsafeCell};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;
use swizzledb_sync::{LatchMode, PageId};

/// One thread's block buffer for one tracer.
struct ThreadBuf {
    block: UnsafeCell<Block>,
}

// SAFETY: B17 — a `ThreadBuf` is shared between its owner thread (through the thread-local list)
// and its tracer (through `Tracer::threads`), but its block is only touched by the owner thread
// inside `Tracer::record` (which borrows the tracer, hence the pool, shared) and by the tracer in
// `close` (which holds the tracer exclusively, so no `record` of that tracer runs or can run
// again: its id is never reused). The exclusive borrow in `close` is ordered after every earlier
// shared borrow of the pool, so the owner's writes are visible.
unsafe impl Sync for ThreadBuf {}

static NEXT_TRACER: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static BUFS: RefCell<Vec<(u64, Arc<ThreadBuf>)>> = const { RefCell::new(Vec::new()) };
}

/// A pool's recorder: per-thread blocks, one file.
pub(crate) struct Tracer {
    id: u64,
    start: Instant,
    sink: Mutex<Sink>,
    /// Every thread's buffer, in order of thread number; locked only when a thread registers.
    threads: Mutex<Vec<Arc<ThreadBuf>>>,
    closed: bool,
}

impl Tracer {
    /// Creates the trace file and writes its header.
    pub(crate) fn create(
        path: &Path,
        page_size: usize,
        mode: PoolMode,
        frames: usize,
    ) -> Result<Tracer, TraceError> {
        let header = TraceHeader {
            page_size: u32::try_from(page_size).unwrap_or(u32::MAX),
            mode,
            frames: u32::try_from(frames).unwrap_or(u32::MAX),
            start_unix_ns: now_unix_ns(),
        };
        let sink = Sink::create(path, &header)?;
        Ok(Tracer {
            id: NEXT_TRACER.fetch_add(1, Relaxed),
            start: Instant::now(),
            sink: Mutex::new(sink),
            threads: Mutex::new(Vec::new()),
            closed: false,
        })
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.sink.lock().path.clone()
    }

    /// Records one event of the calling thread (B17): no lock unless the thread's block is full
    /// or this is the thread's first event.
    #[cold]
    #[inline(never)]
    pub(crate) fn record(
        &self,
        kind: EventKind,
        page: PageId,
        parent: Option<PageId>,
        latch: Option<LatchMode>,
        hit: Option<bool>,
    ) {
        let time_ns = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        // A thread whose thread-locals are being destroyed cannot record; its event is lost.
        let _ = BUFS.try_with(|bufs| {
            let mut bufs = bufs.borrow_mut();
            let i = match bufs.iter().position(|(id, _)| *id == self.id) {
                Some(i) => i,
                None => {
                    // Forget buffers of tracers that are gone (only this list still holds them).
                    bufs.retain(|(_, b)| Arc::strong_count(b) > 1);
                    let mut threads = self.threads.lock();
                    let buf = Arc::new(ThreadBuf {
                        block: UnsafeCell::new(Block::new(u32::try_from(threads.len()).unwrap_or(u32::MAX))),
                    });
                    threads.push(Arc::clone(&buf));
                    bufs.push((self.id, buf));
                    bufs.len() - 1
                }
            };
            // SAFETY: B17 — this thread owns this buffer (it is in this thread's list under this
            // tracer's id), and the tracer touches it only in `close`, which cannot run while
            // `&self` is borrowed. No other reference to the block is alive here.
            let block = unsafe { &mut *bufs[i].1.block.get() };
            block.push(kind, time_ns, page.get(), parent.map(PageId::get), latch, hit);
            if block.is_full() {
                self.sink.lock().write_block(block);
            }
        });
    }

    /// Writes every thread's partial block and flushes the file.
    pub(crate) fn close(&mut self) -> Result<TraceSummary, TraceError> {
        self.closed = true;
        let threads = std::mem::take(&mut *self.threads.lock());
        let sink = self.sink.get_mut();
        for buf in &threads {
            // SAFETY: B17 — `&mut self` excludes every `record` of this tracer, now and later
            // (`closed` is set and the id is never reused), so no owner thread touches the block.
            let block = unsafe { &mut *buf.block.get() };
            sink.write_block(block);
            // The owner thread's list may keep the buffer until it next registers or exits.
            block.bytes.truncate(BLOCK_HEADER_LEN);
            block.bytes.shrink_to_fit();
        }
        sink.finish(u32::try_from(threads.len()).unwrap_or(u32::MAX))
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if !self.closed {
            // Errors cannot be reported from a drop; `BufferPool::finish_trace` reports them.
            let _ = self.close();
        }
    }
}
