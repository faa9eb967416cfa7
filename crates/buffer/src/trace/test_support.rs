//! Helpers shared by the trace's unit tests.

use super::{EventKind, TraceError, TraceEvent, TraceHeader, TraceReader, TraceSummary, TraceWriter};
use crate::config::PoolMode;
use proptest::prelude::*;
use std::path::Path;
use swizzledb_sync::{LatchMode, PageId};

pub(super) fn header() -> TraceHeader {
    TraceHeader { page_size: 8192, mode: PoolMode::Traditional, frames: 64, start_unix_ns: 12345 }
}

pub(super) fn event_strategy() -> impl Strategy<Value = TraceEvent> {
    (
        0usize..6,
        0u32..4,
        any::<u64>(),
        0u64..PageId::LIMIT,
        proptest::option::of(0u64..PageId::LIMIT),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(k, thread, time_ns, page, parent, x, hit)| {
            let kind = EventKind::ALL[k];
            TraceEvent {
                kind,
                thread,
                time_ns,
                page: PageId::new(page).unwrap(),
                parent: parent.map(|p| PageId::new(p).unwrap()),
                latch: kind.has_latch().then_some(if x { LatchMode::Exclusive } else { LatchMode::Shared }),
                hit: (kind == EventKind::Fix).then_some(hit),
            }
        })
}

pub(super) fn write_all(path: &Path, events: &[TraceEvent]) -> TraceSummary {
    let mut w = TraceWriter::create(path, &header()).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    w.finish().unwrap()
}

pub(super) fn read_all(path: &Path) -> Result<Vec<TraceEvent>, TraceError> {
    TraceReader::open(path)?.collect()
}

/// The reader yields each thread's events in the order written (threads interleave by
/// block), so compare per thread.
pub(super) fn per_thread(events: &[TraceEvent]) -> std::collections::BTreeMap<u32, Vec<TraceEvent>> {
    let mut m = std::collections::BTreeMap::<u32, Vec<TraceEvent>>::new();
    for e in events {
        m.entry(e.thread).or_default().push(*e);
    }
    m
}
