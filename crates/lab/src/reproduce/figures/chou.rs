//! Chou and DeWitt 1986: Figs. 2-5, one simulator run (the sharing claims of Figs. 3 and 4
//! compare them with Fig. 2, so the four figures are one command).

use super::{Figure, Io, Paper, Scale};

/// The paper's entries, in the report's order (laid out by hand: one figure's scales read
/// side by side).
#[rustfmt::skip]
pub(super) const FIGURES: &[Figure] = &[Figure {
    id: "chou-dbmin",
    paper: Paper::Chou,
    figures: &["2", "3", "4", "5"],
    title: "Throughput against concurrent queries for DBMIN, HOT, WS, RAND, FIFO and CLOCK: no, half and \
            full data sharing, and the simple algorithms with feedback load control",
    claim: "No sharing, NCQ >= 8: DBMIN 7-13% above HOT and 25-45% above WS; RAND, FIFO and CLOCK thrash. \
            Throughput rises with sharing for every algorithm; half sharing ranks them as no sharing; under \
            full sharing they are close in M1 and M2 (RAND and FIFO slightly worse) and diverge in M3. With \
            load control all three simple algorithms beat WS and CLOCK comes very close to HOT.",
    io: Io::None,
    tiny: Scale {
        args: &["sim", "chou-dbmin", "--quick", "--ncq", "2,8,16", "--jobs", "2"],
        secs: 5,
    },
    quick: Scale { args: &["sim", "chou-dbmin", "--quick", "--ncq", "1,4,8,12,16", "--jobs", "2"], secs: 3 },
    full: Scale { args: &["sim", "chou-dbmin", "--jobs", "2"], secs: 75 },
}];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scale is a `sim chou-dbmin` command line covering Figs. 2-5 (`figures.rs` parses
    /// it).
    #[test]
    fn every_scale_runs_the_default_figures() {
        for f in FIGURES {
            for s in [f.tiny, f.quick, f.full] {
                assert_eq!(s.args[..2], ["sim", "chou-dbmin"], "{}", f.id);
                assert!(!s.args.contains(&"--figures"), "the default runs Figs. 2-5");
            }
        }
    }
}
