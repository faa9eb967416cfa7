//! The consistency check after a run (README E9): page table, frames, free lists and every
//! policy's resident set agree.

use std::collections::BTreeSet;

use swizzledb_replacement::{Evictor, FrameId, Verdict};

use super::run::Emulator;

/// A disagreement between the emulator's structures found by [`Emulator::check`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Inconsistency {
    /// A frame's latch is still held or pinned after every thread finished.
    #[error("frame {frame} is still latched (word {word:#x}) after the run; a pin or latch was leaked")]
    Latched {
        /// The frame.
        frame: u32,
        /// Its latch word.
        word: u32,
    },
    /// The page table and the frames disagree.
    #[error("page table and frames disagree: {0}")]
    Mapping(String),
    /// A frame is both resident and free, free twice, or neither.
    #[error("free lists and resident frames do not partition the frames: {0}")]
    FreeLists(String),
    /// A policy's resident set differs from the emulator's.
    #[error("partition {partition}: the policy's resident set differs from the buffer's: {detail}")]
    Policy {
        /// The partition.
        partition: usize,
        /// What differs.
        detail: String,
    },
}

/// An evictor that evicts every proposal and records it.
struct Drain {
    proposed: Vec<u32>,
}

impl Evictor for Drain {
    fn wants_more(&mut self) -> bool {
        true
    }

    fn try_evict(&mut self, frame: FrameId) -> Verdict {
        self.proposed.push(frame.0);
        Verdict::Evicted
    }
}

impl Emulator {
    /// Checks, after a run (all threads joined, their queues flushed), that:
    /// - no frame is latched or pinned;
    /// - the page table and the frames' pages agree both ways;
    /// - the free lists and the resident frames together hold every frame, each exactly once;
    /// - each partition's policy holds exactly the partition's resident frames: it is drained
    ///   with an evictor that evicts every proposal, which must propose each resident frame once
    ///   and nothing else, after which `next_candidate` returns `None` (R4).
    ///
    /// The drain empties the policies, so the emulator is consumed.
    ///
    /// # Errors
    /// The first [`Inconsistency`] found.
    pub fn check(self) -> Result<(), Inconsistency> {
        let buffer = &self.buffer;
        for frame in 0..buffer.frames() {
            let word = buffer.latch_word(frame);
            if word != 0 {
                return Err(Inconsistency::Latched { frame, word });
            }
            if let Some(page) = buffer.page_in(frame) {
                if buffer.frame_of(page) != Some(frame) {
                    return Err(Inconsistency::Mapping(format!(
                        "frame {frame} holds page {page}, whose entry says {:?}",
                        buffer.frame_of(page)
                    )));
                }
            }
        }
        let mut mapped = 0u64;
        for page in 0..buffer.data_pages() {
            if let Some(frame) = buffer.frame_of(page) {
                mapped += 1;
                if buffer.page_in(frame) != Some(page) {
                    return Err(Inconsistency::Mapping(format!(
                        "page {page} maps to frame {frame}, which holds {:?}",
                        buffer.page_in(frame)
                    )));
                }
            }
        }
        let mut resident_total = 0u64;
        for (k, part) in self.partitions.iter().enumerate() {
            let resident: BTreeSet<u32> =
                (0..part.capacity).filter(|&local| buffer.page_in(part.base + local).is_some()).collect();
            resident_total += resident.len() as u64;
            let mut free = BTreeSet::new();
            for list in &*part.lists {
                for &local in list.lock().iter() {
                    if local >= part.capacity {
                        return Err(Inconsistency::FreeLists(format!(
                            "partition {k} lists frame {local} of its {}",
                            part.capacity
                        )));
                    }
                    if !free.insert(local) {
                        return Err(Inconsistency::FreeLists(format!(
                            "partition {k}: frame {local} is free twice"
                        )));
                    }
                    if resident.contains(&local) {
                        return Err(Inconsistency::FreeLists(format!(
                            "partition {k}: frame {local} is free and holds a page"
                        )));
                    }
                }
            }
            if resident.len() + free.len() != part.capacity as usize {
                return Err(Inconsistency::FreeLists(format!(
                    "partition {k}: {} resident + {} free frames of {}; the others were lost",
                    resident.len(),
                    free.len(),
                    part.capacity
                )));
            }
            let policy = part.repl.policy();
            part.repl.flush();
            let mut drain = Drain { proposed: Vec::new() };
            policy.evict_batch(&part.hooks, &mut drain, 2 * part.capacity as usize + 1);
            let proposed: BTreeSet<u32> = drain.proposed.iter().copied().collect();
            let detail = if proposed.len() != drain.proposed.len() {
                Some("a frame was proposed twice".to_string())
            } else if proposed != resident {
                let extra: Vec<_> = proposed.difference(&resident).take(5).collect();
                let missing: Vec<_> = resident.difference(&proposed).take(5).collect();
                Some(format!(
                    "{} tracked, {} resident; tracked but not resident {extra:?}, resident but not tracked {missing:?}",
                    proposed.len(),
                    resident.len()
                ))
            } else {
                policy
                    .next_candidate(&part.hooks)
                    .map(|frame| format!("after the drain it still proposes {frame:?} (R4)"))
            };
            if let Some(detail) = detail {
                return Err(Inconsistency::Policy { partition: k, detail });
            }
        }
        if mapped != resident_total {
            return Err(Inconsistency::Mapping(format!(
                "{mapped} pages mapped but {resident_total} frames hold pages"
            )));
        }
        Ok(())
    }
}
