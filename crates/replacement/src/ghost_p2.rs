//! Shared helpers of ARC, CAR and S3-FIFO: the per-frame bookkeeping of policies that keep their
//! resident frames in two lists, and ARC/CAR's history (ghost lists B1, B2 and the target p).

use crate::ghost::Ghosts;
use crate::list::FrameList;
use crate::PageId;

/// Where a frame is, for policies with two lists of resident frames (ARC's T1/T2, CAR's two
/// clocks, S3-FIFO's small and main queues) and a list of frames blocked as roots (R3).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Place {
    /// No page.
    Free,
    /// Resident in the first list (ARC/CAR T1, S3-FIFO small queue).
    First,
    /// Resident in the second list (ARC/CAR T2, S3-FIFO main queue).
    Second,
    /// Resident, rejected as a root; `true` if it came from the second list. It is in the blocked
    /// list and in neither of the other two.
    Blocked { from_second: bool },
}

/// The resident frames of a two-list policy: `first` and `second` (each a [`FrameList`], newest
/// at the head), frames blocked as roots in `blocked` (R3), and each frame's [`Place`] and page. A
/// resident frame is in exactly one of the three lists, as its place says.
pub(crate) struct Lists {
    pub(crate) first: FrameList,
    pub(crate) second: FrameList,
    pub(crate) blocked: FrameList,
    place: Box<[Place]>,
    pages: Box<[Option<PageId>]>,
}

impl Lists {
    pub(crate) fn new(capacity: usize) -> Lists {
        Lists {
            first: FrameList::new(capacity),
            second: FrameList::new(capacity),
            blocked: FrameList::new(capacity),
            place: vec![Place::Free; capacity].into_boxed_slice(),
            pages: vec![None; capacity].into_boxed_slice(),
        }
    }

    pub(crate) fn place(&self, frame: usize) -> Place {
        self.place[frame]
    }

    /// The first (`false`) or second (`true`) list.
    pub(crate) fn list(&self, second: bool) -> &FrameList {
        if second {
            &self.second
        } else {
            &self.first
        }
    }

    /// Frames in the two lists (blocked frames excluded).
    pub(crate) fn unblocked(&self) -> usize {
        self.first.len() + self.second.len()
    }

    /// `frame` now holds `page`, newest in the first or second list. A frame the policy still
    /// tracks (a broken R1) is forgotten first.
    pub(crate) fn insert(&mut self, frame: usize, page: PageId, second: bool) {
        self.take(frame);
        if second {
            self.second.push_newest(frame);
            self.place[frame] = Place::Second;
        } else {
            self.first.push_newest(frame);
            self.place[frame] = Place::First;
        }
        self.pages[frame] = Some(page);
    }

    /// Forgets `frame`: returns where it was and its page (`Place::Free` and `None` for a free
    /// frame).
    pub(crate) fn take(&mut self, frame: usize) -> (Place, Option<PageId>) {
        let place = std::mem::replace(&mut self.place[frame], Place::Free);
        match place {
            Place::Free => {}
            Place::First => {
                self.first.unlink(frame);
            }
            Place::Second => {
                self.second.unlink(frame);
            }
            Place::Blocked { .. } => {
                self.blocked.unlink(frame);
            }
        }
        (place, self.pages[frame].take())
    }

    /// Moves an unblocked `frame` to the newest end of the second list (from either list).
    pub(crate) fn promote(&mut self, frame: usize) {
        match self.place[frame] {
            Place::First => {
                self.first.unlink(frame);
                self.second.push_newest(frame);
                self.place[frame] = Place::Second;
            }
            Place::Second => {
                self.second.move_to_newest(frame);
            }
            Place::Free | Place::Blocked { .. } => {}
        }
    }

    /// Moves an unblocked `frame` to the newest end of its own list.
    pub(crate) fn rotate(&mut self, frame: usize) {
        match self.place[frame] {
            Place::First => {
                self.first.move_to_newest(frame);
            }
            Place::Second => {
                self.second.move_to_newest(frame);
            }
            Place::Free | Place::Blocked { .. } => {}
        }
    }

    /// Moves an unblocked `frame` to the blocked list; a free or blocked frame is left alone, so
    /// a stale rejection cannot resurrect a free frame.
    pub(crate) fn block(&mut self, frame: usize) {
        let from_second = match self.place[frame] {
            Place::First => false,
            Place::Second => true,
            Place::Free | Place::Blocked { .. } => return,
        };
        self.list_mut(from_second).unlink(frame);
        self.blocked.push_newest(frame);
        self.place[frame] = Place::Blocked { from_second };
    }

    /// The proposal when both lists are empty: the longest-blocked frame, rotated to the back so
    /// that repeated calls cycle through all of them; `None` if nothing is resident (R4).
    pub(crate) fn blocked_candidate(&mut self) -> Option<usize> {
        self.blocked.rotate_oldest()
    }

    fn list_mut(&mut self, second: bool) -> &mut FrameList {
        if second {
            &mut self.second
        } else {
            &mut self.first
        }
    }

    /// Checks that places, lists and pages agree (for the proptests).
    #[cfg(test)]
    pub(crate) fn check(&self) {
        let mut counts = [0usize; 3];
        for (frame, place) in self.place.iter().enumerate() {
            let (first, second, blocked) =
                (self.first.contains(frame), self.second.contains(frame), self.blocked.contains(frame));
            let expected = match place {
                Place::Free => (false, false, false),
                Place::First => (true, false, false),
                Place::Second => (false, true, false),
                Place::Blocked { .. } => (false, false, true),
            };
            assert_eq!((first, second, blocked), expected, "frame {frame} at {place:?}");
            assert_eq!(self.pages[frame].is_some(), *place != Place::Free, "frame {frame}");
            for (count, member) in counts.iter_mut().zip([first, second, blocked]) {
                *count += usize::from(member);
            }
        }
        assert_eq!(counts, [self.first.len(), self.second.len(), self.blocked.len()]);
    }

    /// The page `frame` holds (for the tests).
    #[cfg(test)]
    pub(crate) fn page(&self, frame: usize) -> Option<PageId> {
        self.pages[frame]
    }

    /// Whether `page` is resident (for the proptests: a resident page has no ghost).
    #[cfg(test)]
    pub(crate) fn holds(&self, page: PageId) -> bool {
        self.pages.contains(&Some(page))
    }
}

/// The history of ARC and CAR: the ghost lists B1 and B2 and the adaptive target `p` for the size
/// of T1 (README "ARC", steps 2 and 5). `c` is the capacity.
pub(crate) struct History {
    pub(crate) b1: Ghosts,
    pub(crate) b2: Ghosts,
    pub(crate) p: usize,
    pub(crate) c: usize,
}

impl History {
    pub(crate) fn new(capacity: usize) -> History {
        History {
            // One more than the bounds `remember` restores, so that the directories never drop
            // an entry on their own.
            b1: Ghosts::preallocated(capacity + 1),
            b2: Ghosts::preallocated(2 * capacity + 1),
            p: 0,
            c: capacity,
        }
    }

    /// A miss loads `page` while T1 and T2 hold `t1` and `t2` frames. Returns true if the page
    /// goes to T2 (a ghost hit, which adapts `p` and removes the ghost), false if it goes to T1;
    /// for a page with no ghost, first drops the oldest ghost of B1 if `|T1| + |B1| >= c`, else
    /// of B2 if the directory holds `2c` entries, so that the new page fits both bounds.
    pub(crate) fn admit(&mut self, page: PageId, t1: usize, t2: usize) -> bool {
        let (b1, b2) = (self.b1.len(), self.b2.len());
        if self.b1.remove(page).is_some() {
            self.p = (self.p + (b2 / b1).max(1)).min(self.c);
            true
        } else if self.b2.remove(page).is_some() {
            self.p = self.p.saturating_sub((b1 / b2).max(1));
            true
        } else {
            if t1 + b1 >= self.c {
                self.b1.pop_oldest();
            } else if t1 + t2 + b1 + b2 >= 2 * self.c {
                self.b2.pop_oldest();
            }
            false
        }
    }

    /// `page` was evicted from T2 (`second`) or T1: it becomes the newest ghost of B2 or B1. Then
    /// the bounds are restored (they can only break when a blocked frame is evicted, as its list
    /// no longer counted it).
    pub(crate) fn remember(&mut self, page: PageId, second: bool, t1: usize, t2: usize) {
        if second {
            self.b2.insert(page, ());
        } else {
            self.b1.insert(page, ());
        }
        while t1 + self.b1.len() > self.c {
            self.b1.pop_oldest();
        }
        while t1 + t2 + self.b1.len() + self.b2.len() > 2 * self.c {
            if self.b2.pop_oldest().is_none() {
                self.b1.pop_oldest();
            }
        }
    }

    /// The ARC/CAR invariants over lists of `t1` and `t2` frames (for the proptests).
    #[cfg(test)]
    pub(crate) fn check(&self, t1: usize, t2: usize) {
        let (b1, b2, c) = (self.b1.len(), self.b2.len(), self.c);
        assert!(t1 + t2 <= c, "|T1| + |T2| = {t1} + {t2} > c = {c}");
        assert!(t1 + b1 <= c, "|T1| + |B1| = {t1} + {b1} > c = {c}");
        assert!(t1 + t2 + b1 + b2 <= 2 * c, "directory {t1} + {t2} + {b1} + {b2} > 2c, c = {c}");
        assert!(self.p <= c, "p = {} > c = {c}", self.p);
        assert!(self.b1.allocated() <= c + 1 && self.b2.allocated() <= 2 * c + 1, "ghost memory");
    }
}
