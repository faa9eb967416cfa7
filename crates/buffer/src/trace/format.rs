//! The trace file's types and constants: events, the file header, and the sizes the block
//! encoding (`encode.rs`) and the reader work with. Byte layout in `docs/trace-format.md`.

use super::error::TraceError;
use crate::config::PoolMode;
use std::path::PathBuf;
use swizzledb_sync::{LatchMode, PageId};

/// The first eight bytes of every trace file.
pub const TRACE_MAGIC: [u8; 8] = *b"SWZTRACE";
/// The trace format version this build writes and reads.
pub const TRACE_VERSION: u32 = 1;
/// Bytes of the file header.
pub(super) const HEADER_LEN: usize = 32;
/// Bytes of a block header: thread, event count, payload length, base timestamp.
pub(super) const BLOCK_HEADER_LEN: usize = 20;
/// A thread's block is written once its payload reaches this many bytes.
pub(super) const BLOCK_BYTES: usize = 64 << 10;
/// The largest encoded event: tag, three 10-byte varints.
pub(super) const MAX_EVENT_LEN: usize = 31;
/// Readers reject blocks with a larger payload (a bad length must not allocate gigabytes).
pub(super) const MAX_BLOCK_PAYLOAD: u32 = 16 << 20;

/// What happened to a page.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Hash)]
pub enum EventKind {
    /// A fix (the page was latched and handed out); carries latch mode and hit/miss.
    Fix,
    /// The fix guard was dropped; carries the latch mode released.
    Unfix,
    /// The page was read from the file (a miss; the `Fix` with `hit == Some(false)` follows).
    Read,
    /// The page's frame was freed by eviction (B13/B14); carries the parent the page was
    /// swizzled in, if any.
    Evict,
    /// A new page was allocated and fixed exclusively (it has no `Fix` event; its `Unfix` or
    /// `Free` ends the hold).
    Alloc,
    /// The page was freed (B11); this also ends the hold of its guard (no `Unfix` follows).
    Free,
}

impl EventKind {
    /// All kinds, in code order.
    pub const ALL: [EventKind; 6] = [
        EventKind::Fix,
        EventKind::Unfix,
        EventKind::Read,
        EventKind::Evict,
        EventKind::Alloc,
        EventKind::Free,
    ];

    /// The name used in CSV files.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Fix => "fix",
            EventKind::Unfix => "unfix",
            EventKind::Read => "read",
            EventKind::Evict => "evict",
            EventKind::Alloc => "alloc",
            EventKind::Free => "free",
        }
    }

    pub(super) fn code(self) -> u8 {
        self as u8
    }

    pub(super) fn from_code(c: u8) -> Option<EventKind> {
        EventKind::ALL.get(usize::from(c)).copied()
    }

    /// True for the kinds that carry a latch mode (fix, unfix, alloc).
    #[must_use]
    pub fn has_latch(self) -> bool {
        matches!(self, EventKind::Fix | EventKind::Unfix | EventKind::Alloc)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One recorded buffer event.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct TraceEvent {
    /// What happened.
    pub kind: EventKind,
    /// The recording thread's number within the trace (0, 1, … in order of first event).
    pub thread: u32,
    /// Nanoseconds since the trace started.
    pub time_ns: u64,
    /// The page.
    pub page: PageId,
    /// The page holding the reference that led here, if known: the parent of a fix through
    /// `fix_child`, the swizzled parent of an evicted page.
    pub parent: Option<PageId>,
    /// The latch mode, for fix, unfix and alloc (and only for those).
    pub latch: Option<LatchMode>,
    /// Hit (true) or miss (false), for fix (and only for fix).
    pub hit: Option<bool>,
}

impl TraceEvent {
    /// A fix event. Page ids at or above 2^63 are clamped into range (they cannot occur in a
    /// pool); use the struct literal with [`PageId::new`] to check instead.
    #[must_use]
    pub fn fix(
        thread: u32,
        time_ns: u64,
        page: u64,
        parent: Option<u64>,
        latch: LatchMode,
        hit: bool,
    ) -> Self {
        TraceEvent {
            kind: EventKind::Fix,
            thread,
            time_ns,
            page: clamp_page(page),
            parent: parent.map(clamp_page),
            latch: Some(latch),
            hit: Some(hit),
        }
    }

    /// Checks that latch and hit are present exactly for the kinds that carry them.
    ///
    /// # Errors
    /// [`TraceError::InvalidEvent`] naming the field.
    pub fn validate(&self) -> Result<(), TraceError> {
        if self.latch.is_some() != self.kind.has_latch() {
            return Err(TraceError::InvalidEvent {
                reason: format!(
                    "a {} event must {}carry a latch mode",
                    self.kind,
                    neg(self.kind.has_latch())
                ),
            });
        }
        if self.hit.is_some() != (self.kind == EventKind::Fix) {
            return Err(TraceError::InvalidEvent {
                reason: format!(
                    "a {} event must {}carry hit/miss",
                    self.kind,
                    neg(self.kind == EventKind::Fix)
                ),
            });
        }
        Ok(())
    }
}

fn neg(yes: bool) -> &'static str {
    if yes {
        ""
    } else {
        "not "
    }
}

fn clamp_page(p: u64) -> PageId {
    PageId::new(p.min(PageId::LIMIT - 1)).expect("clamped below the limit")
}

/// The file header: how the recording pool was configured.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct TraceHeader {
    /// Page size in bytes (0 if not applicable, e.g. synthetic traces).
    pub page_size: u32,
    /// The recording pool's mode.
    pub mode: PoolMode,
    /// The recording pool's capacity in frames (0 if not applicable).
    pub frames: u32,
    /// Wall-clock time the trace started, nanoseconds since the Unix epoch (0 if unknown).
    pub start_unix_ns: u64,
}

impl TraceHeader {
    pub(super) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&TRACE_MAGIC);
        b[8..12].copy_from_slice(&TRACE_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.page_size.to_le_bytes());
        b[16] = mode_code(self.mode);
        b[20..24].copy_from_slice(&self.frames.to_le_bytes());
        b[24..32].copy_from_slice(&self.start_unix_ns.to_le_bytes());
        b
    }
}

fn mode_code(m: PoolMode) -> u8 {
    match m {
        PoolMode::Traditional => 0,
        PoolMode::Swizzling => 1,
        PoolMode::MainMemory => 2,
    }
}

/// What a finished trace file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceSummary {
    /// The trace file.
    pub path: PathBuf,
    /// Events written.
    pub events: u64,
    /// Bytes of the file.
    pub bytes: u64,
    /// Threads that recorded events.
    pub threads: u32,
}
