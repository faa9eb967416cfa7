//! Lersch 2015: decoupled checkpoints (Figs. 5.1-5.4), the decoupled page cleaner (Figs.
//! 5.5-5.8) and, our own experiment beside the thesis, instant restart from the log archive
//! (the thesis describes instant restart in Sec. 2.1.1 and measures no restart).
//!
//! Each sweep's intervals are shorter than its runs at every scale (a test below says so): an
//! interval as long as the run never comes round while it is measured, so that point would show
//! nothing of the swept setting. The thesis swept the cleaner to 100 s in 15-minute runs; `--full`
//! stops at 10 s in 30-second runs.

use super::{Figure, Io, Paper, Scale};

/// The paper's entries, in the report's order (laid out by hand: one figure's scales read
/// side by side).
#[rustfmt::skip]
pub(super) const FIGURES: &[Figure] = &[
    Figure {
        id: "lersch-checkpoints",
        paper: Paper::Lersch,
        figures: &["5.1", "5.3"],
        title: "TPC-B throughput and CPU against the checkpoint interval, the log on disk",
        claim: "Classical throughput rises as checkpoints get rarer; above 1000 ms classical and decoupled \
                checkpoints give equal throughput, the decoupled ones using slightly more CPU (24 hardware \
                threads, log on its own SSD; the thesis gives no numbers).",
        io: Io::PageCache,
        tiny: Scale {
            args: &["experiment", "lersch-checkpoints", "--intervals", "1,250", "--branches", "1", "--threads", "1", "--duration", "0.6", "--repeat", "1"],
            secs: 5,
        },
        quick: Scale {
            args: &["experiment", "lersch-checkpoints", "--intervals", "1,100,1000", "--branches", "cores:24", "--threads", "cores:24", "--duration", "2", "--repeat", "1"],
            secs: 19,
        },
        full: Scale {
            args: &["experiment", "lersch-checkpoints", "--intervals", "1,100,1000,10000", "--branches", "cores:24", "--threads", "cores:24", "--duration", "30", "--repeat", "3"],
            secs: 775,
        },
    },
    Figure {
        id: "lersch-checkpoints-mem",
        paper: Paper::Lersch,
        figures: &["5.2", "5.4"],
        title: "TPC-B throughput and CPU against the checkpoint interval, the log in memory",
        claim: "With the log on a memory file system decoupled checkpoints give higher, constant throughput \
                and classical ones the same pattern as on SSD; both use more CPU than with the log on SSD.",
        io: Io::PageCache,
        tiny: Scale {
            args: &["experiment", "lersch-checkpoints", "--log-in-memory", "--intervals", "1,250", "--branches", "1", "--threads", "1", "--duration", "0.6", "--repeat", "1"],
            secs: 5,
        },
        quick: Scale {
            args: &["experiment", "lersch-checkpoints", "--log-in-memory", "--intervals", "1,100,1000", "--branches", "cores:24", "--threads", "cores:24", "--duration", "2", "--repeat", "1"],
            secs: 18,
        },
        full: Scale {
            args: &["experiment", "lersch-checkpoints", "--log-in-memory", "--intervals", "1,100,1000,10000", "--branches", "cores:24", "--threads", "cores:24", "--duration", "30", "--repeat", "3"],
            secs: 760,
        },
    },
    Figure {
        id: "lersch-cleaner",
        paper: Paper::Lersch,
        figures: &["5.5", "5.6", "5.8"],
        title: "TPC-B throughput, CPU and pages written against the page cleaner's interval, the log on disk",
        claim: "With the log on SSD the decoupled cleaner gives no significant gain over the classical one; \
                throughput barely changes with the interval (1 ms to 100 s); both cleaners use similar CPU; \
                the write bandwidth is largely independent of the interval and similar for both (the thesis \
                gives no numbers).",
        io: Io::PageCache,
        tiny: Scale {
            args: &["experiment", "lersch-cleaner", "--intervals", "1,100", "--branches", "1", "--threads", "1", "--duration", "0.3", "--repeat", "1"],
            secs: 4,
        },
        quick: Scale {
            args: &["experiment", "lersch-cleaner", "--intervals", "1,100,1000", "--branches", "cores:24", "--threads", "cores:24", "--duration", "2", "--repeat", "1"],
            secs: 23,
        },
        full: Scale {
            args: &["experiment", "lersch-cleaner", "--intervals", "1,10,100,1000,10000", "--branches", "cores:24", "--threads", "cores:24", "--duration", "30", "--repeat", "3"],
            secs: 920,
        },
    },
    Figure {
        id: "lersch-cleaner-mem",
        paper: Paper::Lersch,
        figures: &["5.5", "5.7", "5.8"],
        title: "The page cleaners with the log in memory",
        claim: "With the log in memory the decoupled cleaner reaches much higher throughput than the classical \
                one, though it still reads the log archive from its SSD; both use similar CPU; its write \
                bandwidth is the exception to the similar bandwidths of Fig. 5.8 (the thesis gives no numbers, \
                nor that exception's direction).",
        io: Io::PageCache,
        tiny: Scale {
            args: &["experiment", "lersch-cleaner", "--log-in-memory", "--intervals", "1,100", "--branches", "1", "--threads", "1", "--duration", "0.3", "--repeat", "1"],
            secs: 4,
        },
        quick: Scale {
            args: &["experiment", "lersch-cleaner", "--log-in-memory", "--intervals", "1,100,1000", "--branches", "cores:24", "--threads", "cores:24", "--duration", "2", "--repeat", "1"],
            secs: 23,
        },
        full: Scale {
            args: &["experiment", "lersch-cleaner", "--log-in-memory", "--intervals", "1,10,100,1000,10000", "--branches", "cores:24", "--threads", "cores:24", "--duration", "30", "--repeat", "3"],
            secs: 960,
        },
    },
    Figure {
        id: "lersch-restart",
        paper: Paper::Lersch,
        figures: &["Sec. 2.1.1"],
        title: "Restart time after a kill against the log since the checkpoint, classical against instant (our \
                own experiment beside the thesis)",
        claim: "Instant restart opens the database to new transactions once log analysis is done and redoes \
                pages on demand, so its open does not wait for REDO (Sec. 2.1.1, after Graefe, Guy and Sauer; \
                the thesis describes it without measuring it: direction only). Our own target, printed \
                beside the check: instant open within 0.1 s at 1 GiB of log.",
        io: Io::PageCache,
        tiny: Scale {
            args: &["experiment", "lersch-restart", "--log-sizes", "4MiB", "--records", "20000", "--repeat", "1"],
            secs: 5,
        },
        quick: Scale {
            args: &["experiment", "lersch-restart", "--log-sizes", "16MiB,64MiB", "--repeat", "1"],
            secs: 32,
        },
        full: Scale {
            args: &["experiment", "lersch-restart", "--log-sizes", "64MiB,256MiB,1GiB", "--repeat", "3"],
            secs: 180,
        },
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The value after `flag` in `args`.
    fn value<'a>(args: &[&'a str], flag: &str) -> Option<&'a str> {
        args.iter().position(|a| *a == flag).and_then(|i| args.get(i + 1).copied())
    }

    /// Every interval of every sweep, at every scale, is shorter than the scale's runs, so that
    /// every swept setting takes effect while measured (10,000 ms in 2-second runs did not).
    #[test]
    fn every_scale_s_intervals_fit_inside_its_runs() {
        let mut sweeps = 0;
        for f in FIGURES {
            for (scale, s) in [("tiny", f.tiny), ("quick", f.quick), ("full", f.full)] {
                let Some(intervals) = value(s.args, "--intervals") else { continue };
                sweeps += 1;
                let secs =
                    value(s.args, "--duration").unwrap_or_else(|| panic!("{} {scale}: no --duration", f.id));
                let run_ms = crate::support::units::parse_positive_seconds(secs).unwrap() * 1e3;
                for ms in intervals.split(',') {
                    let ms: f64 = ms.parse().unwrap();
                    assert!(ms < run_ms, "{} {scale}: an interval of {ms} ms in runs of {run_ms} ms", f.id);
                }
            }
        }
        assert_eq!(sweeps, 4 * 3, "the four sweeps at three scales");
    }
}
