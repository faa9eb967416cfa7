//! CPU time of the whole process: every thread, ended ones included, user and system, from
//! `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)` (nanosecond resolution, where `/proc/self/stat`
//! counts in ticks of 10 ms). Unlike wall time, it does not count time threads spent waiting
//! or descheduled.

use std::time::Duration;

/// CPU time the process used so far; `None` where the system cannot tell.
#[must_use]
pub fn process_cpu() -> Option<Duration> {
    cpu_time::ProcessTime::try_now().ok().map(|t| t.as_duration())
}

/// [`process_cpu`] in seconds.
#[must_use]
pub fn process_cpu_secs() -> Option<f64> {
    process_cpu().map(|d| d.as_secs_f64())
}

/// Process CPU seconds since a reading of [`process_cpu_secs`]; `NaN` where either reading
/// failed (a measurement's CPU time: take the reading before it, call this after).
#[must_use]
pub fn secs_since(before: Option<f64>) -> f64 {
    process_cpu_secs().zip(before).map_or(f64::NAN, |(now, then)| now - then)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Process CPU time counts the work of a thread that has ended: a thread spins until the
    /// reading has grown by 20 ms, which must happen well within 10 s of wall time
    /// however busy the machine is.
    #[test]
    fn process_cpu_time_counts_a_busy_thread() {
        let Some(before) = process_cpu_secs() else { return };
        let grew = std::thread::spawn(move || {
            let start = Instant::now();
            let mut x = 0u64;
            while start.elapsed().as_secs() < 10 {
                for _ in 0..100_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
                if process_cpu_secs().is_some_and(|now| now >= before + 0.02) {
                    return true;
                }
            }
            false
        })
        .join()
        .unwrap();
        assert!(grew, "10 s of spinning never showed as 20 ms of process CPU time");
        let after = process_cpu_secs().expect("readable once, readable again");
        assert!(after >= before + 0.02, "{before} -> {after}: the ended thread's time is kept");
    }

    /// The clock resolves far below the 10 ms of /proc ticks: a short spin shows.
    #[test]
    fn resolution_is_finer_than_a_tick() {
        let before = process_cpu().expect("the clock exists on this system");
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(2) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let spent = process_cpu().unwrap() - before;
        assert!(spent > Duration::ZERO && spent < Duration::from_millis(500), "{spent:?}");
    }
}
