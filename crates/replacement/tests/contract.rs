//! The README contract (R1–R7), checked for every policy, and the BP-Wrapper'd LRU and 2Q,
//! through a simulated pool.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use common::{drive, drive_with, ops, scenario, Hooks, Op, Outcome};
use proptest::prelude::*;
use swizzledb_replacement::{
    FrameHook, FrameId, Gclock, HookHit, HookTable, PageId, Policy, PolicyKind, PolicySpec, Rejection,
    Variant,
};

/// Every default policy (`PolicySpec::all`) and the BP-Wrapper'd policies whose hits lock most
/// (`bpw-lru`, `bpw-2q`, and `leaf-bpw-2q` with `LeafOnly` around the wrapper), and the wrapped
/// hot/cold, which drops its hot hits.
fn specs() -> Vec<PolicySpec> {
    let wrapped =
        ["bpw-lru", "bpw-2q", "leaf-bpw-2q", "bpw-hot-cold"].map(|name| name.parse::<PolicySpec>().unwrap());
    PolicySpec::all().into_iter().chain(wrapped).collect()
}

/// Every policy of [`specs`] plus GCLOCK with small weights, where the hand wraps most often.
fn kinds() -> impl Strategy<Value = PolicySpec> {
    prop_oneof![
        proptest::sample::select(specs()),
        (1u16..=3).prop_map(|k| PolicySpec::from(PolicyKind::Gclock { k })),
    ]
}

/// What a hook may hold when the policy first sees its frame: `None` keeps what the previous
/// policy left there, anything else overwrites it (small counters, GCLOCK's blocked marker, and
/// arbitrary words are all likely).
fn stale_word() -> impl Strategy<Value = Option<u32>> {
    prop_oneof![
        2 => Just(None),
        1 => (0u32..=12).prop_map(Some),
        1 => Just(Some(u32::from(u16::MAX))),
        1 => any::<u32>().prop_map(Some),
    ]
}

fn page(frame: u32) -> PageId {
    PageId::new(u64::from(frame)).unwrap()
}

proptest! {
    #[test]
    fn r4_never_proposes_a_non_resident_frame(
        kind in kinds(), seed in any::<u64>(), (capacity, ops) in scenario(),
    ) {
        let policy = kind.build(capacity as usize, seed);
        drive(capacity, &ops, &*policy, common::Sim::assert_resident);
    }

    #[test]
    fn r4_none_iff_nothing_resident(
        kind in kinds(), seed in any::<u64>(), (capacity, ops) in scenario(),
    ) {
        let policy = kind.build(capacity as usize, seed);
        drive(capacity, &ops, &*policy, common::Sim::assert_none_iff_empty);
    }

    #[test]
    fn r3_root_rejected_frame_not_proposed_while_others_unblocked(
        kind in kinds(), seed in any::<u64>(), (capacity, ops) in scenario(),
    ) {
        let policy = kind.build(capacity as usize, seed);
        drive(capacity, &ops, &*policy, common::Sim::assert_root_respected);
    }

    /// No sequence of rejections loses a frame: after any history, evicting every proposal
    /// empties the pool within `capacity` proposals, each of a resident frame.
    #[test]
    fn r3_draining_evicts_every_resident_frame(
        kind in kinds(), seed in any::<u64>(), (capacity, mut ops) in scenario(),
    ) {
        ops.resize(ops.len() + capacity as usize + 1, Op::Propose(Outcome::Evict));
        let policy = kind.build(capacity as usize, seed);
        let proposals = drive(capacity, &ops, &*policy, |sim, proposal| {
            sim.assert_resident(proposal);
            sim.assert_none_iff_empty(proposal);
        });
        prop_assert_eq!(proposals.last(), Some(&None));
    }

    /// R7: a policy resets the hooks it uses on insert and reads no hook of a frame it does not
    /// track, so it proposes exactly the same victims over hooks reused from a previous policy
    /// (with some words overwritten by arbitrary values) as over fresh ones.
    #[test]
    fn r7_reused_hooks_behave_like_fresh_ones(
        kind in kinds(),
        seed in any::<u64>(),
        previous in prop_oneof![kinds(), Just(PolicySpec::from(PolicyKind::Gclock { k: Gclock::MAX_K }))],
        (capacity, previous_ops, ops) in (1u32..=12).prop_flat_map(|c| (Just(c), ops(c), ops(c))),
        overwrites in proptest::collection::vec(stale_word(), 12),
    ) {
        let previous_policy = previous.build(capacity as usize, seed ^ 1);
        let (_, stale) = drive_with(Hooks::new(capacity), &previous_ops, &*previous_policy, |_, _| {});
        for (hook, word) in stale.iter().zip(&overwrites) {
            if let Some(word) = *word {
                hook.set(word);
            }
        }
        let check = |sim: &common::Sim, proposal: Option<FrameId>| {
            sim.assert_resident(proposal);
            sim.assert_none_iff_empty(proposal);
            sim.assert_root_respected(proposal);
        };
        let fresh = drive(capacity, &ops, &*kind.build(capacity as usize, seed), check);
        let (reused, _) = drive_with(stale, &ops, &*kind.build(capacity as usize, seed), check);
        prop_assert_eq!(fresh, reused);
    }
}

/// A policy whose hits reach it only when it does not ignore them (`ignores_hit`), as
/// BP-Wrapper drops them; it notes whether any hit was dropped, whether any was not, whether
/// the policy said it ignores hits on a frame it did not hold (asked just before each insert,
/// as BP-Wrapper may ask while the insert waits in a queue), and whether a frame whose hits it
/// ignored stopped being ignored while it held the same page (`hit_effects_are_stable`).
struct SkipIgnored<'a> {
    inner: &'a dyn Policy,
    dropped: AtomicBool,
    forwarded: AtomicBool,
    ignored_unheld: AtomicBool,
    unstable: AtomicBool,
    held: Mutex<HashSet<u32>>,
    /// Held frames whose hits were ignored since their insert.
    ignored: Mutex<HashSet<u32>>,
}

impl<'a> SkipIgnored<'a> {
    fn new(inner: &'a dyn Policy) -> Self {
        SkipIgnored {
            inner,
            dropped: AtomicBool::new(false),
            forwarded: AtomicBool::new(false),
            ignored_unheld: AtomicBool::new(false),
            unstable: AtomicBool::new(false),
            held: Mutex::new(HashSet::new()),
            ignored: Mutex::new(HashSet::new()),
        }
    }

    fn ignored(&self, frame: FrameId, hook: &FrameHook) -> bool {
        let ignored = self.inner.ignores_hit(frame, hook);
        let flag = if ignored { &self.dropped } else { &self.forwarded };
        flag.store(true, Ordering::Relaxed);
        let mut seen = self.ignored.lock().unwrap();
        if ignored {
            seen.insert(frame.0);
        } else if seen.contains(&frame.0) {
            self.unstable.store(true, Ordering::Relaxed);
        }
        ignored
    }

    fn forget(&self, frame: FrameId) {
        self.held.lock().unwrap().remove(&frame.0);
        self.ignored.lock().unwrap().remove(&frame.0);
    }
}

impl Policy for SkipIgnored<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        if !self.held.lock().unwrap().contains(&frame.0) && self.inner.ignores_hit(frame, hook) {
            self.ignored_unheld.store(true, Ordering::Relaxed);
        }
        self.held.lock().unwrap().insert(frame.0);
        self.ignored.lock().unwrap().remove(&frame.0);
        self.inner.on_insert(frame, page, hook);
    }
    fn on_hit(&self, frame: FrameId, hook: &FrameHook) {
        if !self.ignored(frame, hook) {
            self.inner.on_hit(frame, hook);
        }
    }
    fn on_page_hit(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        if !self.ignored(frame, hook) {
            self.inner.on_page_hit(frame, page, hook);
        }
    }
    fn on_unfix(&self, frame: FrameId, hook: &FrameHook) {
        self.inner.on_unfix(frame, hook);
    }
    fn uses_unfix(&self) -> bool {
        self.inner.uses_unfix()
    }
    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        if why == Rejection::NotResident {
            self.forget(frame);
        }
        self.inner.on_rejected(frame, why, hook);
    }
    fn on_remove(&self, frame: FrameId, evicted: bool, hook: &FrameHook) {
        self.forget(frame);
        self.inner.on_remove(frame, evicted, hook);
    }
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        self.inner.next_candidate(hooks)
    }
    fn candidate_after(&self, frame: FrameId, hooks: &dyn HookTable) -> Option<FrameId> {
        self.inner.candidate_after(frame, hooks)
    }
}

proptest! {
    /// R5's `ignores_hit`: a hit the policy says it ignores changes nothing, so dropping every
    /// such hit (as BP-Wrapper does) leaves every proposal as it was; a policy that ignores
    /// some hit says so in `ignores_some_hits`, which BP-Wrapper reads once; a policy that
    /// ignores hits on a frame it does not hold (whose insert BP-Wrapper may still be holding
    /// back) ignores every hit; and a policy whose answers are stable keeps ignoring a page's
    /// hits once it ignored one, until the page leaves it (BP-Wrapper remembers the answer).
    #[test]
    fn r5_ignored_hits_change_nothing(kind in kinds(), seed in any::<u64>(), (capacity, ops) in scenario()) {
        let plain = kind.build(capacity as usize, seed);
        let other = kind.build(capacity as usize, seed);
        let skipping = SkipIgnored::new(&*other);
        let check = |sim: &common::Sim, proposal: Option<FrameId>| sim.assert_resident(proposal);
        prop_assert_eq!(drive(capacity, &ops, &*plain, check), drive(capacity, &ops, &skipping, check));
        if skipping.dropped.load(Ordering::Relaxed) {
            prop_assert!(other.ignores_some_hits(), "{} ignores a hit but not some hits", other.name());
        }
        prop_assert!(
            !(skipping.ignored_unheld.load(Ordering::Relaxed) && skipping.forwarded.load(Ordering::Relaxed)),
            "{} ignores hits on a frame it does not hold, but not every hit", other.name()
        );
        prop_assert!(
            !(other.hit_effects_are_stable() && skipping.unstable.load(Ordering::Relaxed)),
            "{} says its answers are stable, but stopped ignoring a page's hits", other.name()
        );
    }
}

proptest! {
    /// In one thread BP-Wrapper commits every queued hit and insert before the next other hook, so
    /// the wrapped policy proposes exactly what the policy itself proposes, for every policy and
    /// every variant of the wrapper (hooks
    /// included: the inner policy's private hooks start at 0 like the pool's).
    #[test]
    fn r1_bpw_is_invisible_in_one_thread(
        kind in kinds(), seed in any::<u64>(), (capacity, ops) in scenario(),
        variant in prop::sample::select(vec![Variant::None, Variant::Batching, Variant::Prefetching, Variant::Both]),
    ) {
        // Hot/cold's dropped hits read hotness before the queued accesses ahead of them commit
        // (the paper's Fig. 7; the wrapper's module doc and its test `fig7_hot_cold_checks_hotness_at_the_access`).
        // `kind` itself may be `bpw-hot-cold`.
        let batches = |v: Option<Variant>| matches!(v, Some(Variant::Batching | Variant::Both));
        prop_assume!(kind.kind != PolicyKind::HotCold || !(batches(Some(variant)) || batches(kind.bp_wrapper)));
        let plain = kind.build(capacity as usize, seed);
        let wrapped = PolicySpec { bp_wrapper: Some(variant), ..kind }.build(capacity as usize, seed);
        let check = |sim: &common::Sim, proposal: Option<FrameId>| sim.assert_resident(proposal);
        prop_assert_eq!(drive(capacity, &ops, &*plain, check), drive(capacity, &ops, &*wrapped, check));
    }
}

#[test]
fn r3_terminates_when_every_resident_frame_is_blocked() {
    let capacity = 1000u32;
    for kind in specs().into_iter().chain([PolicyKind::Gclock { k: u16::MAX - 1 }.into()]) {
        let policy = kind.build(capacity as usize, 3);
        let hooks = Hooks::new(capacity);
        // Every third frame holds a root; the others are free.
        let roots: Vec<u32> = (0..capacity).step_by(3).collect();
        for &f in &roots {
            let hook = &hooks[f as usize];
            policy.on_insert(FrameId(f), page(f), hook);
            policy.on_hit(FrameId(f), hook);
            policy.on_rejected(FrameId(f), Rejection::Root, hook);
        }
        for _ in 0..10 {
            let proposal = policy.next_candidate(&hooks).expect("roots are resident (R4)");
            assert!(roots.contains(&proposal.0), "{kind}: proposed {proposal}");
            policy.on_rejected(proposal, Rejection::Root, &hooks[proposal.index()]);
        }
        // A new non-root page is found at once.
        policy.on_insert(FrameId(1), page(1), &hooks[1]);
        assert_eq!(policy.next_candidate(&hooks), Some(FrameId(1)), "{kind}");
    }
}

/// Hit hooks from several threads while one thread proposes (R2): proposals stay resident and
/// every call returns even while hits keep resetting GCLOCK counters.
#[test]
fn r2_concurrent_hits_with_one_evictor_terminate() {
    let capacity = 64u32;
    for kind in specs().into_iter().chain([PolicyKind::Gclock { k: 1 }.into()]) {
        let policy = kind.build(capacity as usize, 11);
        let hooks = Hooks::new(capacity);
        // Frames 0..48 hold pages; the rest stay free throughout.
        for f in 0..48 {
            policy.on_insert(FrameId(f), page(f), &hooks[f as usize]);
        }
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for thread in 0..3u32 {
                let (policy, hooks, done) = (&*policy, &hooks, &done);
                scope.spawn(move || {
                    let mut x = thread.wrapping_mul(2_654_435_761).wrapping_add(1);
                    while !done.load(Ordering::Relaxed) {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        let frame = FrameId(x % 48);
                        policy.on_hit(frame, &hooks[frame.index()]);
                        policy.on_unfix(frame, &hooks[frame.index()]);
                    }
                });
            }
            for round in 0..5_000 {
                let proposal = policy.next_candidate(&hooks).expect("48 frames are resident");
                assert!(proposal.0 < 48, "{kind}: proposed free {proposal}");
                let why = if round % 2 == 0 { Rejection::InUse } else { Rejection::SwizzledChildren };
                policy.on_rejected(proposal, why, &hooks[proposal.index()]);
            }
            done.store(true, Ordering::Relaxed);
        });
    }
}

/// Without hits or rejections, FIFO, LRU and SIEVE all evict in insertion order (SIEVE's hand
/// finds no visited bit; LRU's recency order is the insertion order).
#[test]
fn r4_queue_policies_without_hits_evict_in_insertion_order() {
    let order = [5u32, 2, 7, 0, 3, 6, 1, 4];
    for kind in [PolicyKind::Fifo, PolicyKind::Lru, PolicyKind::Sieve] {
        let policy = kind.build(order.len(), 0);
        let hooks = Hooks::new(order.len() as u32);
        for &f in &order {
            policy.on_insert(FrameId(f), page(f), &hooks[f as usize]);
        }
        let victims: Vec<u32> = std::iter::from_fn(|| {
            let victim = policy.next_candidate(&hooks)?;
            policy.on_remove(victim, true, &hooks[victim.index()]);
            Some(victim.0)
        })
        .collect();
        assert_eq!(victims, order, "{kind}");
    }
}

proptest! {
    /// `on_queued` applies a batch exactly as the individual hook calls would: for every policy,
    /// a history whose inserts and hits reach the policy in batches proposes exactly what the
    /// same history with one call per hook proposes (LRU and 2Q take their lock once per batch).
    #[test]
    fn on_queued_is_the_individual_calls_in_order(
        kind in kinds(), seed in any::<u64>(), (capacity, ops) in scenario(),
    ) {
        use swizzledb_replacement::{Policy, QueuedHook};
        let run = |batched: bool| {
            let policy = kind.build(capacity as usize, seed);
            let hooks = Hooks::new(capacity);
            let mut resident = vec![false; capacity as usize];
            let mut batch: Vec<(FrameId, QueuedHook)> = Vec::new();
            let mut proposals = Vec::new();
            let flush = |policy: &dyn Policy, batch: &mut Vec<(FrameId, QueuedHook)>| {
                policy.on_queued(batch, &hooks);
                batch.clear();
            };
            for &op in &ops {
                let call = match op {
                    Op::Insert(f) if !resident[f as usize] => {
                        resident[f as usize] = true;
                        Some((FrameId(f), QueuedHook::Insert(page(f))))
                    }
                    Op::Hit(f) if resident[f as usize] => Some((FrameId(f), QueuedHook::Hit)),
                    _ => None,
                };
                if let Some((frame, call)) = call {
                    let hook = &hooks[frame.index()];
                    match call {
                        _ if batched => batch.push((frame, call)),
                        QueuedHook::Insert(p) => policy.on_insert(frame, p, hook),
                        _ => policy.on_hit(frame, hook),
                    }
                    continue;
                }
                flush(&*policy, &mut batch);
                match op {
                    Op::Remove(f) if resident[f as usize] => {
                        resident[f as usize] = false;
                        policy.on_remove(FrameId(f), false, &hooks[f as usize]);
                    }
                    Op::Propose(_) => {
                        let proposal = policy.next_candidate(&hooks);
                        proposals.push(proposal);
                        if let Some(frame) = proposal {
                            resident[frame.index()] = false;
                            policy.on_remove(frame, true, &hooks[frame.index()]);
                        }
                    }
                    _ => {}
                }
            }
            proposals
        };
        prop_assert_eq!(run(false), run(true));
    }
}

/// Answers an eviction batch from a script: each proposal gets the next outcome (`Ignore` is
/// taken as an `InUse` rejection), until the script runs out.
struct Scripted<'a> {
    outcomes: &'a [Outcome],
    seen: Vec<FrameId>,
}

impl Scripted<'_> {
    fn verdict(&mut self, frame: FrameId) -> swizzledb_replacement::Verdict {
        use swizzledb_replacement::Verdict;
        let outcome = self.outcomes[self.seen.len()];
        self.seen.push(frame);
        match outcome {
            Outcome::Evict => Verdict::Evicted,
            Outcome::Reject(why) => Verdict::Rejected(why),
            Outcome::Ignore => Verdict::Rejected(Rejection::InUse),
        }
    }
}

impl swizzledb_replacement::Evictor for Scripted<'_> {
    fn wants_more(&mut self) -> bool {
        self.seen.len() < self.outcomes.len()
    }

    fn try_evict(&mut self, frame: FrameId) -> swizzledb_replacement::Verdict {
        self.verdict(frame)
    }
}

proptest! {
    /// R10: a policy's `evict_batch` (2Q's and LRU's take their lock once per victim; the
    /// wrapper hands the batch to its inner policy) proposes, and leaves behind, exactly what the
    /// plain loop over `next_candidate`, `on_remove` and `on_rejected` does, for every policy.
    #[test]
    fn r10_evict_batch_is_the_plain_loop(
        kind in kinds(), seed in any::<u64>(), (capacity, history) in scenario(),
        outcomes in proptest::collection::vec(
            prop_oneof![3 => Just(Outcome::Evict), 1 => Just(Outcome::Reject(Rejection::InUse)),
                        1 => Just(Outcome::Reject(Rejection::SwizzledChildren)),
                        1 => Just(Outcome::Reject(Rejection::Root))],
            0..16),
    ) {
        use swizzledb_replacement::{Evictor, Verdict};
        let history: Vec<Op> = history.into_iter().filter(|op| !matches!(op, Op::Propose(_))).collect();
        let run = |batched: bool| {
            let policy = kind.build(capacity as usize, seed);
            let (_, hooks) = drive_with(Hooks::new(capacity), &history, &*policy, |_, _| {});
            let mut script = Scripted { outcomes: &outcomes, seen: Vec::new() };
            if batched {
                policy.evict_batch(&hooks, &mut script, usize::MAX);
            } else {
                while script.wants_more() {
                    let Some(frame) = policy.next_candidate(&hooks) else { break };
                    match script.verdict(frame) {
                        Verdict::Evicted => policy.on_remove(frame, true, &hooks[frame.index()]),
                        Verdict::Rejected(why) => policy.on_rejected(frame, why, &hooks[frame.index()]),
                    }
                }
            }
            // What is left: propose and evict until nothing is.
            let mut rest = Vec::new();
            while let Some(frame) = policy.next_candidate(&hooks) {
                rest.push(frame);
                policy.on_remove(frame, true, &hooks[frame.index()]);
                if rest.len() > 2 * capacity as usize {
                    break;
                }
            }
            (script.seen, rest)
        };
        prop_assert_eq!(run(false), run(true));
    }
}

/// R12: a policy whose hits the pool makes as one store ([`Policy::hook_hit`]) instead of
/// calling it; everything else goes to the policy.
struct ViaHookHit<'a> {
    inner: &'a dyn Policy,
    hit: HookHit,
}

impl Policy for ViaHookHit<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn on_insert(&self, frame: FrameId, page: PageId, hook: &FrameHook) {
        self.inner.on_insert(frame, page, hook);
    }
    fn on_hit(&self, _frame: FrameId, hook: &FrameHook) {
        self.hit.apply(hook);
    }
    fn on_page_hit(&self, _frame: FrameId, _page: PageId, hook: &FrameHook) {
        self.hit.apply(hook);
    }
    fn on_unfix(&self, frame: FrameId, hook: &FrameHook) {
        self.inner.on_unfix(frame, hook);
    }
    fn uses_unfix(&self) -> bool {
        self.inner.uses_unfix()
    }
    fn on_rejected(&self, frame: FrameId, why: Rejection, hook: &FrameHook) {
        self.inner.on_rejected(frame, why, hook);
    }
    fn on_remove(&self, frame: FrameId, evicted: bool, hook: &FrameHook) {
        self.inner.on_remove(frame, evicted, hook);
    }
    fn next_candidate(&self, hooks: &dyn HookTable) -> Option<FrameId> {
        self.inner.next_candidate(hooks)
    }
    fn candidate_after(&self, frame: FrameId, hooks: &dyn HookTable) -> Option<FrameId> {
        self.inner.candidate_after(frame, hooks)
    }
}

proptest! {
    /// R12: where a policy says its hits are a `HookHit`, making that store instead of calling
    /// the policy leaves every proposal and every hook as the policy's own hits would.
    #[test]
    fn r12_a_hook_hit_is_the_policys_own_hit(kind in kinds(), seed in any::<u64>(), (capacity, ops) in scenario()) {
        let plain = kind.build(capacity as usize, seed);
        let Some(hit) = plain.hook_hit() else { return Ok(()) };
        let other = kind.build(capacity as usize, seed);
        let via = ViaHookHit { inner: &*other, hit };
        let (a, hooks_a) = drive_with(Hooks::new(capacity), &ops, &*plain, |_, _| {});
        let (b, hooks_b) = drive_with(Hooks::new(capacity), &ops, &via, |_, _| {});
        prop_assert_eq!(a, b, "{}", plain.name());
        let values = |h: &Hooks| h.iter().map(FrameHook::get).collect::<Vec<_>>();
        prop_assert_eq!(values(&hooks_a), values(&hooks_b), "{}", plain.name());
    }
}

/// R12: the policies whose hits are one conditional store say so (so the check above is not
/// vacuous), and a policy that does more on a hit does not.
#[test]
fn r12_clock_gclock_and_sieve_make_hook_hits_and_lru_does_not() {
    for kind in [
        PolicyKind::default(),
        PolicyKind::GclockSweep { k: Gclock::DEFAULT_K },
        PolicyKind::Clock,
        PolicyKind::Sieve,
    ] {
        assert!(PolicySpec::from(kind).build(64, 1).hook_hit().is_some(), "{kind}");
    }
    assert!(PolicySpec::from(PolicyKind::Lru).build(64, 1).hook_hit().is_none());
    let bpw: PolicySpec = "bpw-gclock".parse().expect("a policy");
    assert!(bpw.build(64, 1).hook_hit().is_none(), "BP-Wrapper queues its hits");
}
