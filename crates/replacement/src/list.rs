//! An intrusive doubly linked list over frame indices, shared by the queue-based policies (FIFO,
//! LRU, SIEVE), and the resident/blocked bookkeeping they have in common.
//!
//! Links live in two arrays indexed by frame, so every operation is O(1) and allocates nothing
//! after construction. The list is not synchronized; the policies keep it under a lock.

/// No frame: the end of the list.
const NIL: usize = usize::MAX;

/// A list of distinct frames `0..capacity`, from the newest (head) to the oldest (tail).
pub(crate) struct FrameList {
    /// Toward the head: the next newer frame, or [`NIL`].
    newer: Box<[usize]>,
    /// Toward the tail: the next older frame, or [`NIL`].
    older: Box<[usize]>,
    linked: Box<[bool]>,
    head: usize,
    tail: usize,
    len: usize,
}

fn link(index: usize) -> Option<usize> {
    (index != NIL).then_some(index)
}

impl FrameList {
    pub(crate) fn new(capacity: usize) -> FrameList {
        FrameList {
            newer: vec![NIL; capacity].into_boxed_slice(),
            older: vec![NIL; capacity].into_boxed_slice(),
            linked: vec![false; capacity].into_boxed_slice(),
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    pub(crate) fn contains(&self, frame: usize) -> bool {
        self.linked[frame]
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The oldest frame.
    pub(crate) fn tail(&self) -> Option<usize> {
        link(self.tail)
    }

    /// The next newer frame after `frame` (which is in the list), or `None` at the head.
    pub(crate) fn newer(&self, frame: usize) -> Option<usize> {
        link(self.newer[frame])
    }

    /// Links `frame` (not in the list) as the newest.
    pub(crate) fn push_newest(&mut self, frame: usize) {
        debug_assert!(!self.linked[frame]);
        self.linked[frame] = true;
        self.newer[frame] = NIL;
        self.older[frame] = self.head;
        match link(self.head) {
            Some(head) => self.newer[head] = frame,
            None => self.tail = frame,
        }
        self.head = frame;
        self.len += 1;
    }

    /// Unlinks `frame`; false if it was not in the list.
    pub(crate) fn unlink(&mut self, frame: usize) -> bool {
        if !self.linked[frame] {
            return false;
        }
        let (newer, older) = (self.newer[frame], self.older[frame]);
        match link(newer) {
            Some(n) => self.older[n] = older,
            None => self.head = older,
        }
        match link(older) {
            Some(o) => self.newer[o] = newer,
            None => self.tail = newer,
        }
        self.linked[frame] = false;
        self.newer[frame] = NIL;
        self.older[frame] = NIL;
        self.len -= 1;
        true
    }

    /// Moves `frame` to the head if it is in the list; false otherwise.
    pub(crate) fn move_to_newest(&mut self, frame: usize) -> bool {
        if self.head == frame {
            return true;
        }
        let moved = self.unlink(frame);
        if moved {
            self.push_newest(frame);
        }
        moved
    }

    /// The frames from oldest to newest (for tests and debugging).
    #[cfg(test)]
    pub(crate) fn oldest_first(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.len);
        let mut at = self.tail;
        while let Some(frame) = link(at) {
            out.push(frame);
            at = self.newer[frame];
        }
        out
    }
}

/// The resident frames of a queue-based policy: unblocked ones in the policy's `queue`, frames
/// rejected as roots in `blocked` (R3). A frame is resident iff it is in exactly one of them.
pub(crate) struct Tracked {
    pub(crate) queue: FrameList,
    pub(crate) blocked: FrameList,
}

impl Tracked {
    pub(crate) fn new(capacity: usize) -> Tracked {
        Tracked { queue: FrameList::new(capacity), blocked: FrameList::new(capacity) }
    }

    /// `frame` holds a new page: newest in the queue, any old block gone.
    pub(crate) fn insert(&mut self, frame: usize) {
        self.forget(frame);
        self.queue.push_newest(frame);
    }

    /// `frame` holds no page any more.
    pub(crate) fn forget(&mut self, frame: usize) {
        let _ = self.queue.unlink(frame) || self.blocked.unlink(frame);
    }

    /// Moves `frame` from the queue to the blocked list; a frame not in the queue (free, or
    /// already blocked) is left alone, so a stale rejection cannot resurrect a free frame.
    pub(crate) fn block(&mut self, frame: usize) {
        if self.queue.unlink(frame) {
            self.blocked.push_newest(frame);
        }
    }

    /// The proposal when the queue is empty: the longest-blocked frame, rotated to the back of
    /// the blocked list so that repeated calls cycle through all of them; `None` if nothing is
    /// resident (R4).
    pub(crate) fn blocked_candidate(&mut self) -> Option<usize> {
        let frame = self.blocked.tail()?;
        self.blocked.move_to_newest(frame);
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_stay_consistent() {
        let mut list = FrameList::new(5);
        for f in [3, 0, 4, 1] {
            list.push_newest(f);
        }
        assert_eq!(list.oldest_first(), [3, 0, 4, 1]);
        assert!(list.move_to_newest(0));
        assert_eq!(list.oldest_first(), [3, 4, 1, 0]);
        assert!(list.unlink(3) && list.unlink(0) && !list.unlink(2));
        assert_eq!(list.oldest_first(), [4, 1]);
        assert_eq!((list.tail(), list.newer(4), list.newer(1)), (Some(4), Some(1), None));
        assert!(list.unlink(1) && list.unlink(4));
        assert!(list.is_empty() && list.tail().is_none() && !list.move_to_newest(4));
    }
}
