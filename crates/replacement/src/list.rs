//! Intrusive doubly linked lists over frame indices, shared by every policy that keeps its
//! frames in lists, and the resident/blocked bookkeeping of the queue-based policies.
//!
//! - [`Queues`]: several lists over indices `0..capacity` sharing one pair of link arrays, each
//!   index in at most one list. MRU, LRU-K, 2Q and MQ keep one list per paper queue (A1in and
//!   Am, Q0..Q7, ...) plus a last list of blocked frames (R3).
//! - [`SearchQueues`]: a [`Queues`] with a search cursor and a blocked list (2Q, MQ).
//! - [`FrameList`]: a single such list. FIFO, LRU and SIEVE keep their queue in one, ARC, CAR and
//!   S3-FIFO their two lists, LIRS its stack S and queue Q, CLOCK-Pro its clock. LIRS and
//!   CLOCK-Pro index it by *node*: frames `0..capacity`, then ghost handles (`crate::ghost`).
//! - [`Tracked`]: a queue plus a list of frames blocked as roots (FIFO, LRU, SIEVE).
//! - [`TwoLists`]: two lists plus a list of blocked frames, with each frame's [`Place`] and page
//!   (ARC's T1/T2, CAR's two clocks, S3-FIFO's small and main queues).
//!
//! Every operation is O(1) and allocates nothing after construction. The lists are not
//! synchronized; the policies keep them under a lock.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use crate::lazy::{FrameVec, LazyCells};
use crate::policy::Rejection;

use swizzledb_sync::PageId;

/// No index: the end of a list.
const NIL: usize = usize::MAX;
/// The most indices a [`Queues`] (and so a [`FrameList`]) can cover: its links are `u32`s.
pub(crate) const MAX_NODES: usize = u32::MAX as usize;
/// The list number of an index in no list.
const NO_QUEUE: u8 = u8::MAX;

fn link(index: usize) -> Option<usize> {
    (index != NIL).then_some(index)
}

/// A node's neighbours in its list, as `u32` indices; [`Links::END`] for none.
#[derive(Copy, Clone)]
struct Links {
    newer: u32,
    older: u32,
}

impl Links {
    /// No neighbour.
    const END: u32 = u32::MAX;
    const UNLINKED: Links = Links { newer: Links::END, older: Links::END };

    fn widen(link: u32) -> usize {
        if link == Links::END {
            NIL
        } else {
            usize::try_from(link).expect("a u32 fits usize")
        }
    }

    /// [`NIL`] becomes [`Links::END`]; any other index is below it (checked in `Queues::new`).
    fn narrow(index: usize) -> u32 {
        u32::try_from(index).unwrap_or(Links::END)
    }
}

/// `n` lists over indices `0..capacity`; each index is in at most one list. Within a list,
/// indices run from the oldest (tail) to the newest (head).
pub(crate) struct Queues {
    /// Each index's neighbours, both in one 8-byte word, so that unlinking reads one cache line
    /// per node.
    links: FrameVec<Links>,
    /// The list holding each frame, or [`NO_QUEUE`].
    queue: FrameVec<u8>,
    /// The same bytes, for readers without the owner's lock: kept only once a [`ListBytes`]
    /// handle was asked for (2Q), since they cost a store and a chunk look-up per change.
    shared: Option<Arc<LazyCells<AtomicU8>>>,
    heads: Box<[usize]>,
    tails: Box<[usize]>,
    lens: Box<[usize]>,
}

impl Queues {
    /// `n` empty lists (`n < 255`) over frames `0..capacity`.
    ///
    /// # Panics
    /// If `n` is 255 or more, or `capacity` exceeds `u32::MAX` (the links are `u32`s).
    pub(crate) fn new(capacity: usize, n: usize) -> Queues {
        Queues::with_split(capacity, capacity, n)
    }

    /// As [`Queues::new`], with the indices from `split` on (ghost nodes above the frames)
    /// kept apart (`FrameVec::with_split`).
    fn with_split(split: usize, capacity: usize, n: usize) -> Queues {
        assert!(n < usize::from(NO_QUEUE), "too many queues");
        assert!(capacity <= MAX_NODES, "{capacity} list nodes exceed the u32 link range");
        Queues {
            links: FrameVec::with_split(split, capacity, Links::UNLINKED),
            queue: FrameVec::with_split(split, capacity, NO_QUEUE),
            shared: None,
            heads: vec![NIL; n].into_boxed_slice(),
            tails: vec![NIL; n].into_boxed_slice(),
            lens: vec![0; n].into_boxed_slice(),
        }
    }

    fn newer_of(&self, node: usize) -> usize {
        Links::widen(self.links[node].newer)
    }

    fn older_of(&self, node: usize) -> usize {
        Links::widen(self.links[node].older)
    }

    fn set_newer(&mut self, node: usize, newer: usize) {
        self.links[node].newer = Links::narrow(newer);
    }

    fn set_older(&mut self, node: usize, older: usize) {
        self.links[node].older = Links::narrow(older);
    }

    /// The list holding `frame`, if any.
    pub(crate) fn queue_of(&self, frame: usize) -> Option<usize> {
        let q = self.queue_byte(frame);
        (q != NO_QUEUE).then_some(usize::from(q))
    }

    fn queue_byte(&self, frame: usize) -> u8 {
        self.queue[frame]
    }

    fn set_queue_byte(&mut self, frame: usize, q: u8) {
        self.queue[frame] = q;
        if let Some(shared) = &self.shared {
            shared.cell(frame).store(q, Ordering::Relaxed);
        }
    }

    /// A handle on each index's list number, for readers that do not hold the owner's lock.
    pub(crate) fn list_bytes(&mut self) -> ListBytes {
        let queue = &self.queue;
        let shared = self.shared.get_or_insert_with(|| {
            let shared = LazyCells::new(queue.len(), || AtomicU8::new(NO_QUEUE));
            for (index, &q) in queue.written() {
                if q != NO_QUEUE {
                    shared.cell(index).store(q, Ordering::Relaxed);
                }
            }
            Arc::new(shared)
        });
        ListBytes(Arc::clone(shared))
    }

    pub(crate) fn len(&self, q: usize) -> usize {
        self.lens[q]
    }

    /// The oldest frame of list `q`.
    pub(crate) fn oldest(&self, q: usize) -> Option<usize> {
        link(self.tails[q])
    }

    /// The newest frame of list `q`.
    pub(crate) fn newest(&self, q: usize) -> Option<usize> {
        link(self.heads[q])
    }

    /// The next newer frame after `frame` in its list, or `None` at the head.
    pub(crate) fn newer(&self, frame: usize) -> Option<usize> {
        link(self.newer_of(frame))
    }

    /// The next older frame after `frame` in its list, or `None` at the tail.
    pub(crate) fn older(&self, frame: usize) -> Option<usize> {
        link(self.older_of(frame))
    }

    /// The oldest frame of list `q` once `frame` has left it (wherever `frame` is).
    pub(crate) fn oldest_without(&self, q: usize, frame: usize) -> Option<usize> {
        match self.oldest(q) {
            Some(f) if f == frame => self.newer(f),
            oldest => oldest,
        }
    }

    /// Starts loading `frame`'s links into the cache (a hint, sync README H1).
    pub(crate) fn prefetch(&self, frame: usize) {
        if let Some(links) = self.links.get(frame) {
            swizzledb_sync::hint::prefetch(links);
        }
    }

    /// Links `frame` as the newest of list `q`, unlinking it first from wherever it was. A frame
    /// already in `q` is moved within it (the hit of every LRU-like list: fewer stores than an
    /// unlink and a push).
    pub(crate) fn push_newest(&mut self, q: usize, frame: usize) {
        if self.queue_of(frame) == Some(q) {
            self.move_within(q, frame);
            return;
        }
        self.unlink(frame);
        self.set_queue_byte(frame, u8::try_from(q).expect("queue number below NO_QUEUE"));
        self.set_newer(frame, NIL);
        self.set_older(frame, self.heads[q]);
        match link(self.heads[q]) {
            Some(head) => self.set_newer(head, frame),
            None => self.tails[q] = frame,
        }
        self.heads[q] = frame;
        self.lens[q] += 1;
    }

    /// Moves `frame`, which is in list `q`, to its newest end.
    fn move_within(&mut self, q: usize, frame: usize) {
        let head = self.heads[q];
        if head == frame {
            return;
        }
        // Not the head, so it has a newer neighbour.
        let (newer, older) = (self.newer_of(frame), self.older_of(frame));
        self.set_older(newer, older);
        match link(older) {
            Some(o) => self.set_newer(o, newer),
            None => self.tails[q] = newer,
        }
        self.set_newer(frame, NIL);
        self.set_older(frame, head);
        self.set_newer(head, frame);
        self.heads[q] = frame;
    }

    /// Unlinks `frame`; returns the list it was in.
    pub(crate) fn unlink(&mut self, frame: usize) -> Option<usize> {
        let q = self.queue_of(frame)?;
        let (newer, older) = (self.newer_of(frame), self.older_of(frame));
        match link(newer) {
            Some(n) => self.set_older(n, older),
            None => self.heads[q] = older,
        }
        match link(older) {
            Some(o) => self.set_newer(o, newer),
            None => self.tails[q] = newer,
        }
        self.set_queue_byte(frame, NO_QUEUE);
        self.set_newer(frame, NIL);
        self.set_older(frame, NIL);
        self.lens[q] -= 1;
        Some(q)
    }

    /// Links `node` (in no list) just older than `anchor`, in `anchor`'s list.
    pub(crate) fn insert_older_than(&mut self, node: usize, anchor: usize) {
        debug_assert!(self.queue_of(node).is_none(), "node {node} is already linked");
        let q = self.queue_of(anchor).expect("the anchor is linked");
        let older = self.older_of(anchor);
        self.set_queue_byte(node, self.queue_byte(anchor));
        self.set_older(node, older);
        self.set_newer(node, anchor);
        self.set_older(anchor, node);
        match link(older) {
            Some(o) => self.set_newer(o, node),
            None => self.tails[q] = node,
        }
        self.lens[q] += 1;
    }

    /// Puts `new` (in no list) in the place of `old` (linked), which ends up in no list.
    pub(crate) fn replace(&mut self, old: usize, new: usize) {
        debug_assert!(self.queue_of(new).is_none(), "node {new} is already linked");
        let q = self.queue_of(old).expect("the replaced node is linked");
        let (newer, older) = (self.newer_of(old), self.older_of(old));
        self.set_queue_byte(new, self.queue_byte(old));
        self.set_newer(new, newer);
        self.set_older(new, older);
        match link(newer) {
            Some(n) => self.set_older(n, new),
            None => self.heads[q] = new,
        }
        match link(older) {
            Some(o) => self.set_newer(o, new),
            None => self.tails[q] = new,
        }
        self.set_queue_byte(old, NO_QUEUE);
        self.set_newer(old, NIL);
        self.set_older(old, NIL);
    }

    /// The frame after `frame` in a cyclic walk that visits the lists of `order` in turn, each
    /// from oldest to newest. `frame` must be in one of them. Returns `frame` itself when it is
    /// the only frame in those lists.
    pub(crate) fn cyclic_successor(&self, order: &[usize], frame: usize) -> usize {
        if let Some(next) = self.newer(frame) {
            return next;
        }
        let q = self.queue_of(frame).expect("the frame is linked");
        let at = order.iter().position(|&o| o == q).expect("the frame's list is in the order");
        (1..=order.len())
            .find_map(|step| self.oldest(order[(at + step) % order.len()]))
            .expect("the frame's own list is not empty")
    }

    /// The proposal when only blocked frames are resident: the oldest of list `blocked`, rotated
    /// to its newest end so that repeated calls cycle through all of them (R3, R4).
    pub(crate) fn rotate_oldest(&mut self, blocked: usize) -> Option<usize> {
        let frame = self.oldest(blocked)?;
        self.push_newest(blocked, frame);
        Some(frame)
    }

    /// The frames of list `q` from oldest to newest (tests and debugging).
    #[cfg(test)]
    pub(crate) fn oldest_first(&self, q: usize) -> Vec<usize> {
        std::iter::successors(self.oldest(q), |&f| self.newer(f)).collect()
    }
}

/// The list number of each index of a [`Queues`], readable without the owner's lock: a reader
/// sees the number stored by the last change of the index's list that reached it, which the
/// owner makes under its lock (2Q's hits ask whether their frame is in `Am` this way, R5).
pub(crate) struct ListBytes(Arc<LazyCells<AtomicU8>>);

impl ListBytes {
    /// The list holding `index` as last stored, or `None` if it is in none (or out of range).
    pub(crate) fn list_of(&self, index: usize) -> Option<usize> {
        let q = self.0.get(index)?.load(Ordering::Relaxed);
        (q != NO_QUEUE).then_some(usize::from(q))
    }
}

/// Lists `0..n` of a [`Queues`] searched for victims, list `n` of blocked frames (R3), and the
/// search's *cursor* (2Q, MQ; README "Shared building blocks"). A rejection for `InUse` or
/// `SwizzledChildren` moves the cursor to the rejected frame's successor in victim order: toward
/// the newest end of its list, then the next list from its oldest end, cyclically. Until the next
/// eviction, the cursor's frame is proposed before the policy's own choice.
pub(crate) struct SearchQueues {
    pub(crate) queues: Queues,
    /// The searched lists, `0..n`, in victim order.
    order: Box<[usize]>,
    /// The frame to propose next during a search (a frame of a searched list).
    pub(crate) cursor: Option<usize>,
}

impl SearchQueues {
    /// `n` searched lists and a list of blocked frames over frames `0..capacity`.
    pub(crate) fn new(capacity: usize, n: usize) -> SearchQueues {
        SearchQueues { queues: Queues::new(capacity, n + 1), order: (0..n).collect(), cursor: None }
    }

    /// The list of blocked frames.
    pub(crate) fn blocked(&self) -> usize {
        self.order.len()
    }

    /// Whether `frame` is in a searched list.
    pub(crate) fn searchable(&self, frame: usize) -> bool {
        self.queues.queue_of(frame).is_some_and(|q| q < self.order.len())
    }

    /// The frame after `frame` in the search; `None` if `frame` is the only one.
    fn successor(&self, frame: usize) -> Option<usize> {
        let next = self.queues.cyclic_successor(&self.order, frame);
        (next != frame).then_some(next)
    }

    /// Keeps the cursor valid before `frame` leaves its place.
    pub(crate) fn step_off(&mut self, frame: usize) {
        if self.cursor == Some(frame) && self.searchable(frame) {
            self.cursor = self.successor(frame);
        }
    }

    /// Moves `frame` to the newest end of list `q`, keeping the cursor valid.
    pub(crate) fn relink(&mut self, q: usize, frame: usize) {
        self.step_off(frame);
        self.queues.push_newest(q, frame);
    }

    /// Unlinks `frame`, keeping the cursor valid; returns the list it was in.
    pub(crate) fn unlink(&mut self, frame: usize) -> Option<usize> {
        self.step_off(frame);
        self.queues.unlink(frame)
    }

    /// A rejection for `InUse` or `SwizzledChildren`: the frame keeps its place (the fix that
    /// holds it was reported as a hit already) and the search moves on.
    pub(crate) fn pass(&mut self, frame: usize) {
        if self.searchable(frame) {
            self.cursor = self.successor(frame);
        }
    }

    /// A rejection for `InUse` or `SwizzledChildren` in a policy that requeues instead of moving
    /// the cursor (2Q, hot/cold): a searched frame moves to its own list's newest end, as if just
    /// loaded or used; a free or blocked frame is left alone.
    pub(crate) fn requeue(&mut self, frame: usize) {
        if let Some(q) = self.queues.queue_of(frame).filter(|&q| q < self.order.len()) {
            self.relink(q, frame);
        }
    }

    /// A `Root` rejection: a searched frame moves to the blocked list; a free or blocked frame is
    /// left alone, so a stale rejection cannot resurrect a free frame.
    pub(crate) fn block(&mut self, frame: usize) {
        if self.searchable(frame) {
            self.relink(self.blocked(), frame);
        }
    }

    /// The proposal: the cursor's frame during a search, else `first_choice`, else a blocked
    /// frame (rotating), else `None` (R4).
    pub(crate) fn propose(&mut self, first_choice: impl FnOnce(&Queues) -> Option<usize>) -> Option<usize> {
        let unblocked = self.cursor.filter(|&f| self.searchable(f)).or_else(|| first_choice(&self.queues));
        unblocked.or_else(|| self.queues.rotate_oldest(self.blocked()))
    }
}

/// One list of distinct indices `0..capacity`, from the oldest to the newest: a [`Queues`] with
/// a single list.
pub(crate) struct FrameList(Queues);

impl FrameList {
    pub(crate) fn new(capacity: usize) -> FrameList {
        FrameList(Queues::new(capacity, 1))
    }

    /// A list over `nodes` indices: frames `0..frames`, then ghost nodes (LIRS, CLOCK-Pro).
    pub(crate) fn over_nodes(frames: usize, nodes: usize) -> FrameList {
        FrameList(Queues::with_split(frames, nodes, 1))
    }

    pub(crate) fn contains(&self, frame: usize) -> bool {
        self.0.queue_of(frame).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len(0)
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The oldest frame.
    pub(crate) fn oldest(&self) -> Option<usize> {
        self.0.oldest(0)
    }

    /// The next newer frame after `frame` (which is in the list), or `None` at the newest.
    pub(crate) fn newer(&self, frame: usize) -> Option<usize> {
        self.0.newer(frame)
    }

    /// Starts loading `frame`'s links into the cache (a hint, sync README H1).
    pub(crate) fn prefetch(&self, frame: usize) {
        self.0.prefetch(frame);
    }

    /// The oldest frame once `frame` has left the list (wherever `frame` is).
    pub(crate) fn oldest_without(&self, frame: usize) -> Option<usize> {
        self.0.oldest_without(0, frame)
    }

    /// The next newer frame after `frame` (which is in the list), wrapping from the newest to
    /// the oldest: the list read as a circle, for clock hands.
    pub(crate) fn next_cyclic(&self, frame: usize) -> usize {
        self.newer(frame).or_else(|| self.oldest()).expect("the frame is in the list")
    }

    /// Links `frame` (not in the list) as the newest.
    pub(crate) fn push_newest(&mut self, frame: usize) {
        debug_assert!(!self.contains(frame), "frame {frame} is already linked");
        self.0.push_newest(0, frame);
    }

    /// Makes `frame` the newest, linking it if it was not in the list.
    pub(crate) fn relink_newest(&mut self, frame: usize) {
        if self.0.newest(0) != Some(frame) {
            self.0.push_newest(0, frame);
        }
    }

    /// Links `frame` (not in the list) just older than `anchor` (in the list).
    pub(crate) fn insert_older_than(&mut self, frame: usize, anchor: usize) {
        self.0.insert_older_than(frame, anchor);
    }

    /// Puts `new` (not in the list) in the place of `old` (in the list), which is unlinked.
    pub(crate) fn replace(&mut self, old: usize, new: usize) {
        self.0.replace(old, new);
    }

    /// Unlinks `frame`; false if it was not in the list.
    pub(crate) fn unlink(&mut self, frame: usize) -> bool {
        self.0.unlink(frame).is_some()
    }

    /// Moves `frame` to the newest end if it is in the list; false otherwise.
    pub(crate) fn move_to_newest(&mut self, frame: usize) -> bool {
        let linked = self.contains(frame);
        if linked {
            self.relink_newest(frame);
        }
        linked
    }

    /// The oldest frame, moved to the newest end, so that repeated calls cycle through the list:
    /// how a policy proposes blocked frames when only they are resident (R3, R4).
    pub(crate) fn rotate_oldest(&mut self) -> Option<usize> {
        self.0.rotate_oldest(0)
    }

    /// The frames from oldest to newest (for tests and debugging).
    #[cfg(test)]
    pub(crate) fn oldest_first(&self) -> Vec<usize> {
        self.0.oldest_first(0)
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
        self.blocked.rotate_oldest()
    }
}

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
///
/// CAR and S3-FIFO walk the two lists from their oldest ends, and a rejected frame goes round
/// ([`TwoLists::pass`]); the passes since the last eviction steer the walk away from a list
/// that holds only passed frames ([`TwoLists::choose_second`]).
pub(crate) struct TwoLists {
    pub(crate) first: FrameList,
    pub(crate) second: FrameList,
    pub(crate) blocked: FrameList,
    place: FrameVec<Place>,
    pages: FrameVec<Option<PageId>>,
    /// Frames of each list passed by rejections since the last eviction.
    passed: [usize; 2],
}

impl TwoLists {
    pub(crate) fn new(capacity: usize) -> TwoLists {
        TwoLists {
            first: FrameList::new(capacity),
            second: FrameList::new(capacity),
            blocked: FrameList::new(capacity),
            place: FrameVec::new(capacity, Place::Free),
            pages: FrameVec::new(capacity, None),
            passed: [0, 0],
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

    /// A rejection for `InUse` or `SwizzledChildren`: an unblocked `frame` goes round to the
    /// newest end of its own list, and counts as passed.
    pub(crate) fn pass(&mut self, frame: usize) {
        let list = match self.place[frame] {
            Place::First => 0,
            Place::Second => 1,
            Place::Free | Place::Blocked { .. } => return,
        };
        self.rotate(frame);
        self.passed[list] += 1;
    }

    /// The rejection rules of the two-clock policies (CAR, S3-FIFO): `InUse` and
    /// `SwizzledChildren` pass the frame with its bit or counter unchanged (for `InUse` the fix
    /// holding the latch has already reported its own reference, or is the load, which is no
    /// second one), `Root` blocks it, `NotResident` forgets it.
    pub(crate) fn reject(&mut self, frame: usize, why: Rejection) {
        match why {
            Rejection::InUse | Rejection::SwizzledChildren => self.pass(frame),
            Rejection::Root => self.block(frame),
            Rejection::NotResident => {
                self.take(frame);
            }
        }
    }

    /// An eviction: the passes start again.
    pub(crate) fn reset_passes(&mut self) {
        self.passed = [0, 0];
    }

    /// The list a walk examines next: the first if `wants_first`, else the second; a list whose
    /// every frame was passed since the last eviction is avoided while the other still has
    /// unpassed frames; an empty list is never chosen (at least one must be non-empty). Returns
    /// true for the second list.
    pub(crate) fn choose_second(&self, wants_first: bool) -> bool {
        let (n1, n2) = (self.first.len(), self.second.len());
        let open1 = n1 > 0 && self.passed[0] < n1;
        let open2 = n2 > 0 && self.passed[1] < n2;
        let take_first = match (open1, open2) {
            (true, true) => wants_first,
            (true, false) => true,
            (false, true) => false,
            (false, false) => wants_first || n2 == 0,
        };
        !take_first
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
        for (frame, place) in (0..self.place.len()).map(|f| (f, self.place[f])) {
            let (first, second, blocked) =
                (self.first.contains(frame), self.second.contains(frame), self.blocked.contains(frame));
            let expected = match place {
                Place::Free => (false, false, false),
                Place::First => (true, false, false),
                Place::Second => (false, true, false),
                Place::Blocked { .. } => (false, false, true),
            };
            assert_eq!((first, second, blocked), expected, "frame {frame} at {place:?}");
            assert_eq!(self.pages[frame].is_some(), place != Place::Free, "frame {frame}");
            for (count, member) in counts.iter_mut().zip([first, second, blocked]) {
                *count += usize::from(member);
            }
        }
        assert_eq!(counts, [self.first.len(), self.second.len(), self.blocked.len()]);
    }

    /// The page numbers of the first (`false`) or second (`true`) list, oldest first (for the
    /// tests).
    #[cfg(test)]
    pub(crate) fn page_ids(&self, second: bool) -> Vec<u64> {
        let page = |frame: usize| self.pages[frame].expect("a listed frame holds a page").get();
        self.list(second).oldest_first().into_iter().map(page).collect()
    }

    /// Whether `page` is resident (for the proptests: a resident page has no ghost).
    #[cfg(test)]
    pub(crate) fn holds(&self, page: PageId) -> bool {
        self.pages.contains(&Some(page))
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
        assert_eq!((list.oldest(), list.newer(4), list.newer(1)), (Some(4), Some(1), None));
        assert!(list.unlink(1) && list.unlink(4));
        assert!(list.is_empty() && list.oldest().is_none() && !list.move_to_newest(4));
    }

    /// A `ListBytes` handle reads every change of the lists, those made before it was asked
    /// for included (S1: the shared bytes are kept only once a handle exists).
    #[test]
    fn list_bytes_see_changes_made_before_and_after_the_handle() {
        let mut q = Queues::new(100, 3);
        q.push_newest(1, 7);
        q.push_newest(2, 99);
        let bytes = q.list_bytes();
        assert_eq!((bytes.list_of(7), bytes.list_of(99), bytes.list_of(8)), (Some(1), Some(2), None));
        q.push_newest(0, 8);
        q.unlink(7);
        assert_eq!((bytes.list_of(7), bytes.list_of(8), bytes.list_of(100)), (None, Some(0), None));
    }

    /// The operations LIRS and CLOCK-Pro use: insertion next to an anchor, replacement in
    /// place, relinking and the cyclic walk.
    #[test]
    fn chain_links_stay_consistent() {
        let mut chain = FrameList::new(6);
        for n in [3, 0, 4] {
            chain.push_newest(n);
        }
        chain.insert_older_than(1, 3);
        chain.insert_older_than(5, 4);
        assert_eq!(chain.oldest_first(), [1, 3, 0, 5, 4]);
        chain.replace(0, 2);
        assert_eq!(chain.oldest_first(), [1, 3, 2, 5, 4]);
        assert!(!chain.contains(0) && chain.contains(2));
        chain.relink_newest(1);
        assert_eq!(chain.oldest_first(), [3, 2, 5, 4, 1]);
        assert_eq!((chain.next_cyclic(1), chain.next_cyclic(3)), (3, 2));
        assert!(chain.unlink(3) && chain.unlink(1) && !chain.unlink(0));
        assert_eq!((chain.oldest_first(), chain.len(), chain.oldest()), (vec![2, 5, 4], 3, Some(2)));
        chain.replace(4, 0);
        assert_eq!(chain.oldest_first(), [2, 5, 0]);
        chain.relink_newest(4);
        assert_eq!(chain.oldest_first(), [2, 5, 0, 4], "relinking links a node not in the list");
        assert_eq!(chain.rotate_oldest(), Some(2));
        assert_eq!(chain.oldest_first(), [5, 0, 4, 2]);
    }

    #[test]
    fn queues_keep_links_consistent() {
        let mut q = Queues::new(6, 3);
        for f in [3, 0, 4] {
            q.push_newest(0, f);
        }
        q.push_newest(1, 1);
        q.push_newest(1, 5);
        assert_eq!((q.oldest_first(0), q.oldest_first(1)), (vec![3, 0, 4], vec![1, 5]));
        q.push_newest(1, 0);
        assert_eq!((q.oldest_first(0), q.oldest_first(1)), (vec![3, 4], vec![1, 5, 0]));
        assert_eq!(
            (q.newest(0), q.older(4), q.older(3), q.queue_of(0), q.queue_of(2)),
            (Some(4), Some(3), None, Some(1), None)
        );
        // Cyclic walk over lists 2 (empty), 0 and 1.
        let order = [2, 0, 1];
        let walk: Vec<usize> =
            std::iter::successors(Some(3), |&f| Some(q.cyclic_successor(&order, f))).take(6).collect();
        assert_eq!(walk, [3, 4, 1, 5, 0, 3]);
        assert_eq!(q.unlink(4), Some(0));
        assert_eq!(q.unlink(4), None);
        assert_eq!(q.rotate_oldest(1), Some(1));
        assert_eq!(q.oldest_first(1), [5, 0, 1]);
        assert_eq!((q.len(0), q.len(1), q.len(2)), (1, 3, 0));
        assert_eq!(q.cyclic_successor(&[0], 3), 3, "a lone frame is its own successor");
    }

    proptest::proptest! {
        /// `Queues` against a model of one `VecDeque` per list (oldest first): pushes (a frame
        /// already in the list moves within it, one in another list moves across), unlinks,
        /// and after each step every list's order, length, ends and `oldest_without`.
        #[test]
        fn queues_match_a_deque_model(
            ops in proptest::collection::vec((0usize..3, 0usize..8, proptest::bool::weighted(0.8)), 0..200),
        ) {
            let mut q = Queues::new(8, 3);
            let mut model: Vec<std::collections::VecDeque<usize>> = vec![Default::default(); 3];
            for (list, frame, push) in ops {
                for m in &mut model {
                    m.retain(|&f| f != frame);
                }
                if push {
                    q.push_newest(list, frame);
                    model[list].push_back(frame);
                } else {
                    q.unlink(frame);
                }
                for (l, m) in model.iter().enumerate() {
                    proptest::prop_assert_eq!(q.oldest_first(l), m.iter().copied().collect::<Vec<_>>());
                    proptest::prop_assert_eq!(q.len(l), m.len());
                    proptest::prop_assert_eq!(q.newest(l), m.back().copied());
                    let without: Vec<usize> = m.iter().copied().filter(|&f| f != frame).collect();
                    proptest::prop_assert_eq!(q.oldest_without(l, frame), without.first().copied());
                }
                for f in 0..8 {
                    proptest::prop_assert_eq!(q.queue_of(f), model.iter().position(|m| m.contains(&f)));
                }
            }
        }
    }
}
