//! What the CLI's end-to-end tests share: the built binary and scratch directories.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `swizzledb` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_swizzledb");

/// A fresh scratch directory under the system temp directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `swizzledb-test-<name>-<pid>`, emptied first.
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("swizzledb-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Scratch {
    /// Nothing but the `out` directory is left in the scratch directory: every temporary
    /// database was removed.
    #[allow(dead_code)]
    pub fn assert_only_out_left(&self) {
        let left: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "out")
            .collect();
        assert!(left.is_empty(), "temporary databases left behind: {left:?}");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every option list in `bads`, appended to `command` (and `--dir dir`), is a usage error: exit
/// code 2. Not every test binary has usage errors to check.
#[allow(dead_code)]
pub fn assert_usage_errors(command: &[&str], bads: &[&[&str]], dir: &Path) {
    for bad in bads {
        let o = Command::new(BIN).args(command).args(*bad).arg("--dir").arg(dir).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
}

/// A result CSV read whole: its header and its rows, every row checked to be as long as the
/// header. Not every test binary reads result files.
#[allow(dead_code)]
pub struct Table {
    /// The column names.
    pub header: Vec<String>,
    /// The rows, as text.
    pub rows: Vec<Vec<String>>,
}

#[allow(dead_code)]
impl Table {
    /// Reads `path`.
    pub fn read(path: &Path) -> Table {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut lines = text.lines();
        let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_string).collect();
        let rows: Vec<Vec<String>> = lines.map(|l| l.split(',').map(str::to_string).collect()).collect();
        for r in &rows {
            assert_eq!(r.len(), header.len(), "{}: {r:?}", path.display());
        }
        Table { header, rows }
    }

    /// The index of column `name`.
    pub fn col(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header))
    }

    /// The header as the file has it.
    pub fn header_line(&self) -> String {
        self.header.join(",")
    }
}

/// `<dir>/<stem>.png` is a PNG file and `<dir>/<stem>.svg` a whole SVG document: a chart was drawn.
#[allow(dead_code)]
pub fn assert_chart(dir: &Path, stem: &str) {
    let png = std::fs::read(dir.join(format!("{stem}.png"))).unwrap_or_else(|e| panic!("{stem}.png: {e}"));
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{stem}.png is not a PNG");
    let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg")))
        .unwrap_or_else(|e| panic!("{stem}.svg: {e}"));
    let body = svg
        .trim_start()
        .strip_prefix("<?xml")
        .map_or(svg.trim_start(), |rest| rest.split_once("?>").map_or("", |(_, b)| b).trim_start());
    assert!(
        body.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
        "{stem}.svg is not an SVG document"
    );
}

/// Runs `command` (stdout dropped, stderr kept) for at most a minute: `None` if it was still
/// running then (it is killed), else its output. A guard against a hang, not a measurement.
pub fn output_within_a_minute(command: &mut std::process::Command) -> Option<std::process::Output> {
    use std::time::{Duration, Instant};
    let mut child =
        command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let ended = child.try_wait().unwrap().is_some();
    if !ended {
        child.kill().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    ended.then_some(out)
}
