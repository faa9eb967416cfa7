//! Gilbert 2017: Figs. 1.5/3.1 (LRU stack depths), 2.3 and 3.4-3.9 (TPC-C against the pool
//! size, three policies, swizzling off and on), 2.7/2.8 (fix() inside TPC-C), 2.12 (long runs),
//! Figs. 3.4/3.5/3.9 on lookups, and the isolated fix() hit loop beside Fig. 2.7.
//!
//! Pools below the data read the device (`--direct-io`), as the thesis's SSDs did. The TPC-C
//! pool sizes are the thesis's 100 MiB to 2 GiB of its 13.22 GiB database (0.74% to 15.1%),
//! then 25%, 50% and (for Fig. 2.3's saturation) 100%; `--quick` keeps six of them.

use super::{Figure, Io, Paper, Scale};

/// The paper's entries, in the report's order (laid out by hand: one figure's scales read
/// side by side).
#[rustfmt::skip]
pub(super) const FIGURES: &[Figure] = &[
    Figure {
        id: "gilbert-stack-depth",
        paper: Paper::Gilbert,
        figures: &["1.5", "3.1"],
        title: "LRU stack depths of TPC-C's page references, 1 and more threads",
        claim: "About 63% (1 thread) and 54% (100 threads) of references have an LRU distance below 20; \
                1,095 frames of 1,691,576 pages give LRU a 75% hit ratio (500,000 transactions, 100 warehouses).",
        io: Io::None,
        tiny: Scale {
            args: &["experiment", "gilbert-stack-depth", "--warehouses", "1", "--small-catalog", "--threads", "1,2", "--transactions", "1000"],
            secs: 2,
        },
        quick: Scale {
            args: &["experiment", "gilbert-stack-depth", "--warehouses", "1", "--threads", "1,4", "--transactions", "20000"],
            secs: 8,
        },
        full: Scale {
            args: &["experiment", "gilbert-stack-depth", "--warehouses", "20", "--threads", "1,100", "--transactions", "500000"],
            secs: 85,
        },
    },
    Figure {
        id: "gilbert-pools",
        paper: Paper::Gilbert,
        figures: &["2.3", "3.4", "3.5", "3.6", "3.7", "3.8", "3.9"],
        title: "TPC-C against the pool size: RANDOM, GCLOCK and CAR, swizzling off and on; throughput, miss ratio, evictioner time per call and in total",
        claim: "Swizzling gives TPC-C no throughput gain at any pool size (Fig. 2.3, RANDOM); CAR misses 25-55% less \
                than GCLOCK at 100-2000 MiB but its evictioner costs about 28-30 times GCLOCK's per call and about \
                7% more in total (Figs. 3.4/3.5/3.9); per policy, swizzling on against off changes throughput by a \
                few percent at most (Figs. 3.6-3.8).",
        io: Io::Direct,
        tiny: Scale {
            args: &["experiment", "gilbert-pools", "--warehouses", "1", "--small-catalog", "--fractions", "4%,25%", "--duration", "0.2", "--repeat", "1", "--direct-io"],
            secs: 8,
        },
        quick: Scale {
            args: &["experiment", "gilbert-pools", "--warehouses", "1", "--threads", "cores:8", "--fractions", "1.85%,3.7%,7.6%,15.1%,25%,50%", "--duration", "1", "--repeat", "1", "--direct-io"],
            secs: 50,
        },
        full: Scale {
            args: &["experiment", "gilbert-pools", "--warehouses", "20", "--threads", "cores:8", "--duration", "30", "--repeat", "3", "--direct-io"],
            secs: 7200,
        },
    },
    Figure {
        id: "gilbert-policies",
        paper: Paper::Gilbert,
        figures: &["3.4", "3.5", "3.9"],
        title: "RANDOM, GCLOCK and CAR on Zipf lookups: hit ratio, throughput, evictioner time per call and in total",
        claim: "CAR misses 18-57% less than GCLOCK; its evictioner costs 28-30 times GCLOCK's per call but only about 7% \
                more in total; RANDOM's costs 25-50% less per call; the ranking does not change with swizzling (TPC-C there).",
        io: Io::Direct,
        tiny: Scale {
            args: &["experiment", "gilbert-policies", "--policies", "random,gclock,car", "--mode", "traditional,swizzling", "--records", "20000", "--fractions", "25%", "--duration", "0.1", "--warmup", "0", "--repeat", "1", "--direct-io"],
            secs: 3,
        },
        quick: Scale {
            args: &["experiment", "gilbert-policies", "--policies", "random,gclock,car", "--mode", "traditional,swizzling", "--records", "500000", "--fractions", "4%,15%,50%", "--duration", "0.5", "--warmup", "0.2", "--repeat", "1", "--direct-io"],
            secs: 22,
        },
        full: Scale {
            args: &["experiment", "gilbert-policies", "--policies", "random,gclock,car", "--mode", "traditional,swizzling", "--records", "20000000", "--fractions", "1%,2%,4%,8%,15%,25%,50%", "--duration", "10", "--repeat", "3", "--direct-io"],
            secs: 1650,
        },
    },
    Figure {
        id: "gilbert-fix-time",
        paper: Paper::Gilbert,
        figures: &["2.7", "2.8"],
        title: "fix() inside TPC-C by hit or miss and latch mode, swizzling off and on, at 150% and 3.7% of the data",
        claim: "With the data in the pool, fix() is about 30% faster with swizzling (0.7 of the page table's time; no \
                misses after the warm-up); at 500 MiB swizzling is slower, even on hits (unexplained).",
        io: Io::Direct,
        tiny: Scale {
            args: &["experiment", "gilbert-fix-time", "--warehouses", "1", "--small-catalog", "--fractions", "3.7%,150%", "--duration", "0.3", "--repeat", "1", "--direct-io"],
            secs: 5,
        },
        quick: Scale {
            args: &["experiment", "gilbert-fix-time", "--warehouses", "1", "--threads", "cores:8", "--fractions", "3.7%,150%", "--duration", "1.5", "--repeat", "2", "--direct-io"],
            secs: 18,
        },
        full: Scale {
            args: &["experiment", "gilbert-fix-time", "--warehouses", "20", "--threads", "cores:8", "--fractions", "3.7%,150%", "--duration", "60", "--repeat", "3", "--direct-io"],
            secs: 925,
        },
    },
    Figure {
        id: "gilbert-long-run",
        paper: Paper::Gilbert,
        figures: &["2.12"],
        title: "Long TPC-C runs, swizzling off and on, as a time series",
        claim: "In 50-minute runs swizzling raises TPC-C's throughput by up to 18%.",
        io: Io::Direct,
        tiny: Scale {
            args: &["experiment", "gilbert-long-run", "--warehouses", "1", "--small-catalog", "--fractions", "25%,100%", "--duration", "0.4", "--sample", "0.2", "--direct-io"],
            secs: 4,
        },
        quick: Scale {
            args: &["experiment", "gilbert-long-run", "--warehouses", "1", "--threads", "cores:8", "--fractions", "25%,100%", "--duration", "4", "--sample", "1", "--direct-io"],
            secs: 20,
        },
        full: Scale {
            args: &["experiment", "gilbert-long-run", "--warehouses", "20", "--threads", "cores:8", "--fractions", "25%,100%", "--duration", "3000", "--sample", "30", "--direct-io"],
            secs: 12850,
        },
    },
    Figure {
        id: "gilbert-fix",
        paper: Paper::Gilbert,
        figures: &["2.7"],
        title: "fix() hits in an isolated loop (beside Fig. 2.7's fix() inside TPC-C)",
        claim: "No paper figure for an isolated loop: Gilbert's about 0.7 (swizzled over page-table fix()) was measured \
                inside TPC-C (gilbert-fix-time compares with it); here only the direction is claimed.",
        io: Io::None,
        tiny: Scale {
            args: &["experiment", "fix", "--records", "20000", "--fixes", "20000", "--repeat", "1"],
            secs: 1,
        },
        quick: Scale {
            args: &["experiment", "fix", "--records", "200000", "--fixes", "2000000", "--repeat", "3"],
            secs: 3,
        },
        full: Scale { args: &["experiment", "fix", "--records", "1000000", "--fixes", "20000000", "--repeat", "5"], secs: 20 },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id is unique and says `gilbert`; every entry names figures; quick stays in its
    /// budget of 160 seconds; every entry that reads a database below its size reads it with
    /// O_DIRECT at every scale, and one that says `none` never asks for it.
    #[test]
    fn entries_are_consistent_and_quick_fits_the_budget() {
        let figs = FIGURES;
        let mut ids: Vec<&str> = figs.iter().map(|f| f.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), figs.len());
        let quick: u32 = figs.iter().map(|f| f.quick.secs).sum();
        assert!(quick <= 160, "quick takes {quick} s");
        for f in figs {
            assert!(
                f.id.starts_with("gilbert-") && !f.figures.is_empty() && f.paper == Paper::Gilbert,
                "{}",
                f.id
            );
            for s in [f.tiny, f.quick, f.full] {
                assert_eq!(s.args[0], "experiment", "{}", f.id);
                assert_eq!(s.args.contains(&"--direct-io"), f.io == Io::Direct, "{}: {:?}", f.id, s.args);
                assert!(!s.args.contains(&"--out"), "{}", f.id);
            }
            assert!(f.tiny.secs <= f.quick.secs && f.quick.secs <= f.full.secs, "{}", f.id);
        }
    }
}
