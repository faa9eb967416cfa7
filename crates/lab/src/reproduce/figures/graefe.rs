//! Graefe et al. 2014: Figs. 10-14.

use super::{Figure, Io, Paper, Scale};

/// The paper's entries, in the report's order (laid out by hand: one figure's scales read
/// side by side).
#[rustfmt::skip]
pub(super) const FIGURES: &[Figure] = &[
    Figure {
        id: "graefe-fig10",
        paper: Paper::Graefe,
        figures: &["10", "11"],
        title: "Lookups as the data grows from 1/8 of the pool to several times it",
        claim: "With the working set in the 10 GB pool, swizzling is within 1-3% of main-memory and \
                traditional well below (main-memory 41-68% faster, Fig. 1); beyond the pool (O_DIRECT) \
                swizzling and traditional degrade alike, swizzling slightly lower, and main-memory collapses.",
        io: Io::Direct,
        tiny: Scale {
            args: &[
                "experiment", "graefe-fig10", "--direct-io", "--pool", "2MiB", "--max-factor", "2",
                "--duration", "0.05", "--warmup", "0", "--repeat", "1",
            ],
            secs: 3,
        },
        quick: Scale {
            args: &[
                "experiment", "graefe-fig10", "--direct-io", "--pool", "16MiB", "--max-factor", "4",
                "--duration", "0.4", "--warmup", "0.1", "--repeat", "2", "--threads", "cores:24",
            ],
            secs: 20,
        },
        full: Scale {
            args: &[
                "experiment", "graefe-fig10", "--direct-io", "--duration", "2", "--repeat", "3", "--threads",
                "cores:24",
            ],
            secs: 170,
        },
    },
    Figure {
        id: "graefe-fig12",
        paper: Paper::Graefe,
        figures: &["12"],
        title: "Random-order insertions into an index that fits in memory",
        claim: "24 threads adding 50M records to 10M: swizzling is equivalent to main-memory and both \
                out-perform the traditional buffer pool.",
        io: Io::None,
        tiny: Scale { args: &["experiment", "graefe-fig12", "--records", "12000", "--repeat", "1"], secs: 2 },
        quick: Scale {
            args: &["experiment", "graefe-fig12", "--records", "300000", "--repeat", "3", "--threads", "cores:24"],
            secs: 4,
        },
        full: Scale {
            args: &["experiment", "graefe-fig12", "--records", "6000000", "--repeat", "5", "--threads", "cores:24"],
            secs: 195,
        },
    },
    Figure {
        id: "graefe-fig13",
        paper: Paper::Graefe,
        figures: &["13"],
        title: "A drifting working set: a quarter of the hot key range replaced at every shift",
        claim: "0.1 GB hot range, 25% replaced every 60 s, 1 GB pool, O_DIRECT: a brief dip at every shift, \
                swizzling about twice the traditional throughput in the steady state, transitions as long \
                in both.",
        io: Io::Direct,
        tiny: Scale {
            args: &[
                "experiment", "graefe-fig13", "--direct-io", "--mode", "traditional,swizzling", "--records",
                "40000", "--hot", "1MiB", "--pool", "2MiB", "--interval", "0.3", "--shifts", "2", "--sample",
                "0.05", "--repeat", "1",
            ],
            secs: 3,
        },
        quick: Scale {
            args: &[
                "experiment", "graefe-fig13", "--direct-io", "--mode", "traditional,swizzling", "--records",
                "2M", "--hot", "32MiB", "--pool", "64MiB", "--interval", "2", "--shifts", "4", "--sample",
                "0.1", "--repeat", "2",
            ],
            secs: 45,
        },
        full: Scale {
            args: &[
                "experiment", "graefe-fig13", "--direct-io", "--mode", "traditional,swizzling", "--records",
                "8M", "--hot", "32MiB", "--pool", "320MiB", "--interval", "10", "--shifts", "8", "--sample",
                "0.25", "--repeat", "2",
            ],
            secs: 385,
        },
    },
    Figure {
        id: "graefe-fig14",
        paper: Paper::Graefe,
        figures: &["14"],
        title: "TPC-C with logging and locking on and off, the pool larger than the data",
        claim: "100 warehouses, 12 clients, warm pool: swizzling about 10% above traditional with logging and \
                locking on, about 50% with both off, and statistically equal to main-memory throughout.",
        io: Io::None,
        tiny: Scale {
            args: &[
                "experiment", "graefe-fig14", "--warehouses", "1", "--items", "2000", "--customers", "300",
                "--duration", "0.1", "--repeat", "1",
            ],
            secs: 5,
        },
        quick: Scale {
            args: &[
                "experiment", "graefe-fig14", "--warehouses", "1", "--items", "20000", "--customers", "600",
                "--duration", "1", "--repeat", "2", "--threads", "cores:12",
            ],
            secs: 30,
        },
        full: Scale {
            args: &[
                "experiment", "graefe-fig14", "--warehouses", "4", "--threads", "cores:1,12", "--duration", "5",
                "--repeat", "3",
            ],
            secs: 440,
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scale of every entry is an `experiment` command line named as the entry (its
    /// options parse: `figures.rs`), and the entries that say direct I/O ask for it at every
    /// scale.
    #[test]
    fn every_scale_names_its_entry_and_direct_io_is_asked_for() {
        for f in FIGURES {
            assert_eq!(f.paper, Paper::Graefe);
            for s in [f.tiny, f.quick, f.full] {
                assert_eq!(s.args.first(), Some(&"experiment"), "{}", f.id);
                assert_eq!(s.args.get(1), Some(&f.id), "{}: one name per experiment", f.id);
                assert_eq!(s.args.contains(&"--direct-io"), f.io == Io::Direct, "{}", f.id);
                assert!(!s.args.contains(&"--out"), "reproduce adds --out");
            }
        }
    }
}
