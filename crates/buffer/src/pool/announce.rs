//! Changes logged before they are made, announced to checkpoints (README B37): a free or a
//! catalog change counts in its thread's slot from before its record until it is made, and a
//! checkpoint waits until every slot has once read zero.

use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::SeqCst;

/// Slots of [`Announcements`], by thread number (threads beyond share them: each slot counts).
const SLOTS: usize = 64;

/// Per slot, how many changes its threads announced and have not yet made.
pub(super) struct Announcements {
    slots: Box<[Padded]>,
}

/// A slot on lines of its own: the threads of neighbouring slots do not pass its line around.
#[repr(align(128))]
#[derive(Default)]
struct Padded(AtomicU32);

impl Default for Announcements {
    fn default() -> Announcements {
        Announcements { slots: (0..SLOTS).map(|_| Padded::default()).collect() }
    }
}

impl Announcements {
    /// Counts a change in the calling thread's slot until the guard drops.
    pub(super) fn announce(&self) -> Announced<'_> {
        let slot = &self.slots[swizzledb_sync::thread::thread_number().unwrap_or(0) % SLOTS].0;
        slot.fetch_add(1, SeqCst);
        Announced { slot }
    }

    /// Waits until each slot has once read zero: every change counted before the call is made.
    pub(super) fn wait(&self) {
        for slot in self.slots.iter() {
            let mut spins = 0u32;
            while slot.0.load(SeqCst) != 0 {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::sleep(std::time::Duration::from_micros(20));
                }
            }
        }
    }
}

/// A change announced to checkpoints until dropped (`BufferPool::announce_change`).
#[must_use]
pub struct Announced<'a> {
    slot: &'a AtomicU32,
}

impl Drop for Announced<'_> {
    fn drop(&mut self) {
        self.slot.fetch_sub(1, SeqCst);
    }
}

impl std::fmt::Debug for Announced<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Announced").finish_non_exhaustive()
    }
}
