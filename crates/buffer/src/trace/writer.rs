//! The writer for other producers: synthetic reference strings and tests write a trace file
//! through the pool's block encoding.

use super::encode::{Block, Sink};
use super::error::TraceError;
use super::format::{TraceEvent, TraceHeader, TraceSummary};
use std::io;
use std::path::Path;
use swizzledb_sync::PageId;

/// Writes a trace file from a sequence of events (for synthetic reference strings and tests).
/// Events are grouped into blocks per thread number, in the order given; call
/// [`TraceWriter::finish`] to write the partial blocks and see any error (dropping the writer
/// also writes them, ignoring errors).
pub struct TraceWriter {
    sink: Sink,
    blocks: Vec<Block>,
    finished: bool,
}

impl TraceWriter {
    /// Creates (or truncates) `path` and writes the header.
    ///
    /// # Errors
    /// I/O errors creating or writing the file.
    pub fn create(path: &Path, header: &TraceHeader) -> Result<TraceWriter, TraceError> {
        Ok(TraceWriter { sink: Sink::create(path, header)?, blocks: Vec::new(), finished: false })
    }

    /// Appends one event.
    ///
    /// # Errors
    /// The event carries a latch mode or hit flag its kind does not have (or lacks one it
    /// has); I/O errors writing a full block.
    pub fn write(&mut self, e: &TraceEvent) -> Result<(), TraceError> {
        e.validate()?;
        let i = match self.blocks.iter().position(|b| b.thread == e.thread) {
            Some(i) => i,
            None => {
                self.blocks.push(Block::new(e.thread));
                self.blocks.len() - 1
            }
        };
        let block = &mut self.blocks[i];
        block.push(e.kind, e.time_ns, e.page.get(), e.parent.map(PageId::get), e.latch, e.hit);
        if block.is_full() {
            self.sink.write_block(block);
            if let Some(err) = self.sink.error.take() {
                self.sink.error = Some(TraceError::Io {
                    file: self.sink.path.clone(),
                    source: io::Error::other("an earlier write to this trace failed"),
                });
                return Err(err);
            }
        }
        Ok(())
    }

    /// Writes the partial blocks and flushes the file.
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish(mut self) -> Result<TraceSummary, TraceError> {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> Result<TraceSummary, TraceError> {
        self.finished = true;
        for block in &mut self.blocks {
            self.sink.write_block(block);
        }
        self.sink.finish(u32::try_from(self.blocks.len()).unwrap_or(u32::MAX))
    }
}

impl Drop for TraceWriter {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.finish_inner();
        }
    }
}

impl std::fmt::Debug for TraceWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceWriter").field("path", &self.sink.path).finish_non_exhaustive()
    }
}
