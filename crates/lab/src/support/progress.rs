//! Progress on stderr (bars and lines), only when stderr is a terminal: stdout carries the
//! tables, for scripts, and a redirected run stays quiet.

use indicatif::{ProgressBar, ProgressStyle};
use std::fmt;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Status lines on stderr, only when stderr is a terminal.
#[derive(Clone, Copy, Debug)]
pub struct Progress(bool);

impl Progress {
    /// Progress on stderr if it is a terminal.
    #[must_use]
    pub fn on_terminal() -> Progress {
        Progress(std::io::stderr().is_terminal())
    }

    /// No progress at all (tests, scripted runs).
    #[must_use]
    pub fn off() -> Progress {
        Progress(false)
    }

    /// Whether progress is shown.
    #[must_use]
    pub fn is_on(self) -> bool {
        self.0
    }

    /// Prints `msg` on stderr if progress is on.
    pub fn say(self, msg: fmt::Arguments<'_>) {
        if self.0 {
            eprintln!("{msg}");
        }
    }

    /// A progress bar over `len` items on stderr (hidden when progress is off).
    #[must_use]
    pub fn counter(self, len: u64, msg: String) -> ProgressBar {
        if !self.0 {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(len).with_message(msg);
        if let Ok(style) = ProgressStyle::with_template("{msg:28} [{bar:30}] {pos}/{len} ({eta} left)") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    }

    /// Sleeps `secs` seconds, showing the time as a bar (a plain sleep when progress is off).
    pub fn wait(self, secs: f64, msg: String) {
        if !self.0 {
            std::thread::sleep(Duration::from_secs_f64(secs));
            return;
        }
        let total = (secs * 1000.0).round() as u64;
        let bar = ProgressBar::new(total).with_message(msg);
        if let Ok(style) = ProgressStyle::with_template("{msg:28} [{bar:30}] {elapsed} of {len} ms") {
            bar.set_style(style.progress_chars("=> "));
        }
        let start = Instant::now();
        loop {
            let done = start.elapsed().as_millis() as u64;
            if done >= total {
                break;
            }
            bar.set_position(done);
            std::thread::sleep(Duration::from_millis(100).min(Duration::from_millis(total - done)));
        }
        bar.finish_and_clear();
    }
}
