//! Graefe et al. 2014: Figs. 10-14.

use super::{Figure, Io, Paper, Scale};

pub(super) fn figures() -> Vec<Figure> {
    vec![Figure {
        id: "graefe-fig10",
        paper: Paper::Graefe,
        figures: &["10", "11"],
        title: "Lookups as the data grows from 1/8 of the pool to 8 times it",
        claim: "Swizzling matches main-memory while the data fits the pool and degrades like traditional beyond it.",
        io: Io::PageCache,
        tiny: Scale {
            args: &["experiment", "graefe-fig10", "--pool", "2MiB", "--max-factor", "2", "--duration", "0.1", "--warmup", "0", "--repeat", "1"],
            secs: 3,
        },
        quick: Scale {
            args: &["experiment", "graefe-fig10", "--pool", "16MiB", "--max-factor", "4", "--duration", "0.5", "--warmup", "0.2", "--repeat", "1"],
            secs: 40,
        },
        full: Scale { args: &["experiment", "graefe-fig10"], secs: 600 },
    }]
}
