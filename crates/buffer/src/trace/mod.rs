//! Buffer reference traces (rule B17 of the crate README; byte layout in `docs/trace-format.md`).
//!
//! A pool opened with [`crate::PoolConfig::trace`] records every fix, unfix, page read,
//! eviction, allocation and free as a [`TraceEvent`]. Each thread appends its events to its own
//! block buffer without any lock; a full block (64 KiB) is written to the trace file under the
//! file's mutex, so the only lock is one per block. When the pool is dropped (or
//! [`crate::BufferPool::finish_trace`] is called) the partial blocks of every thread are written.
//!
//! The same block encoding is available to other producers through [`TraceWriter`] (synthetic
//! reference strings), and [`TraceReader`] decodes a file with typed errors for bad input.
//!
//! ```
//! use swizzledb_buffer::{EventKind, PoolMode, TraceEvent, TraceHeader, TraceReader, TraceWriter};
//! # let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("refs.swzt");
//! let header = TraceHeader { page_size: 8192, mode: PoolMode::Swizzling, frames: 100, start_unix_ns: 0 };
//! let mut w = TraceWriter::create(&path, &header)?;
//! for (i, page) in [7u64, 3, 7].into_iter().enumerate() {
//!     w.write(&TraceEvent::fix(0, i as u64, page, None, swizzledb_sync::LatchMode::Shared, true))?;
//! }
//! w.finish()?;
//! assert_eq!(swizzledb_buffer::page_references(&path)?, vec![7, 3, 7]);
//! let events: Vec<_> = TraceReader::open(&path)?.collect::<Result<_, _>>()?;
//! assert!(events.iter().all(|e| e.kind == EventKind::Fix));
//! # Ok::<(), swizzledb_buffer::TraceError>(())
//! ```
//!
//! One job per file: the file's types and constants (`format.rs`), its errors (`error.rs`), the
//! block encoding every producer shares (`encode.rs`), the pool's recorder (`recorder.rs`), the
//! writer for other producers (`writer.rs`), the reader (`reader.rs`), and what is derived from
//! a trace: reference strings and CSV (`export.rs`). The unit tests (`tests.rs`) sit above them
//! all: round trips through the writer, the reader and the export.

mod encode;
mod error;
mod export;
mod format;
mod reader;
mod recorder;
#[cfg(test)]
mod tests;
mod writer;

pub use error::TraceError;
pub use export::{export_csv, page_references, write_csv, CSV_HEADER};
pub use format::{EventKind, TraceEvent, TraceHeader, TraceSummary, TRACE_MAGIC, TRACE_VERSION};
pub use reader::TraceReader;
pub(crate) use recorder::Tracer;
pub use writer::TraceWriter;
