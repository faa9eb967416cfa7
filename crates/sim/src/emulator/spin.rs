//! The compute phase: a busy spin calibrated once per process, so that the hot loop reads no
//! clock (README E3).

use std::sync::OnceLock;
use std::time::Instant;

/// Spin-loop iterations in one calibration sample.
const SAMPLE_SPINS: u64 = 200_000;

/// Iterations of `spin` per microsecond on this machine: the fastest of a few timed samples
/// (the least disturbed by other processes), measured on first use.
pub fn spins_per_us() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        let best = (0..5)
            .map(|_| {
                let start = Instant::now();
                spin(SAMPLE_SPINS);
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        // A timer too coarse to see the sample would give infinity; assume 1 ns per spin then.
        if best > 0.0 {
            SAMPLE_SPINS as f64 / (best * 1e6)
        } else {
            1e3
        }
    })
}

/// Busy-waits for `iterations` spin-loop hints.
#[inline]
pub(crate) fn spin(iterations: u64) {
    for _ in 0..iterations {
        std::hint::spin_loop();
    }
}
