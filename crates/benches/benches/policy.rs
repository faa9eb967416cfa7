//! Cost of each replacement policy's hooks, in ns per call, outside any buffer pool: the hit hook
//! and the miss decision (propose a victim, remove it, insert the new page in its frame), for
//! every policy of `PolicyKind::all()` with default parameters.
//!
//! Setup per policy: 4,096 frames, all resident, then 40,960 hits on random frames so that
//! policies with history have some.
//!
//! * `hit/<policy>`: `on_hit` on 1,024 precomputed random frames per iteration (reported per
//!   hit). CLOCK-family policies only store to the frame's hook; LRU-family ones take their lock.
//! * `miss/<policy>`: one miss per iteration: `next_candidate`, `on_remove(victim, true)` and
//!   `on_insert` of a never-seen page in that frame. Every fifth iteration also re-inserts a page
//!   evicted recently, so that ghost hits (ARC, CAR, 2Q, LIRS, CLOCK-Pro) are part of the cost.
//! * `miss-large/<policy>`: the same with 262,144 frames, for CLOCK, LRU, 2Q and `bpw-2q` only.
//!   At 4,096 frames every policy's state fits the L2 cache; here it does not, so the figure
//!   includes the cache misses a live pool's eviction batch pays.
//!
//! Single-threaded: this is the price of the policy's bookkeeping, not of contention (BP-Wrapper's
//! emulator measures that). Run: `cargo bench -p swizzledb-benches --bench policy`.

#![forbid(unsafe_code)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use swizzledb_replacement::{FrameHook, FrameId, HookTable, PageId, Policy, PolicyKind, PolicySpec};

const FRAMES: usize = 4096;
const LARGE_FRAMES: usize = 1 << 18;
const HITS_PER_ITER: usize = 1024;

struct Hooks(Box<[FrameHook]>);

impl HookTable for Hooks {
    fn hook(&self, frame: FrameId) -> &FrameHook {
        &self.0[frame.index()]
    }
}

/// Every policy, then LRU and 2Q behind BP-Wrapper's instrumented lock (`locked-`) and batched
/// (`bpw-batch-`, `bpw-`): what the wrapper adds to a hit in one thread.
fn specs() -> Vec<PolicySpec> {
    let mut specs: Vec<PolicySpec> = PolicyKind::all().into_iter().map(PolicySpec::from).collect();
    for name in ["locked-lru", "bpw-batch-lru", "bpw-lru", "locked-2q", "bpw-2q"] {
        specs.push(name.parse().expect("a valid policy name"));
    }
    specs
}

fn frame(i: usize) -> FrameId {
    FrameId(u32::try_from(i).expect("small frame index"))
}

/// A full, warmed-up policy over `frames` frames and its hooks; pages `1..=frames` resident.
fn warmed(kind: PolicySpec, frames: usize) -> (Box<dyn Policy>, Hooks, SmallRng) {
    let policy = kind.build(frames, 7);
    let hooks = Hooks((0..frames).map(|_| FrameHook::new()).collect());
    for f in 0..frames {
        policy.on_insert(frame(f), PageId::new(f as u64 + 1).expect("small page id"), &hooks.0[f]);
    }
    let mut rng = SmallRng::seed_from_u64(1);
    for _ in 0..10 * frames {
        let f = rng.gen_range(0..frames);
        policy.on_hit(frame(f), &hooks.0[f]);
    }
    (policy, hooks, rng)
}

fn hits(c: &mut Criterion) {
    let mut group = c.benchmark_group("hit");
    group.throughput(Throughput::Elements(HITS_PER_ITER as u64));
    for kind in specs() {
        let (policy, hooks, mut rng) = warmed(kind, FRAMES);
        let frames: Vec<usize> = (0..HITS_PER_ITER).map(|_| rng.gen_range(0..FRAMES)).collect();
        group.bench_function(kind.to_string(), |b| {
            b.iter(|| {
                for &f in &frames {
                    policy.on_hit(frame(f), &hooks.0[f]);
                }
            });
        });
    }
    group.finish();
}

fn misses(c: &mut Criterion) {
    miss_group(c, "miss", FRAMES, specs());
    let large = ["clock", "lru", "2q", "bpw-2q"].map(|name| name.parse().expect("a valid policy name"));
    miss_group(c, "miss-large", LARGE_FRAMES, large.to_vec());
}

fn miss_group(c: &mut Criterion, name: &str, frames: usize, specs: Vec<PolicySpec>) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(1));
    for kind in specs {
        let (policy, hooks, mut rng) = warmed(kind, frames);
        // Page ids held per frame, and a ring of recently evicted ones to come back as ghosts.
        let mut pages: Vec<u64> = (1..=frames as u64).collect();
        let mut evicted = vec![0u64; 64];
        let mut next_page = frames as u64 + 1;
        let mut i = 0usize;
        group.bench_function(kind.to_string(), |b| {
            b.iter(|| {
                let victim = policy.next_candidate(&hooks).expect("a full pool has a victim");
                let v = victim.index();
                policy.on_remove(victim, true, &hooks.0[v]);
                let slot = i % evicted.len();
                let back = evicted[slot];
                evicted[slot] = pages[v];
                // A recent victim returns every fifth miss. Ring entries are never resident: a
                // page leaves the ring only by coming back, and its slot then takes the victim.
                let page = if i.is_multiple_of(5) && back != 0 {
                    back
                } else {
                    next_page += 1;
                    next_page
                };
                pages[v] = page;
                policy.on_insert(victim, PageId::new(page).expect("small page id"), &hooks.0[v]);
                // Keep hits flowing so that clocks find referenced frames.
                let f = rng.gen_range(0..frames);
                policy.on_hit(frame(f), &hooks.0[f]);
                i += 1;
                black_box(victim)
            });
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(1))
}

criterion_group! { name = benches; config = config(); targets = hits, misses }
criterion_main!(benches);
