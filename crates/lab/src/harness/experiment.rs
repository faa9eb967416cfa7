//! The shape every experiment has: a plan (its options, validated before anything runs), a run,
//! then tables, checks of the paper's claims, result rows and charts made from the results.
//! [`execute`] does the rest the same way for all of them: the output directory is checked
//! before the run (bad input writes nothing), the caption and tables go to stdout, the rows to
//! `<NAME>.csv` and `<NAME>.json` with the run's environment (`<NAME>.env.json` beside the CSV),
//! the checks of the paper's claims to `<NAME>.checks.json`, the charts beside them.
//!
//! A new experiment is one file under `experiments/`: a plan type implementing [`Experiment`],
//! and (for the command line) a `clap` options struct that builds the plan; and one entry in
//! the registry of its kind (`experiments::registry`).

use serde::{Deserialize, Serialize};
use std::error::Error;
use std::fmt;
use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use crate::support::output::{prepare_out, print, write_checks, write_plot, write_rows};
use crate::support::plot::Chart;
use crate::support::progress::Progress;
use crate::UnusablePath;

/// An experiment's plan: what to run, and how to show what came of it.
pub trait Experiment {
    /// The experiment's one name: its module, its command and the stem of its output files.
    const NAME: &'static str;
    /// One row of `<NAME>.csv` / `<NAME>.json`: a flat serde struct whose fields are the columns
    /// (`docs/results-schema.md` documents each; a test checks it).
    type Row: Serialize + Default;
    /// What a run produced.
    type Results;

    /// What runs, in a line or two, printed before the run (nothing if empty).
    fn caption(&self) -> String;

    /// Runs the plan; progress goes to stderr through `progress`, nothing to stdout.
    ///
    /// # Errors
    /// The engine or the file system failed.
    fn run(&self, progress: Progress) -> Result<Self::Results, Box<dyn Error>>;

    /// The tables printed after the run.
    ///
    /// # Errors
    /// Writing to `out` failed.
    fn tables(&self, results: &Self::Results, out: &mut dyn Write) -> io::Result<()>;

    /// The paper's claims held against the results (none for a plain benchmark).
    fn checks(&self, _results: &Self::Results) -> Vec<Check> {
        Vec::new()
    }

    /// The result rows.
    fn rows(&self, results: &Self::Results) -> Vec<Self::Row>;

    /// Charts, each with the stem of its files.
    fn charts(&self, _results: &Self::Results) -> Vec<(String, Chart)> {
        Vec::new()
    }

    /// The exit status: failure if some configuration failed to run.
    fn status(&self, _results: &Self::Results) -> ExitCode {
        ExitCode::SUCCESS
    }

    /// The name of this plan's output files: [`Experiment::NAME`], unless one plan type serves
    /// two experiments (`bench insert` and `experiment graefe-fig12` share one).
    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// Files beyond `<name>.csv`, `.json` and the charts (a time series, rows appended to a
    /// file the user named); `out` is the output directory if one was given.
    ///
    /// # Errors
    /// A file cannot be written.
    fn write_extra(&self, _results: &Self::Results, _out: Option<&Path>) -> Result<(), Box<dyn Error>> {
        Ok(())
    }
}

/// How a result compares with the paper's claim.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The numbers agree within the stated tolerance.
    Holds,
    /// Some of the claim holds (the direction, or some of the points).
    Partial,
    /// The numbers disagree.
    Fails,
}

impl Verdict {
    /// `Holds` if `ok`, else `Fails`.
    #[must_use]
    pub fn of(ok: bool) -> Verdict {
        if ok {
            Verdict::Holds
        } else {
            Verdict::Fails
        }
    }

    /// ✓, ~ or ✗.
    #[must_use]
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Holds => "✓",
            Verdict::Partial => "~",
            Verdict::Fails => "✗",
        }
    }
}

/// One claim of a paper held against our numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// What is compared, e.g. `lookups: swizzling / main-memory in memory`.
    pub what: String,
    /// The paper's number and the condition it was measured under.
    pub paper: String,
    /// Ours, with our condition where it differs from the paper's.
    pub ours: String,
    /// How they compare: ✗ whenever the numbers disagree beyond the stated tolerance, even if
    /// the direction agrees.
    pub verdict: Verdict,
    /// Why, in one line, where the verdict is not ✓ or the comparison needs a word (the
    /// tolerance, a difference of condition); empty otherwise.
    #[serde(default)]
    pub reason: String,
}

impl Check {
    /// A check without a reason; add one with [`Check::because`].
    pub fn new(
        what: impl Into<String>,
        paper: impl Into<String>,
        ours: impl Into<String>,
        verdict: Verdict,
    ) -> Check {
        Check { what: what.into(), paper: paper.into(), ours: ours.into(), verdict, reason: String::new() }
    }

    /// The same check with `reason`.
    #[must_use]
    pub fn because(mut self, reason: impl Into<String>) -> Check {
        self.reason = reason.into();
        self
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (paper: {}) {}", self.what, self.ours, self.paper, self.verdict.mark())?;
        if !self.reason.is_empty() {
            write!(f, " — {}", self.reason)?;
        }
        Ok(())
    }
}

/// The verdict of a claim held at several points (pool sizes, thread counts, settings): every
/// point is checked, never a median or the best one. ✓ if `ok` holds at every point, ✗ if at
/// none (or there are no points), ~ otherwise; the reason names the points where it does not
/// hold (empty for ✓). `points` are `(label, value)`, e.g. `("at 20%", 0.93)`.
pub fn every_point(points: &[(String, f64)], ok: impl Fn(f64) -> bool) -> (Verdict, String) {
    let outside: Vec<String> =
        points.iter().filter(|&&(_, v)| !ok(v)).map(|(label, v)| format!("{v:.2} {label}")).collect();
    let verdict = if points.is_empty() || outside.len() == points.len() {
        Verdict::Fails
    } else if outside.is_empty() {
        Verdict::Holds
    } else {
        Verdict::Partial
    };
    let reason = match verdict {
        Verdict::Holds => String::new(),
        _ if points.is_empty() => "no point was measured".into(),
        _ => format!(
            "outside the tolerance at {} of {} points: {}",
            outside.len(),
            points.len(),
            outside.join(", ")
        ),
    };
    (verdict, reason)
}

/// Runs `experiment` and writes what it produced: caption, tables and checks on stdout; rows
/// and charts into `out` if given.
///
/// # Errors
/// `out` cannot be written (as [`UnusablePath`], before the run), the run failed, or an output file
/// could not be written.
pub fn execute<E: Experiment>(experiment: &E, out: Option<&Path>) -> Result<ExitCode, Box<dyn Error>> {
    prepare_out(out).map_err(UnusablePath)?;
    let caption = experiment.caption();
    if !caption.is_empty() {
        print(format!("{caption}\n"))?;
    }
    let results = experiment.run(Progress::on_terminal())?;
    let mut text = Vec::new();
    experiment.tables(&results, &mut text)?;
    let checks = experiment.checks(&results);
    if !checks.is_empty() {
        writeln!(text)?;
        for c in &checks {
            writeln!(text, "{c}")?;
        }
    }
    print(text)?;
    if let Some(dir) = out {
        write_rows(dir, experiment.name(), &experiment.rows(&results))?;
        write_checks(dir, experiment.name(), &checks)?;
        for (stem, chart) in experiment.charts(&results) {
            write_plot(Some(dir), &stem, &chart)?;
        }
    }
    experiment.write_extra(&results, out)?;
    Ok(experiment.status(&results))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_point_is_checked_not_a_median() {
        use super::{every_point, Verdict};
        let pts = |v: &[f64]| v.iter().enumerate().map(|(i, &x)| (format!("at {i}"), x)).collect::<Vec<_>>();
        let band = |v: f64| (0.9..=1.1).contains(&v);
        assert_eq!(every_point(&pts(&[1.0, 0.95, 1.05]), band), (Verdict::Holds, String::new()));
        // The median (1.0) is inside the band, but two of three points are not.
        let (v, reason) = every_point(&pts(&[0.5, 1.0, 1.6]), band);
        assert_eq!(v, Verdict::Partial);
        assert!(
            reason.contains("2 of 3") && reason.contains("0.50 at 0") && reason.contains("1.60 at 2"),
            "{reason}"
        );
        assert_eq!(every_point(&pts(&[0.5, 1.6]), band).0, Verdict::Fails);
        assert_eq!(every_point(&[], band).0, Verdict::Fails);
    }

    use super::*;

    #[test]
    fn a_check_says_both_numbers_and_the_verdict() {
        let c = Check {
            what: "inserts: swizzling / main-memory".into(),
            paper: "1.0".into(),
            ours: "0.97".into(),
            verdict: Verdict::of(true),
            reason: String::new(),
        };
        assert_eq!(c.to_string(), "inserts: swizzling / main-memory: 0.97 (paper: 1.0) ✓");
        let c = Check::new("x", "1.0 at 8 threads", "0.5 at 2 threads", Verdict::Fails).because("two cores");
        assert_eq!(c.to_string(), "x: 0.5 at 2 threads (paper: 1.0 at 8 threads) ✗ — two cores");
        assert_eq!(Verdict::of(false).mark(), "✗");
    }
}
