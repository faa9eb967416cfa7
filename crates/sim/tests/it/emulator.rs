//! The buffer emulator (README "Buffer emulator", E1–E9): consistency after concurrent runs of
//! every variant, and single-threaded runs against the offline simulator as an oracle.

use swizzledb_replacement::PolicyKind;
use swizzledb_sim::emulator::{EmuConfig, EmuVariant, Emulator, Stop};
use swizzledb_sim::{SimPool, Trace};

/// Small buffer, several threads, no compute: the most contention per access.
fn small(variant: EmuVariant, policy: PolicyKind, all_miss: bool) -> EmuConfig {
    EmuConfig {
        policy,
        data_pages: 20_000,
        buffer_pages: 2_000,
        threads: 4,
        compute_us: 0.0,
        all_miss,
        partitions: 8,
        // 4 lists of 16 victims (bp-distlock: 1 list of 15 per partition, E6).
        free_lists: 4,
        reclaim: 16,
        ..EmuConfig::new(variant)
    }
}

fn run_and_check(config: &EmuConfig, accesses_per_thread: u64) {
    let emu = Emulator::new(config).unwrap();
    let r = emu.run(0.0, Stop::Accesses(accesses_per_thread));
    let label = format!("{} {} all_miss={}", config.variant, config.policy, config.all_miss);
    assert_eq!(r.accesses, accesses_per_thread * config.threads as u64, "{label}");
    assert_eq!(r.hits + r.misses, r.accesses, "{label}");
    assert!(r.misses > 0, "{label}: a buffer of a tenth of the data must miss");
    // In all-miss mode a thread that was descheduled may be overtaken and hit pages another
    // thread just loaded, so only the single-threaded test asserts that nothing hits.
    if !config.all_miss {
        assert!(r.hits > 0, "{label}: Zipf accesses must hit");
    }
    emu.check().unwrap_or_else(|e| panic!("{label}: {e}"));
}

/// E9 after concurrent runs: for every variant, with hits and misses racing on a small buffer,
/// the page table, frames, free lists and each policy's resident set agree afterwards.
#[test]
fn e9_every_variant_stays_consistent_under_concurrency() {
    for variant in EmuVariant::ALL {
        run_and_check(&small(variant, PolicyKind::Lru, false), 20_000);
    }
}

/// E9 in all-miss mode, where every access evicts: free lists refill in batches while other
/// threads pop them.
#[test]
fn e9_every_variant_stays_consistent_when_every_access_misses() {
    for variant in EmuVariant::ALL {
        run_and_check(&small(variant, PolicyKind::Lru, true), 10_000);
    }
}

/// E9 with another lock-based policy inside the wrappers (2Q keeps ghosts of evicted pages).
#[test]
fn e9_two_q_stays_consistent() {
    for variant in [EmuVariant::Lru, EmuVariant::BatPref, EmuVariant::BpDistLock, EmuVariant::Prim] {
        run_and_check(&small(variant, PolicyKind::TwoQ, false), 10_000);
    }
}

/// E9 with a buffer so small that free lists can hold every free frame and pins block
/// eviction: misses must steal from other lists instead of spinning forever.
#[test]
fn e9_tiny_buffer_with_many_lists_makes_progress() {
    let config = EmuConfig {
        buffer_pages: 24,
        data_pages: 200,
        free_lists: 64,
        reclaim: 64,
        ..small(EmuVariant::BatPref, PolicyKind::Lru, false)
    };
    run_and_check(&config, 5_000);
}

/// E7, E8 against an oracle: in one thread, the locked LRU, full BP-Wrapper and bufBP-prim with
/// free lists off (one victim per miss) hit exactly as often as the offline simulator's LRU
/// over the same page sequence, after the same pre-load (pages C-1 down to 0 into frames C-1
/// down to 0). Batching changes when the policy hears of a hit, never what it hears, so a
/// lost, duplicated or reordered hit would change the victims and the counts.
#[test]
fn e8_single_thread_matches_the_simulator() {
    const ACCESSES: u64 = 30_000;
    for variant in [EmuVariant::Lru, EmuVariant::BatPref, EmuVariant::Prim, EmuVariant::Pref] {
        let config = EmuConfig { threads: 1, free_lists: 0, ..small(variant, PolicyKind::Lru, false) };
        let c = config.buffer_pages;
        let preload = (0..c).rev();
        let refs: Vec<u32> = preload.chain(config.page_stream(0).unwrap().take(ACCESSES as usize)).collect();
        let trace = Trace::new(refs, config.data_pages).unwrap();
        // Frames are popped lowest first: page C-1 would land in frame 0. The emulator loads page
        // p into frame p, but frame identity does not change LRU's hits.
        let sim = SimPool::for_kind(PolicyKind::Lru, c, trace.page_slots(), 0).run(trace.refs()).unwrap();
        let emu = Emulator::new(&config).unwrap();
        let r = emu.run(0.0, Stop::Accesses(ACCESSES));
        assert_eq!(r.misses, sim.misses - u64::from(c), "{variant}");
        emu.check().unwrap();
    }
}

/// E6: with free lists on, a single-threaded bat-pref run keeps up to F x L frames free, so it
/// can only miss more than with them off, and (the lists being small next to C) not much more.
#[test]
fn e6_free_lists_cost_little_hit_ratio() {
    let base = EmuConfig {
        threads: 1,
        buffer_pages: 2_000,
        data_pages: 20_000,
        free_lists: 4,
        reclaim: 16,
        ..small(EmuVariant::BatPref, PolicyKind::Lru, false)
    };
    let ratio = |config: &EmuConfig| {
        let emu = Emulator::new(config).unwrap();
        emu.run(0.0, Stop::Accesses(50_000)).hit_ratio()
    };
    let with = ratio(&base);
    let without = ratio(&EmuConfig { free_lists: 0, ..base.clone() });
    assert!(with <= without, "{with} > {without}");
    assert!(without - with < 0.02, "free lists cost {:.4} of hit ratio", without - with);
}

/// E2: in all-miss mode one thread loops over D > C pages, so under LRU every access misses,
/// with free lists on or off.
#[test]
fn e2_all_miss_mode_never_hits_in_one_thread() {
    for variant in [EmuVariant::Lru, EmuVariant::BatPref, EmuVariant::BpDistLock, EmuVariant::Clock] {
        let config = EmuConfig { threads: 1, ..small(variant, PolicyKind::Lru, true) };
        let emu = Emulator::new(&config).unwrap();
        let r = emu.run(0.0, Stop::Accesses(10_000));
        assert_eq!((r.hits, r.misses), (0, 10_000), "{variant}");
        emu.check().unwrap();
    }
}

/// E6, E8 in one thread (nothing pinned, nothing contended): a variant without free lists takes
/// the miss path (one `evict_batch`) exactly once per miss; with F = 16 once per 16 misses of a list
/// (plus at most one partial batch per list); CLOCK has no policy lock; nothing ever waits.
#[test]
fn e8_miss_lock_once_per_miss_or_per_batch() {
    for variant in EmuVariant::ALL {
        let config = EmuConfig { threads: 1, ..small(variant, PolicyKind::Lru, false) };
        let emu = Emulator::new(&config).unwrap();
        let r = emu.run(0.0, Stop::Accesses(20_000));
        let (locks, misses) = (r.locks, r.misses);
        assert!(misses > 100, "{variant}");
        match config.lists_per_partition() {
            None => assert_eq!(locks.miss_passes, misses, "{variant}"),
            Some(lists) => {
                let f = config.effective_reclaim() as u64;
                let partitions = config.effective_partitions() as u64;
                assert!(locks.miss_passes * f >= misses, "{variant}: {locks:?} for {misses} misses");
                assert!(
                    locks.miss_passes <= misses / f + lists as u64 * partitions,
                    "{variant}: {locks:?} for {misses} misses"
                );
            }
        }
        assert_eq!((locks.policy_waits, locks.miss_waits, locks.failed_try_locks), (0, 0, 0), "{variant}");
        if variant == EmuVariant::Clock {
            assert_eq!(locks.policy_acquisitions, 0);
            assert_eq!(locks.miss_acquisitions, locks.miss_passes, "CLOCK's miss path takes the miss lock");
        } else {
            assert!(locks.policy_acquisitions > 0, "{variant}");
            assert_eq!(locks.miss_acquisitions, 0, "{variant}: BP-Wrapper's own lock serializes the batch");
        }
        emu.check().unwrap();
    }
}

/// E6: F is capped so that full free lists hold at most 1/16 of a partition's frames.
#[test]
fn e6_reclaim_is_capped_on_small_buffers() {
    let config = small(EmuVariant::BatPref, PolicyKind::Lru, false);
    assert_eq!(config.effective_reclaim(), 16);
    let per_partition = EmuConfig { variant: EmuVariant::BpDistLock, ..config.clone() };
    assert_eq!(per_partition.lists_per_partition(), Some(1));
    assert_eq!(per_partition.effective_reclaim(), 2_000 / 8 / 16);
    assert_eq!(EmuConfig { buffer_pages: 100, ..config.clone() }.effective_reclaim(), 1);
    assert_eq!(EmuConfig { variant: EmuVariant::Prim, ..config }.effective_reclaim(), 1);
}

/// E1: bad sizes are typed errors, not panics.
#[test]
fn e1_bad_configurations_are_refused() {
    let ok = small(EmuVariant::DistLock, PolicyKind::Lru, false);
    assert!(Emulator::new(&EmuConfig { threads: 0, ..ok.clone() }).is_err());
    assert!(Emulator::new(&EmuConfig { buffer_pages: 0, ..ok.clone() }).is_err());
    assert!(Emulator::new(&EmuConfig { partitions: 2_001, ..ok.clone() }).is_err());
    assert!(Emulator::new(&EmuConfig { compute_us: -1.0, ..ok.clone() }).is_err());
    assert!(Emulator::new(&EmuConfig { zipf: f64::NAN, ..ok.clone() }).is_err());
    let fits = EmuConfig { all_miss: true, data_pages: 2_000, ..ok.clone() };
    let msg = Emulator::new(&fits).err().unwrap().to_string();
    assert!(msg.contains("more data pages"), "{msg}");
    let reclaim = EmuConfig { reclaim: 0, ..small(EmuVariant::Batching, PolicyKind::Lru, false) };
    assert!(Emulator::new(&reclaim).is_err());
}
