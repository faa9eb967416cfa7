//! The report of a `reproduce` run: `DIR/index.html`, built only from what `DIR` holds (the
//! run's manifest, each figure's `figure.json`, `*.checks.json`, charts and `stdout.txt`), so
//! it can be written again at any time, after each figure and after a resumed run.
//!
//! The page is self-contained: no script, font or style from the network; the charts are the
//! PNG files beside it, linked relatively, so the directory can be moved or archived whole. A
//! small inline script counts, once the page has loaded, the images that loaded and the check
//! cells that are filled, and writes both onto `<body>` (`data-images-loaded`,
//! `data-checks-filled`, ...): the browser test reads them.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use super::figures::{self, Figure, Paper};
use super::{figure_label, read_run, FigureRun, RunManifest, RunStatus};
use crate::harness::experiment::{Check, Verdict};
use crate::support::output::write_atomic;

/// What the report knows of one figure.
#[derive(Debug)]
pub struct FigureReport {
    /// The registry's entry.
    pub figure: Figure,
    /// How its run ended, if it ran to the end.
    pub run: Option<FigureRun>,
    /// Its checks (empty if none were written).
    pub checks: Vec<Check>,
    /// Its charts, relative to the report's directory.
    pub images: Vec<String>,
    /// Its other result files (CSV, JSON, SVG), relative to the report's directory.
    pub files: Vec<String>,
    /// Its stdout: caption and tables.
    pub tables: String,
    /// The last lines of its stderr, if it failed.
    pub stderr_tail: String,
    /// The commit its result files were measured with (their `.env.json`), if they say.
    pub commit: Option<String>,
}

impl FigureReport {
    /// The figure's verdict and its reason: ✗ if it did not run to the end or any check fails,
    /// ~ if some check is partial, ✓ if every check holds.
    #[must_use]
    pub fn verdict(&self) -> (Verdict, String) {
        match &self.run {
            None => (Verdict::Fails, "not run yet (or interrupted): `--resume` runs it".into()),
            Some(r) if r.status == RunStatus::Failed => (
                Verdict::Fails,
                format!(
                    "the run failed (exit code {})",
                    r.exit_code.map_or("none".into(), |c| c.to_string())
                ),
            ),
            Some(_) if self.checks.is_empty() => (Verdict::Fails, "the run computed no check".into()),
            Some(_) => {
                let n = |v| self.checks.iter().filter(|c| c.verdict == v).count();
                let (h, p, f) = (n(Verdict::Holds), n(Verdict::Partial), n(Verdict::Fails));
                let v = if f > 0 {
                    Verdict::Fails
                } else if p > 0 {
                    Verdict::Partial
                } else {
                    Verdict::Holds
                };
                (v, format!("{h} ✓, {p} ~, {f} ✗"))
            }
        }
    }
}

/// Reads what `dir` holds of each figure of `manifest`.
#[must_use]
pub fn collect(dir: &Path, manifest: &RunManifest) -> Vec<FigureReport> {
    let all = figures::all();
    manifest
        .figures
        .iter()
        .filter_map(|id| all.iter().find(|f| f.id == id))
        .map(|f| {
            let fig_dir = dir.join(f.id);
            let run = read_run(dir, f.id);
            let mut names: Vec<PathBuf> = fs::read_dir(&fig_dir)
                .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
                .unwrap_or_default();
            names.sort();
            let rel = |p: &Path| format!("{}/{}", f.id, p.file_name().unwrap_or_default().to_string_lossy());
            let name_of = |p: &Path| p.file_name().unwrap_or_default().to_string_lossy().into_owned();
            let mut checks = Vec::new();
            let mut images = Vec::new();
            let mut files = Vec::new();
            let mut commit = None;
            for p in &names {
                let name = name_of(p);
                if name.ends_with(".env.json") && commit.is_none() {
                    commit = read_commit(p);
                }
                if name.ends_with(".checks.json") {
                    checks.extend(read_checks(p));
                } else if name.ends_with(".png") {
                    images.push(rel(p));
                } else if [".csv", ".json", ".svg", ".jsonl"].iter().any(|x| name.ends_with(x))
                    && name != "figure.json"
                {
                    files.push(rel(p));
                }
            }
            let tables = fs::read_to_string(fig_dir.join("stdout.txt")).unwrap_or_default();
            let stderr_tail = if run.as_ref().is_some_and(|r| r.status == RunStatus::Failed) {
                let text = fs::read_to_string(fig_dir.join("stderr.txt")).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                lines[lines.len().saturating_sub(12)..].join("\n")
            } else {
                String::new()
            };
            FigureReport { figure: *f, run, checks, images, files, tables, stderr_tail, commit }
        })
        .collect()
}

/// The commit (with ` (modified)` if the build was dirty) a result file's environment names.
fn read_commit(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    let env = doc.get("environment")?;
    let commit = env.get("commit")?.as_str()?.to_string();
    let dirty = env.get("dirty").and_then(serde_json::Value::as_bool) == Some(true);
    Some(if dirty { format!("{commit} (modified)") } else { commit })
}

fn read_checks(path: &Path) -> Vec<Check> {
    #[derive(serde::Deserialize)]
    struct Doc {
        rows: Vec<Check>,
    }
    fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Doc>(&t).ok())
        .map(|d| d.rows)
        .unwrap_or_default()
}

/// One line per figure and a total, for the terminal.
#[must_use]
pub fn summarize(dir: &Path, manifest: &RunManifest) -> String {
    let reports = collect(dir, manifest);
    let mut out = String::new();
    let mut count = [0usize; 3];
    for r in &reports {
        let (v, why) = r.verdict();
        count[v as usize] += 1;
        let _ = writeln!(out, "{} {:<24} {}", v.mark(), r.figure.id, why);
    }
    let _ = write!(
        out,
        "{} figures: {} ✓, {} ~, {} ✗ (report: {})",
        reports.len(),
        count[Verdict::Holds as usize],
        count[Verdict::Partial as usize],
        count[Verdict::Fails as usize],
        dir.join("index.html").display()
    );
    out
}

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A relative link: each path segment percent-encoded where HTML or a URL would misread it.
fn href(rel: &str) -> String {
    let mut o = String::new();
    for b in rel.bytes() {
        if b.is_ascii_alphanumeric() || b"-_./".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Holds => "holds",
        Verdict::Partial => "partial",
        Verdict::Fails => "fails",
    }
}

/// The page's style. The page never grows wider than the window: text tables (`<pre>`) scroll
/// sideways inside the page, cells of the HTML tables wrap long words, and every HTML table sits
/// in a `div.wide` that scrolls sideways should it still be too wide.
const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}\
.wide{max-width:100%;overflow-x:auto}\
table{border-collapse:collapse;margin:.5rem 0;max-width:100%}td,th{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top;text-align:left}\
table.checks td,table.summary td,table.environment td{overflow-wrap:anywhere}\
th{background:#f3f3f3}pre{background:#f8f8f8;padding:.5rem;overflow-x:auto;overflow-y:auto;white-space:pre;max-width:100%;box-sizing:border-box;max-height:32rem;font-size:.8rem}\
img{max-width:100%;border:1px solid #ddd;margin:.25rem 0}.holds{color:#176f2c}.partial{color:#9a6700}.fails{color:#b42318}\
td.verdict{font-weight:bold;text-align:center}article{border-top:2px solid #ddd;margin-top:2rem}code{font-size:.85rem;overflow-wrap:anywhere}";

/// The script that tells the browser test what loaded: counts on `<body>` once the page has.
const SELF_CHECK: &str = "window.addEventListener('load',function(){var b=document.body;\
var imgs=Array.prototype.slice.call(document.images);\
var ok=imgs.filter(function(i){return i.complete&&i.naturalWidth>0;});\
var cells=Array.prototype.slice.call(document.querySelectorAll('td.check'));\
var filled=cells.filter(function(c){return c.textContent.trim()!=='';});\
b.setAttribute('data-images-total',imgs.length);b.setAttribute('data-images-loaded',ok.length);\
b.setAttribute('data-checks-total',cells.length);b.setAttribute('data-checks-filled',filled.length);\
b.setAttribute('data-broken-images',imgs.filter(function(i){return ok.indexOf(i)<0;}).map(function(i){return i.getAttribute('src');}).join(' '));\
b.setAttribute('data-self-check','done');});";

/// Renders the report of `manifest`'s run from `dir`.
#[must_use]
pub fn render(dir: &Path, manifest: &RunManifest) -> String {
    let reports = collect(dir, manifest);
    let mut h = String::new();
    let env = &manifest.environment;
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>SwizzleDB: the papers reproduced</title>\n<style>{STYLE}</style>\n</head>\n<body data-figures=\"{}\">\n<h1>SwizzleDB: the papers reproduced</h1>\n",
        reports.len()
    );
    let _ = writeln!(
        h,
        "<p>Scale <b>--{}</b>. Every figure below was made by the command under it; the paper's claim is beside our check: \
         <span class=\"holds\">✓</span> the numbers agree within the stated tolerance, <span class=\"partial\">~</span> part of the claim holds, \
         <span class=\"fails\">✗</span> they disagree (the reason beside it).</p>",
        manifest.scale.key()
    );
    h.push_str(
        "<div class=\"wide\"><table class=\"environment\"><tr><th colspan=\"2\">Environment</th></tr>\n",
    );
    for (k, v) in [
        ("commit", format!("{}{}", env.commit, if env.dirty == Some(true) { " (modified)" } else { "" })),
        ("version", env.version.clone()),
        ("CPU", env.cpu.clone()),
        ("cores", env.cores.map_or("unknown".into(), |c| c.to_string())),
        ("kernel", format!("{} ({} {})", env.kernel, env.os, env.arch)),
        ("command", env.command.clone()),
    ] {
        let _ = writeln!(h, "<tr><td>{k}</td><td><code>{}</code></td></tr>", esc(&v));
    }
    h.push_str("</table></div>\n");

    // Summary.
    h.push_str("<h2 id=\"summary\">Summary</h2>\n<div class=\"wide\"><table class=\"summary\"><tr><th>paper</th><th>figure</th><th>what</th><th>I/O</th><th>check</th><th>why</th><th>seconds</th></tr>\n");
    for r in &reports {
        let (v, why) = r.verdict();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td class=\"verdict check {}\">{}</td><td>{}</td><td>{}</td></tr>",
            r.figure.paper.key(),
            r.figure.id,
            esc(&figure_label(&r.figure)),
            esc(r.figure.title),
            r.figure.io.key(),
            verdict_class(v),
            v.mark(),
            esc(&why),
            r.run.as_ref().map_or("—".into(), |x| format!("{:.0}", x.seconds)),
        );
    }
    h.push_str("</table></div>\n");

    for paper in Paper::ALL {
        let mine: Vec<&FigureReport> = reports.iter().filter(|r| r.figure.paper == paper).collect();
        if mine.is_empty() {
            continue;
        }
        let _ = writeln!(h, "<section id=\"paper-{}\">\n<h2>{}</h2>", paper.key(), esc(paper.citation()));
        let run_commit =
            format!("{}{}", env.commit, if env.dirty == Some(true) { " (modified)" } else { "" });
        for r in mine {
            figure_html(&mut h, r, &run_commit);
        }
        h.push_str("</section>\n");
    }
    let _ = write!(h, "<script>{SELF_CHECK}</script>\n</body>\n</html>\n");
    h
}

fn figure_html(h: &mut String, r: &FigureReport, run_commit: &str) {
    let f = &r.figure;
    let (v, why) = r.verdict();
    let _ = writeln!(
        h,
        "<article class=\"figure\" id=\"{}\">\n<h3>{} — {} <span class=\"{}\">{}</span></h3>",
        f.id,
        esc(&figure_label(f)),
        esc(f.title),
        verdict_class(v),
        v.mark()
    );
    let _ = writeln!(h, "<p class=\"claim\"><b>The paper:</b> {}</p>", esc(f.claim));
    let _ = writeln!(h, "<p class=\"io\"><b>I/O:</b> {}</p>", esc(f.io.describe()));
    if let Some(c) = r.commit.as_deref().filter(|c| *c != run_commit) {
        // A resumed run may hold figures measured by another build.
        let _ = writeln!(
            h,
            "<p class=\"commit\"><b>Measured with commit</b> <code>{}</code>, not the run's <code>{}</code>.</p>",
            esc(c),
            esc(run_commit)
        );
    }
    for img in &r.images {
        let _ = writeln!(h, "<img src=\"{}\" alt=\"{}\">", href(img), esc(img));
    }
    h.push_str("<div class=\"wide\"><table class=\"checks\"><tr><th>what</th><th>paper</th><th>ours</th><th>check</th><th>reason</th></tr>\n");
    if r.checks.is_empty() || r.run.as_ref().is_none_or(|x| x.status != RunStatus::Ok) {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>—</td><td class=\"verdict check {}\">{}</td><td>{}</td></tr>",
            esc(f.title),
            esc(f.claim),
            verdict_class(v),
            v.mark(),
            esc(&why)
        );
    } else {
        for c in &r.checks {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"verdict check {}\">{}</td><td>{}</td></tr>",
                esc(&c.what),
                esc(&c.paper),
                esc(&c.ours),
                verdict_class(c.verdict),
                c.verdict.mark(),
                esc(&c.reason)
            );
        }
    }
    h.push_str("</table></div>\n");
    if !r.stderr_tail.is_empty() {
        let _ = writeln!(
            h,
            "<p><b>The run failed;</b> the end of its stderr:</p>\n<pre class=\"stderr\">{}</pre>",
            esc(&r.stderr_tail)
        );
    }
    if !r.tables.trim().is_empty() {
        let _ = writeln!(h, "<pre class=\"tables\">{}</pre>", esc(r.tables.trim_end()));
    }
    let command = r.run.as_ref().map(|x| x.command.clone());
    if let Some(c) = command {
        let _ = writeln!(h, "<p class=\"command\"><b>Regenerate:</b> <code>{}</code></p>", esc(&c));
    }
    for scaled in r.run.iter().flat_map(|x| &x.scaled) {
        let _ = writeln!(h, "<p class=\"scaled\"><b>Scaled to this machine:</b> {}</p>", esc(scaled));
    }
    if !r.files.is_empty() {
        let links: Vec<String> = r
            .files
            .iter()
            .map(|p| format!("<a href=\"{}\">{}</a>", href(p), esc(p.rsplit('/').next().unwrap_or(p))))
            .collect();
        let _ = writeln!(h, "<p class=\"files\"><b>Results:</b> {}</p>", links.join(" · "));
    }
    h.push_str("</article>\n");
}

/// Writes `DIR/index.html` (through a temporary file and a rename).
///
/// # Errors
/// The file cannot be written.
pub fn write(dir: &Path, manifest: &RunManifest) -> std::io::Result<()> {
    write_atomic(&dir.join("index.html"), render(dir, manifest).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::{ScaleName, SCHEMA};
    use crate::support::environment::Environment;

    fn manifest(ids: &[&str]) -> RunManifest {
        RunManifest {
            schema: SCHEMA,
            scale: ScaleName::Tiny,
            figures: ids.iter().map(|s| s.to_string()).collect(),
            environment: Environment::current().clone(),
        }
    }

    /// A figure directory as a finished run leaves it.
    fn fake_run(dir: &Path, id: &str, status: RunStatus, checks: &[Check]) {
        let d = dir.join(id);
        fs::create_dir_all(&d).unwrap();
        crate::support::output::write_checks(&d, id, checks).unwrap();
        fs::write(d.join(format!("{id}.png")), b"png").unwrap();
        fs::write(d.join(format!("{id}.csv")), b"a\n1\n").unwrap();
        fs::write(d.join("stdout.txt"), "a <table> & more\n").unwrap();
        fs::write(d.join("stderr.txt"), "boom\n").unwrap();
        let run = FigureRun {
            schema: SCHEMA,
            id: id.into(),
            scale: ScaleName::Tiny,
            status,
            exit_code: Some(if status == RunStatus::Ok { 0 } else { 1 }),
            seconds: 1.0,
            command: format!("swizzledb x --out out/{id}"),
            scaled: vec![format!("--threads: the paper's 24, here 2 (2 cores) for {id}")],
        };
        fs::write(d.join("figure.json"), serde_json::to_vec(&run).unwrap()).unwrap();
    }

    #[test]
    fn the_report_shows_every_figure_with_its_checks_plot_and_command() {
        let dir = tempfile::tempdir().unwrap();
        let all = figures::all();
        assert!(all.len() >= 2);
        let (a, b) = (all[0].id, all[1].id);
        let holds = Check::new("ratio", "1.0 (paper's condition)", "0.98", Verdict::Holds);
        let fails = Check::new("speed-up", "+10%", "+1%", Verdict::Fails).because("two cores <not eight>");
        fake_run(dir.path(), a, RunStatus::Ok, &[holds, fails]);
        fake_run(dir.path(), b, RunStatus::Failed, &[]);
        let ids: Vec<&str> = all.iter().map(|f| f.id).collect();
        let html = render(dir.path(), &manifest(&ids));
        // Every figure of the run has its article and a summary row, run or not.
        for f in &all {
            assert!(html.contains(&format!("<article class=\"figure\" id=\"{}\">", f.id)), "{}", f.id);
            assert!(html.contains(&format!("href=\"#{}\"", f.id)), "{}", f.id);
        }
        assert!(html.contains(&format!("<img src=\"{a}/{a}.png\"")));
        assert!(html.contains("two cores &lt;not eight&gt;"), "reasons are escaped");
        assert!(html.contains("a &lt;table&gt; &amp; more"), "tables are escaped");
        assert!(html.contains(&format!("swizzledb x --out out/{a}")));
        let scaled = html.split("Scaled to this machine:</b> ").nth(1).unwrap_or_default();
        assert!(
            scaled.starts_with("--threads: the paper")
                && scaled.contains(&format!("here 2 (2 cores) for {a}"))
        );
        assert!(html.contains("the run failed (exit code 1)"));
        assert!(html.contains("<pre class=\"stderr\">boom</pre>"));
        assert!(html.contains("not run yet"), "figures without a run say so");
        // Every relative link points to a file that exists.
        for link in html.split("src=\"").skip(1).chain(html.split("href=\"").skip(1)) {
            let target = link.split('"').next().unwrap();
            if target.starts_with('#') || target.is_empty() {
                continue;
            }
            assert!(dir.path().join(target).exists(), "dangling link {target}");
        }
        let reports = collect(dir.path(), &manifest(&ids));
        assert_eq!(reports[0].verdict().0, Verdict::Fails, "one ✗ check makes the figure ✗");
        assert_eq!(reports[0].verdict().1, "1 ✓, 0 ~, 1 ✗");
        assert!(
            html.contains("<script>") && !html.contains("http://") && !html.contains("https://"),
            "nothing from the network"
        );
    }

    #[test]
    fn verdicts_of_a_figure() {
        let dir = tempfile::tempdir().unwrap();
        let f = figures::all()[0];
        let p = Check::new("x", "1", "0.8", Verdict::Partial);
        let ok = Check::new("y", "1", "1", Verdict::Holds);
        fake_run(dir.path(), f.id, RunStatus::Ok, &[ok.clone(), p]);
        let r = &collect(dir.path(), &manifest(&[f.id]))[0];
        assert_eq!(r.verdict().0, Verdict::Partial);
        fake_run(dir.path(), f.id, RunStatus::Ok, &[ok]);
        assert_eq!(collect(dir.path(), &manifest(&[f.id]))[0].verdict().0, Verdict::Holds);
        fake_run(dir.path(), f.id, RunStatus::Ok, &[]);
        let r = &collect(dir.path(), &manifest(&[f.id]))[0];
        assert_eq!(r.verdict(), (Verdict::Fails, "the run computed no check".into()));
    }

    #[test]
    fn a_figure_measured_by_another_build_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let all = figures::all();
        let (a, b) = (all[0].id, all[1].id);
        let ok = Check::new("y", "1", "1", Verdict::Holds);
        fake_run(dir.path(), a, RunStatus::Ok, std::slice::from_ref(&ok));
        fake_run(dir.path(), b, RunStatus::Ok, &[ok]);
        // `a`'s results come from the same build as the run; `b`'s from another.
        crate::support::output::write_environment(&dir.path().join(a).join(format!("{a}.env.json"))).unwrap();
        let env = serde_json::json!({"schema": 1, "environment": {"commit": "0123abc", "dirty": true}});
        fs::write(dir.path().join(b).join(format!("{b}.env.json")), env.to_string()).unwrap();
        let html = render(dir.path(), &manifest(&[a, b]));
        assert_eq!(html.matches("<p class=\"commit\">").count(), 1, "{html}");
        assert!(html.contains("<code>0123abc (modified)</code>, not the run's"));
    }

    /// The declarations of `selector`'s rule in [`STYLE`] (a rule listing several selectors
    /// counts for each).
    fn css_rule(selector: &str) -> Vec<&'static str> {
        STYLE
            .split('}')
            .filter_map(|rule| rule.split_once('{'))
            .filter(|(selectors, _)| selectors.split(',').any(|s| s.trim() == selector))
            .flat_map(|(_, body)| body.split(';'))
            .collect()
    }

    /// The page never widens: text tables scroll inside it, HTML tables wrap long cells inside a
    /// wrapper that scrolls.
    #[test]
    fn wide_content_stays_inside_the_page() {
        let pre = css_rule("pre");
        for rule in ["overflow-x:auto", "white-space:pre", "max-width:100%", "box-sizing:border-box"] {
            assert!(pre.contains(&rule), "pre lacks {rule}: {pre:?}");
        }
        for table in ["table.checks td", "table.summary td"] {
            assert!(css_rule(table).contains(&"overflow-wrap:anywhere"), "{table}");
        }
        let wide = css_rule(".wide");
        assert!(wide.contains(&"overflow-x:auto") && wide.contains(&"max-width:100%"), "{wide:?}");
        assert!(css_rule("img").contains(&"max-width:100%"));

        let dir = tempfile::tempdir().unwrap();
        let f = figures::all()[0];
        fake_run(dir.path(), f.id, RunStatus::Ok, &[Check::new("x", "1", "1", Verdict::Holds)]);
        let html = render(dir.path(), &manifest(&[f.id]));
        assert!(html.contains("<pre class=\"tables\">"));
        for class in ["environment", "summary", "checks"] {
            let table = format!("<table class=\"{class}\">");
            assert_eq!(html.matches(&table).count(), 1, "{class}");
            assert!(html.contains(&format!("<div class=\"wide\">{table}")), "{class} sits in a div.wide");
        }
        assert_eq!(html.matches("<table").count(), html.matches("</table></div>").count());
    }

    #[test]
    fn hrefs_are_encoded() {
        assert_eq!(href("a-b/c_d.png"), "a-b/c_d.png");
        assert_eq!(href("a b/\"x\".png"), "a%20b/%22x%22.png");
    }
}
