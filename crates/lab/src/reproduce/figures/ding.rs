//! Ding, Shan & Jiang 2015 (BP-Wrapper): Fig. 4 (lock time against the batch size), Figs. 8-9
//! (scalability with the threads, no misses), Fig. 10 (pool sizes with direct I/O) on the live
//! engine, and Figs. 11-13 on the buffer emulator. This machine's cores are few: 16 threads on
//! them stand for the paper's VM (Fig. 12), as many threads as cores for its physical machine
//! (Fig. 11).

use super::{Figure, Io, Paper, Scale};

/// The paper's entries, in the report's order (laid out by hand: one figure's scales read
/// side by side).
#[rustfmt::skip]
pub(super) const FIGURES: &[Figure] = &[
    Figure {
        id: "ding-fig4",
        paper: Paper::Ding,
        figures: &["4"],
        title: "Lock time per page access and hit ratio against BP-Wrapper's batch size (S = T = 1 to 64)",
        claim: "The lock holding time per access, locking cost included, is much larger at small batch sizes \
                and a batch of 64 amortizes it; the hit ratio does not change (2Q, DBT-1, 128 MB buffer, 16 \
                cores and a 16-vCPU VM; numbers only in the figure).",
        io: Io::PageCache,
        tiny: Scale {
            args: &[
                "experiment", "ding-lock-hold", "--records", "20000", "--batch-sizes", "1,8,64",
                "--thread-counts", "4", "--duration", "0.1", "--warmup", "0", "--repeat", "1",
                "--mode", "traditional", "--fraction", "25%",
            ],
            secs: 1,
        },
        quick: Scale {
            args: &[
                "experiment", "ding-lock-hold", "--records", "200000", "--batch-sizes",
                "1,2,4,8,16,32,64", "--thread-counts", "16", "--duration", "1", "--warmup", "0.3",
                "--repeat", "1", "--mode", "traditional", "--fraction", "25%",
            ],
            secs: 11,
        },
        full: Scale {
            args: &[
                "experiment", "ding-lock-hold", "--records", "2000000", "--batch-sizes",
                "1,2,4,8,16,32,64", "--thread-counts", "2,16", "--duration", "3", "--warmup", "1",
                "--repeat", "3", "--mode", "traditional", "--fraction", "25%",
            ],
            secs: 175,
        },
    },
    Figure {
        id: "ding-fig8-9",
        paper: Paper::Ding,
        figures: &["8", "9"],
        title: "Throughput and lock contention against threads, no misses: CLOCK, locked 2Q, prefetching \
                alone, batching alone and BP-Wrapper",
        claim: "pgBatching and pgBat-Pre overlap pgClock; pg2Q is 61.1/56.5/66.5% below pgClock at 16 cores; \
                batching cuts contention 197x to over 9,000x; pgPref cuts it 20.8-87.5% and gains up to \
                26.1% throughput but scales as poorly as pg2Q.",
        io: Io::PageCache,
        tiny: Scale {
            args: &[
                "experiment", "ding-bpwrapper", "--records", "20000", "--policies",
                "clock,locked-2q,bpw-batch-2q,bpw-pref-2q,bpw-2q", "--thread-counts", "1,4", "--duration",
                "0.1", "--warmup", "0", "--repeat", "1", "--mode", "traditional", "--fraction", "100%",
            ],
            secs: 2,
        },
        quick: Scale {
            args: &[
                "experiment", "ding-bpwrapper", "--records", "200000", "--policies",
                "clock,locked-2q,bpw-batch-2q,bpw-pref-2q,bpw-2q", "--thread-counts", "1,16", "--duration",
                "0.8", "--warmup", "0.2", "--repeat", "2", "--mode", "traditional", "--fraction", "100%",
            ],
            secs: 22,
        },
        full: Scale {
            args: &[
                "experiment", "ding-bpwrapper", "--records", "2000000", "--policies",
                "clock,2q,locked-2q,bpw-batch-2q,bpw-pref-2q,bpw-2q,locked-lru,bpw-lru", "--thread-counts",
                "1,2,4,8,16", "--duration", "3", "--warmup", "1", "--repeat", "3", "--mode", "traditional",
                "--fraction", "100%",
            ],
            secs: 485,
        },
    },
    Figure {
        id: "ding-fig10",
        paper: Paper::Ding,
        figures: &["10"],
        title: "Hit ratio and throughput (normalized to CLOCK) against the pool size with direct I/O: CLOCK, \
                locked 2Q, BP-Wrapper 2Q",
        claim: "Below 256 MB (of 5.6-6.8 GB) pg2Q and pgBat-Pre beat pgClock through higher hit ratios; from \
                512 MB pg2Q falls below pgClock while pgBat-Pre keeps its lead; the hit ratios of pg2Q and \
                pgBat-Pre overlap (8 cores, direct I/O; numbers only in the figure).",
        io: Io::Direct,
        tiny: Scale {
            args: &[
                "experiment", "ding-buffer-sizes", "--direct-io", "--records", "20000", "--fractions",
                "10%,50%", "--thread-counts", "2", "--duration", "0.1", "--warmup", "0", "--repeat", "1",
                "--mode", "traditional",
            ],
            secs: 1,
        },
        quick: Scale {
            args: &[
                "experiment", "ding-buffer-sizes", "--direct-io", "--records", "400000", "--page-size",
                "4096", "--fractions", "5%,10%,25%,50%", "--thread-counts", "8", "--duration", "1",
                "--warmup", "0.3", "--repeat", "1", "--mode", "traditional",
            ],
            secs: 21,
        },
        full: Scale {
            args: &[
                "experiment", "ding-buffer-sizes", "--direct-io", "--records", "2000000", "--fractions",
                "1%,2%,5%,10%,20%,40%", "--thread-counts", "1,2,4,8", "--duration", "3", "--warmup", "1",
                "--repeat", "3", "--mode", "traditional",
            ],
            secs: 880,
        },
    },
    Figure {
        id: "ding-fig11",
        paper: Paper::Ding,
        figures: &["11"],
        title: "Buffer emulator, as many threads as cores: accesses/s normalized to distributed locks against \
                the compute time between accesses",
        claim: "At 1 us bufLRU is 15x below bufDistLock; bufBat-Pref is 7% below bufDistLock, about 2x \
                bufBatching; bufBP-DistLock is 12% above bufDistLock; bufBP-prim is 29% below bufBat-Pref; \
                beyond 1 us BP-Wrapper is similar or slightly better than distributed locks (16 threads, 16 \
                cores, 1M of 10M pages, ~90% hits).",
        io: Io::None,
        tiny: Scale {
            args: &[
                "bench", "emulator", "--threads", "2", "--compute-us", "1,3", "--data-pages", "20000",
                "--buffer-pages", "2000", "--partitions", "4", "--free-lists", "4", "--reclaim", "16",
                "--duration", "0.05", "--warmup", "0", "--repeat", "1",
            ],
            secs: 1,
        },
        quick: Scale {
            args: &[
                "bench", "emulator", "--threads", "cores:16", "--compute-us", "1,3,6", "--variant",
                "lru,distlock,batching,bat-pref,bp-distlock,prim", "--data-pages", "2M", "--buffer-pages",
                "200000", "--duration", "0.25", "--warmup", "0.05", "--repeat", "1",
            ],
            secs: 8,
        },
        full: Scale {
            args: &[
                "bench", "emulator", "--threads", "cores:16", "--compute-us", "1,2,3,4,5,6", "--duration", "2",
                "--repeat", "3",
            ],
            secs: 370,
        },
    },
    Figure {
        id: "ding-fig12",
        paper: Paper::Ding,
        figures: &["12"],
        title: "Buffer emulator, 16 threads oversubscribing the cores (lock holders preempted, the paper's VM): \
                accesses/s normalized to distributed locks",
        claim: "On a 16-vCPU VM beside a busy VM, bufBat-Pref is 21% above bufDistLock at 1 us, an advantage \
                that fades as compute grows; bufBP-DistLock alike; bufBP-prim's gap is wider than on the \
                physical machine.",
        io: Io::None,
        tiny: Scale {
            args: &[
                "bench", "emulator", "--stand-in", "vm", "--threads", "16", "--compute-us", "1,3", "--data-pages", "20000",
                "--buffer-pages", "2000", "--partitions", "4", "--free-lists", "4", "--reclaim", "16",
                "--duration", "0.05", "--warmup", "0", "--repeat", "1",
            ],
            secs: 2,
        },
        quick: Scale {
            args: &[
                "bench", "emulator", "--stand-in", "vm", "--threads", "16", "--compute-us", "1,3,6", "--variant",
                "lru,distlock,batching,bat-pref,bp-distlock,prim", "--data-pages", "2M", "--buffer-pages",
                "200000", "--duration", "0.25", "--warmup", "0.05", "--repeat", "1",
            ],
            secs: 10,
        },
        full: Scale {
            args: &["bench", "emulator", "--stand-in", "vm", "--threads", "16", "--compute-us", "1,2,3,4,5,6", "--duration", "2", "--repeat", "3"],
            secs: 375,
        },
    },
    Figure {
        id: "ding-fig13",
        paper: Paper::Ding,
        figures: &["13"],
        title: "Buffer emulator, every access a miss: accesses/s against threads",
        claim: "With 3 us of compute and 1-16 threads, bufBP-prim saturates at 4 threads and then declines; \
                bufDistLock, bufBat-Pref and bufBP-DistLock scale, the two BP-Wrapper variants slightly above \
                bufDistLock.",
        io: Io::None,
        tiny: Scale {
            args: &[
                "bench", "emulator", "--all-miss", "--threads", "1,2,4", "--variant",
                "distlock,bat-pref,bp-distlock,prim", "--data-pages", "40000", "--buffer-pages", "2000",
                "--partitions", "4", "--free-lists", "4", "--reclaim", "16", "--duration", "0.05",
                "--warmup", "0", "--repeat", "1",
            ],
            secs: 1,
        },
        quick: Scale {
            args: &[
                "bench", "emulator", "--all-miss", "--threads", "1,2,4,8,16", "--variant",
                "distlock,bat-pref,bp-distlock,prim", "--data-pages", "2M", "--buffer-pages", "200000",
                "--duration", "0.25", "--warmup", "0.05", "--repeat", "1",
            ],
            secs: 10,
        },
        full: Scale {
            args: &["bench", "emulator", "--all-miss", "--duration", "2", "--repeat", "3"],
            secs: 315,
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids are unique and name the paper; every scale runs the same command; --out is left to
    /// `reproduce`; the direct-I/O figure asks for it at every scale.
    #[test]
    fn entries_are_consistent() {
        let figures = FIGURES;
        let mut ids: Vec<&str> = figures.iter().map(|f| f.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), figures.len());
        for f in figures {
            assert!(f.id.starts_with("ding-"), "{}", f.id);
            let scales = [f.tiny, f.quick, f.full];
            for s in scales {
                assert_eq!(s.args[..2], f.tiny.args[..2], "{}: one command at every scale", f.id);
                assert!(!s.args.contains(&"--out"), "{}", f.id);
                assert_eq!(s.args.contains(&"--direct-io"), f.io == Io::Direct, "{}", f.id);
            }
        }
        let quick: u32 = figures.iter().map(|f| f.quick.secs).sum();
        assert!(quick <= 110, "the Ding figures' quick runs take {quick} s, over their budget of 110");
    }
}
