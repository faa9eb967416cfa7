//! `swizzledb reproduce`: every figure of the five papers in one run, and a report of them.
//!
//! The run is a list of [`figures::Figure`]s, each one `swizzledb` command run as a child
//! process with `--out DIR/<id>`: its stdout (the tables) goes to `DIR/<id>/stdout.txt`, its
//! stderr to `stderr.txt`, and the experiment itself writes its rows, charts and
//! `<name>.checks.json` there. When the child has ended, `DIR/<id>/figure.json` records how
//! (written last, by rename: a figure is finished exactly when that file says `ok`). After each
//! figure the report, `DIR/index.html`, is written again from what the directory holds
//! ([`report`]), so an interrupted run leaves a report of what it finished.
//!
//! `DIR/reproduce.json` holds the run's scale, its figures and its environment. `--resume`
//! continues a run in the same directory at the same scale, with the run's own figures (and
//! those `--only` adds): finished figures are kept, a figure that failed or was interrupted is
//! run again from an empty directory — or, if its command keeps its own finished parts
//! ([`figures::RESUMABLE`]), from its directory as it is, with `--resume`.

pub mod figures;
pub mod report;

use clap::Args;
use serde::{Deserialize, Serialize};
use std::error::Error;
use std::fs;
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::support::environment::Environment;
use crate::support::output::write_atomic;
use crate::Usage;
use figures::{Figure, Paper, Scale};

/// The version of the files `reproduce` writes (`reproduce.json`, `figure.json`).
pub const SCHEMA: u32 = 1;

/// How large the runs are.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScaleName {
    /// Seconds per figure: every chart drawn and every check computed, the numbers meaningless
    /// (CI's test of the report).
    Tiny,
    /// All figures in under 10 minutes on 2 cores (the default).
    Quick,
    /// The papers' scale, as far as a 2-core machine with 24 GiB allows (hours).
    Full,
}

impl ScaleName {
    /// `tiny`, `quick` or `full`.
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            ScaleName::Tiny => "tiny",
            ScaleName::Quick => "quick",
            ScaleName::Full => "full",
        }
    }

    /// The figure's run at this scale.
    #[must_use]
    pub fn of(self, f: &Figure) -> Scale {
        match self {
            ScaleName::Tiny => f.tiny,
            ScaleName::Quick => f.quick,
            ScaleName::Full => f.full,
        }
    }
}

/// Options of `swizzledb reproduce`.
#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// Directory for the report (index.html) and each figure's results, one subdirectory per
    /// figure; new or empty, unless --resume names a run's directory (one that holds its
    /// reproduce.json)
    #[arg(long, value_name = "DIR", required_unless_present = "list")]
    pub out: Option<PathBuf>,
    /// Every figure at a small scale, all in under 10 minutes on 2 cores (the default)
    #[arg(long, conflicts_with_all = ["full", "tiny"])]
    pub quick: bool,
    /// Every figure at the papers' scale, as far as the machine allows (hours)
    #[arg(long, conflicts_with = "tiny")]
    pub full: bool,
    /// Seconds per figure: every chart and check computed, the numbers meaningless (a test of
    /// the report itself)
    #[arg(long)]
    pub tiny: bool,
    /// Only these figures: PAPER (graefe, gilbert, ding, lersch, chou), PAPER:FIG (ding:4,
    /// gilbert:3.4) or a figure's id (graefe-fig13), comma-separated
    #[arg(long, value_name = "PAPER[:FIG]", value_delimiter = ',')]
    pub only: Vec<String>,
    /// Continue the run in --out: keep its finished figures, run the others (at the run's
    /// scale); with --only, add those figures to the run
    #[arg(long)]
    pub resume: bool,
    /// Directory for the figures' temporary databases, on a file system that accepts O_DIRECT
    /// (ext4, xfs; not tmpfs) for the figures that read the device (created if missing) [default: the
    /// system temp directory]
    #[arg(long, value_name = "DIR", value_parser = crate::experiments::common::parse_scratch_dir)]
    pub dir: Option<PathBuf>,
    /// Print the figures that would run, their commands and estimated time, and stop
    #[arg(long)]
    pub list: bool,
    /// Cores the figures' thread counts are capped at: each figure runs the paper's thread
    /// counts, or as many as there are cores where the paper used more [default: the cores of
    /// this machine]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub cores: Option<u16>,
}

impl ReproduceArgs {
    /// The scale asked for.
    #[must_use]
    pub fn scale(&self) -> ScaleName {
        if self.full {
            ScaleName::Full
        } else if self.tiny {
            ScaleName::Tiny
        } else {
            ScaleName::Quick
        }
    }

    /// The cores thread counts are capped at: `--cores`, else the machine's.
    #[must_use]
    pub fn cores(&self) -> usize {
        self.cores.map_or_else(machine_cores, usize::from)
    }
}

/// The cores this process may run on.
#[must_use]
pub fn machine_cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// `DIR/reproduce.json`: what the run is.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunManifest {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The scale every figure of the run uses.
    pub scale: ScaleName,
    /// The figures of the run, by id, in report order (a resumed run adds those it was asked for).
    pub figures: Vec<String>,
    /// Where the run was started.
    pub environment: Environment,
}

/// How a figure's run ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// The command exited with status 0.
    Ok,
    /// The command failed, or could not start.
    Failed,
}

/// `DIR/<id>/figure.json`: how one figure's run ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FigureRun {
    /// [`SCHEMA`].
    pub schema: u32,
    /// The figure's id.
    pub id: String,
    /// The scale it ran at.
    pub scale: ScaleName,
    /// Whether it succeeded.
    pub status: RunStatus,
    /// The exit code (`None` if killed by a signal or never started).
    pub exit_code: Option<i32>,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The command, as a shell would take it.
    pub command: String,
    /// What was scaled to the machine: e.g. `--threads: the paper's 24, here 2 (2 cores)`
    /// ([`figures::Scale::scaled`]).
    #[serde(default)]
    pub scaled: Vec<String>,
}

/// Selects figures by `--only` items: a paper, `paper:figure` or a figure id.
///
/// # Errors
/// An item names no figure: [`Usage`] listing what exists.
pub fn select(all: &[Figure], only: &[String]) -> Result<Vec<Figure>, Usage> {
    if only.is_empty() {
        return Ok(all.to_vec());
    }
    let mut keep = vec![false; all.len()];
    for item in only {
        let item = item.trim().to_ascii_lowercase();
        let (paper, fig) = match item.split_once(':') {
            Some((p, f)) => (p.to_string(), Some(figure_number(f))),
            None => (item.clone(), None),
        };
        let mut hit = false;
        for (i, f) in all.iter().enumerate() {
            let matches = if f.id == item {
                true
            } else if f.paper.key() == paper {
                fig.as_ref().is_none_or(|n| f.figures.iter().any(|x| figure_number(x) == *n))
            } else {
                false
            };
            if matches {
                keep[i] = true;
                hit = true;
            }
        }
        if !hit {
            let papers: Vec<&str> = Paper::ALL.iter().map(|p| p.key()).collect();
            // Each once, in the registry's order: experiments may share a figure.
            let mut known: Vec<String> = Vec::new();
            for name in
                all.iter().flat_map(|f| f.figures.iter().map(move |n| format!("{}:{n}", f.paper.key())))
            {
                if !known.contains(&name) {
                    known.push(name);
                }
            }
            return Err(Usage(format!(
                "--only {item}: no such figure; name a paper ({}), a paper and figure ({}) or a figure id",
                papers.join(", "),
                known.join(", ")
            )));
        }
    }
    Ok(all.iter().zip(keep).filter(|(_, k)| *k).map(|(f, _)| *f).collect())
}

/// A figure's number without its prefix, lower case: `Fig. 3.4`, `fig3.4` and `3.4` are `3.4`,
/// `Sec. 4.4` is `4.4`.
#[must_use]
pub fn figure_number(s: &str) -> String {
    let s = s.trim().to_ascii_lowercase();
    let s = ["figs", "fig", "sec"].iter().find_map(|p| s.strip_prefix(p)).unwrap_or(&s);
    s.trim_start_matches(['.', ' ']).to_string()
}

/// How the report names a figure's numbers: `Figs. 10, 11`, `Fig. 4`, `Sec. 4.4`.
#[must_use]
pub fn figure_label(f: &Figure) -> String {
    let numbered: Vec<&str> =
        f.figures.iter().copied().filter(|x| x.starts_with(|c: char| c.is_ascii_digit())).collect();
    let other: Vec<&str> =
        f.figures.iter().copied().filter(|x| !x.starts_with(|c: char| c.is_ascii_digit())).collect();
    let mut parts = Vec::new();
    match numbered.len() {
        0 => {}
        1 => parts.push(format!("Fig. {}", numbered[0])),
        _ => parts.push(format!("Figs. {}", numbered.join(", "))),
    }
    parts.extend(other.iter().map(|x| x.to_string()));
    parts.join("; ")
}

/// The command line of `args` as a shell takes it (words with special characters quoted).
#[must_use]
pub fn shell_words<'a>(args: impl IntoIterator<Item = &'a str>) -> String {
    args.into_iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,:/%=+@".contains(c)) {
                a.to_string()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The command that regenerates figure `f` at `scale` into `dir` on a machine with `cores`
/// cores.
#[must_use]
pub fn command_of(f: &Figure, scale: ScaleName, cores: usize, dir: &Path) -> String {
    let out = dir.join(f.id).display().to_string();
    let args = scale.of(f).resolve(cores);
    let mut words = vec!["swizzledb"];
    words.extend(args.iter().map(String::as_str));
    words.push("--out");
    words.push(&out);
    shell_words(words)
}

/// Runs `swizzledb reproduce` with `program` as the `swizzledb` binary each figure runs.
///
/// # Errors
/// Bad options or an unusable `--out` ([`Usage`], before anything runs), or the report cannot
/// be written.
pub fn execute(args: &ReproduceArgs, program: &Path) -> Result<ExitCode, Box<dyn Error>> {
    let all = figures::all();
    let chosen = match resumed_figures(args)? {
        Some(ids) => select(&all, &ids)?,
        None => select(&all, &args.only)?,
    };
    let scale = args.scale();
    let cores = args.cores();
    if args.list {
        let mut total = 0;
        let mut lines = Vec::new();
        for f in &chosen {
            let s = scale.of(f);
            total += s.secs;
            let out = args.out.clone().unwrap_or_else(|| PathBuf::from("DIR"));
            lines.push(format!("{:<24} ~{:>5} s  {}\n", f.id, s.secs, command_of(f, scale, cores, &out)));
        }
        lines.push(format!(
            "{} figures, about {} min {} s at --{}\n",
            chosen.len(),
            total / 60,
            total % 60,
            scale.key()
        ));
        crate::support::output::print(lines.concat())?;
        return Ok(ExitCode::SUCCESS);
    }
    let scratch = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    if args.dir.is_none() {
        // `--dir` was probed as it was parsed; the temp directory is probed here, before
        // anything runs, or every figure would fail for want of it.
        crate::experiments::common::probe_writable(&scratch).map_err(|e| {
            crate::UnusablePath(format!(
                "cannot write to the temp directory {} (TMPDIR) for the figures' databases: {e}; give --dir \
                 naming a directory you can write to",
                scratch.display()
            ))
        })?;
    }
    if chosen.iter().any(|f| f.io == figures::Io::Direct) {
        probe_direct_io(&scratch)?;
    }
    let Some(dir) = args.out.as_deref() else {
        return Err(Usage("--out DIR is needed to run the figures".into()).into());
    };
    let manifest = prepare(dir, scale, &chosen, &all, args.resume)?;
    let todo: Vec<&Figure> = chosen.iter().filter(|f| !finished(dir, f.id, scale)).collect();
    if todo.len() < chosen.len() {
        eprintln!("Resuming: {} of {} figures finished before.", chosen.len() - todo.len(), chosen.len());
    }
    report::write(dir, &manifest)?;
    let total: u64 = todo.iter().map(|f| u64::from(scale.of(f).secs.max(1))).sum();
    let bar = if io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg:24} [{bar:30}] {percent:>3}% ({elapsed} gone, ~{eta} left)",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut done_secs = 0;
    let mut failed = 0;
    for (i, f) in todo.iter().enumerate() {
        bar.set_message(f.id.to_string());
        let est = u64::from(scale.of(f).secs.max(1));
        let run = run_figure(f, scale, cores, dir, program, &scratch, args.resume, |elapsed| {
            bar.set_position(done_secs + elapsed.as_secs().min(est.saturating_sub(1)));
        })?;
        done_secs += est;
        bar.set_position(done_secs);
        let line = format!(
            "[{}/{}] {}: {} in {:.0} s",
            i + 1,
            todo.len(),
            f.id,
            match run.status {
                RunStatus::Ok => "done".to_string(),
                RunStatus::Failed => format!(
                    "FAILED (exit {:?}; {})",
                    run.exit_code,
                    dir.join(f.id).join("stderr.txt").display()
                ),
            },
            run.seconds
        );
        bar.suspend(|| eprintln!("{line}"));
        if run.status == RunStatus::Failed {
            failed += 1;
        }
        report::write(dir, &manifest)?;
    }
    bar.finish_and_clear();
    let index = dir.join("index.html");
    eprintln!("Wrote {}.", index.display());
    let summary = report::summarize(dir, &manifest);
    crate::support::output::print(format!("{summary}\n"))?;
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Whether `dir` takes a database opened with O_DIRECT, as the figures that read the device need:
/// a [`Usage`] error naming the directory if not (tmpfs refuses it), before anything runs.
fn probe_direct_io(dir: &Path) -> Result<(), Usage> {
    let probe = tempfile::Builder::new()
        .prefix("swizzledb-reproduce-probe")
        .tempdir_in(dir)
        .map_err(|e| Usage(format!("cannot use {} for the figures' databases: {e}", dir.display())))?;
    swizzledb::Database::builder()
        .logging(false)
        .direct_io(true)
        .create(probe.path().join("probe.swz"))
        .map(drop)
        .map_err(|e| {
            Usage(format!(
                "{} refuses direct I/O, which the figures that read the device need ({e}): give --dir on a \
                 disk file system (ext4, xfs), or leave those figures out with --only",
                dir.display()
            ))
        })
}

/// `--resume` without `--only`: the figures of the run in `--out` (its `reproduce.json`), so
/// that a run started with `--only` continues with exactly its own figures. `None` otherwise
/// (`--only` given, no `--resume`, or no run there yet), and the figures are `--only`'s.
fn resumed_figures(args: &ReproduceArgs) -> Result<Option<Vec<String>>, Box<dyn Error>> {
    let (true, true, Some(dir)) = (args.resume, args.only.is_empty(), args.out.as_deref()) else {
        return Ok(None);
    };
    let path = dir.join("reproduce.json");
    match fs::read_to_string(&path) {
        Ok(text) => {
            let run: RunManifest = serde_json::from_str(&text).map_err(|e| {
                Usage(format!(
                    "{} is not a reproduce run's manifest ({e}): choose another --out",
                    path.display()
                ))
            })?;
            Ok(Some(run.figures))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(crate::UnusablePath(format!("cannot read {}: {e}", path.display())).into()),
    }
}

/// Checks `--out` and writes (or, resuming, extends) its `reproduce.json`.
fn prepare(
    dir: &Path,
    scale: ScaleName,
    chosen: &[Figure],
    all: &[Figure],
    resume: bool,
) -> Result<RunManifest, Box<dyn Error>> {
    let path = dir.join("reproduce.json");
    let previous: Option<RunManifest> = match fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).map_err(|e| {
            Usage(format!("{} is not a reproduce run's manifest ({e}): choose another --out", path.display()))
        })?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(crate::UnusablePath(format!("cannot read {}: {e}", path.display())).into()),
    };
    let mut ids: Vec<String> = Vec::new();
    match previous {
        Some(p) if resume => {
            if p.scale != scale {
                return Err(Usage(format!(
                    "--resume: the run in {} is at --{}; resume it at that scale, or choose another --out",
                    dir.display(),
                    p.scale.key()
                ))
                .into());
            }
            ids = p.figures;
        }
        Some(_) => {
            return Err(Usage(format!(
                "{} holds a reproduce run: continue it with --resume, or choose another --out",
                dir.display()
            ))
            .into())
        }
        None => {
            // Resumed too: a run writes its manifest before anything else, so a directory
            // without one holds no run, and a figure's directory in it would be emptied.
            let non_empty = fs::read_dir(dir).map(|mut d| d.next().is_some()).unwrap_or(false);
            if non_empty {
                return Err(Usage(format!(
                    "--out {} is not empty and holds no reproduce run{}: choose a new or empty directory",
                    dir.display(),
                    if resume { " to resume" } else { "" }
                ))
                .into());
            }
        }
    }
    crate::support::output::prepare_out(Some(dir)).map_err(crate::UnusablePath)?;
    for f in chosen {
        if !ids.iter().any(|i| i == f.id) {
            ids.push(f.id.to_string());
        }
    }
    // Report order: the registry's.
    ids.sort_by_key(|id| all.iter().position(|f| f.id == id).unwrap_or(usize::MAX));
    let manifest =
        RunManifest { schema: SCHEMA, scale, figures: ids, environment: Environment::current().clone() };
    write_atomic(&path, &serde_json::to_vec_pretty(&manifest)?)?;
    Ok(manifest)
}

/// Whether `DIR/<id>` holds a successful run at `scale`.
#[must_use]
pub fn finished(dir: &Path, id: &str, scale: ScaleName) -> bool {
    read_run(dir, id).is_some_and(|r| r.status == RunStatus::Ok && r.scale == scale)
}

/// `DIR/<id>/figure.json`, if it is there and readable.
#[must_use]
pub fn read_run(dir: &Path, id: &str) -> Option<FigureRun> {
    let text = fs::read_to_string(dir.join(id).join("figure.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Runs one figure's command into an emptied `DIR/<id>` — or, when `resume` and the figure keeps
/// its own finished parts ([`figures::RESUMABLE`]), into `DIR/<id>` as it is, with `--resume` —
/// calling `tick` with the time gone about every 200 ms, and records how it ended.
#[allow(clippy::too_many_arguments)]
fn run_figure(
    f: &Figure,
    scale: ScaleName,
    cores: usize,
    dir: &Path,
    program: &Path,
    scratch: &Path,
    resume: bool,
    tick: impl Fn(Duration),
) -> Result<FigureRun, Box<dyn Error>> {
    let fig_dir = dir.join(f.id);
    let resume = resume && figures::RESUMABLE.contains(&f.id) && fig_dir.exists();
    if fig_dir.exists() && !resume {
        fs::remove_dir_all(&fig_dir).map_err(|e| format!("cannot empty {}: {e}", fig_dir.display()))?;
    }
    fs::create_dir_all(&fig_dir).map_err(|e| format!("cannot create {}: {e}", fig_dir.display()))?;
    let stdout = fs::File::create(fig_dir.join("stdout.txt"))?;
    let stderr = fs::File::create(fig_dir.join("stderr.txt"))?;
    let start = Instant::now();
    let spawned = Command::new(program)
        .args(scale.of(f).resolve(cores))
        .args(resume.then_some("--resume"))
        .arg("--out")
        .arg(&fig_dir)
        // Each command's temporary databases go to its default, the system temp directory.
        .env("TMPDIR", scratch)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn();
    let exit_code = match spawned {
        Ok(mut child) => loop {
            if let Some(status) = child.try_wait()? {
                break status.code();
            }
            tick(start.elapsed());
            std::thread::sleep(Duration::from_millis(200));
        },
        Err(e) => {
            fs::write(fig_dir.join("stderr.txt"), format!("cannot start {}: {e}\n", program.display()))?;
            None
        }
    };
    let run = FigureRun {
        schema: SCHEMA,
        id: f.id.to_string(),
        scale,
        status: if exit_code == Some(0) { RunStatus::Ok } else { RunStatus::Failed },
        exit_code,
        seconds: start.elapsed().as_secs_f64(),
        command: command_of(f, scale, cores, dir),
        scaled: scale.of(f).scaled(cores),
    };
    write_atomic(&fig_dir.join("figure.json"), &serde_json::to_vec_pretty(&run)?)?;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_every_paper_figure_is_selectable() {
        let all = figures::all();
        let mut ids: Vec<&str> = all.iter().map(|f| f.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all.len(), "duplicate figure ids");
        for f in &all {
            assert!(
                f.id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{}",
                f.id
            );
            assert!(!f.figures.is_empty() && !f.title.is_empty() && !f.claim.is_empty(), "{}", f.id);
            for n in f.figures {
                let sel = select(&all, &[format!("{}:{n}", f.paper.key())]).unwrap();
                assert!(sel.iter().any(|g| g.id == f.id), "{}:{n} does not select {}", f.paper, f.id);
            }
            let sel = select(&all, &[f.id.to_string()]).unwrap();
            assert!(sel.iter().any(|g| g.id == f.id));
            for s in [f.tiny, f.quick, f.full] {
                assert!(!s.args.is_empty() && !s.args.contains(&"--out"), "{}: {:?}", f.id, s.args);
            }
        }
    }

    #[test]
    fn selection_by_paper_figure_and_errors() {
        let all = figures::all();
        let graefe = select(&all, &["graefe".into()]).unwrap();
        assert!(!graefe.is_empty() && graefe.iter().all(|f| f.paper == Paper::Graefe));
        assert_eq!(select(&all, &[]).unwrap().len(), all.len());
        let e = select(&all, &["nobody".into()]).unwrap_err().0;
        assert!(e.contains("--only nobody") && e.contains("graefe"), "{e}");
        let e = select(&all, &["graefe:99".into()]).unwrap_err().0;
        assert!(e.contains("graefe:10"), "{e}");
        // `Fig.10`, `fig10` and `10` name the same figure.
        for spelling in ["graefe:10", "graefe:fig10", "Graefe:Fig.10", "graefe:Fig. 10"] {
            let s = select(&all, &[spelling.into()]).unwrap();
            assert!(s.iter().any(|f| f.id == "graefe-fig10"), "{spelling}");
        }
    }

    #[test]
    fn figure_numbers_and_labels() {
        assert_eq!(figure_number("Fig. 3.4"), "3.4");
        assert_eq!(figure_number("figs.10"), "10");
        assert_eq!(figure_number("Sec. 4.4"), "4.4");
        let f = figures::all()[0];
        let one = Figure { figures: &["4"], ..f };
        assert_eq!(figure_label(&one), "Fig. 4");
        let two = Figure { figures: &["10", "11"], ..f };
        assert_eq!(figure_label(&two), "Figs. 10, 11");
        let sec = Figure { figures: &["Sec. 4.4"], ..f };
        assert_eq!(figure_label(&sec), "Sec. 4.4");
    }

    #[test]
    fn shell_words_quote_what_a_shell_would_split() {
        assert_eq!(shell_words(["a", "--x", "1,2", "25%"]), "a --x 1,2 25%");
        assert_eq!(shell_words(["a b", "", "it's"]), r"'a b' '' 'it'\''s'");
    }
}
