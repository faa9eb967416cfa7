//! Where a result was measured: the commit the lab was built from, the machine and the command
//! line. [`output`](crate::support::output) writes it into every result file, so no experiment has code
//! for it (`docs/results-schema.md`, "The environment").
//!
//! The commit is captured when the crate is built (`build.rs`); the rest is read when the first
//! result file is written. Anything that cannot be found is `unknown` (`null` for the numbers and
//! the dirty flag), never an error: a result is worth more than its environment.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// What the environment says where a value cannot be found.
pub const UNKNOWN: &str = "unknown";

/// The commit, machine and command line a result came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Environment {
    /// `git rev-parse HEAD` of the checkout the lab was built from, or `unknown` (built outside
    /// a git checkout of the workspace, or without git).
    pub commit: String,
    /// Whether tracked files under `crates/`, or the workspace's `Cargo.toml` or `Cargo.lock`,
    /// differed from `commit` when the lab was built; `None` when unknown.
    pub dirty: Option<bool>,
    /// The lab crate's version.
    pub version: String,
    /// The command line as one line a POSIX shell runs again ([`command_line`]).
    pub command: String,
    /// The CPU model (`/proc/cpuinfo`'s `model name`, or what the platform names instead), or
    /// `unknown`.
    pub cpu: String,
    /// The cores this process may use (`std::thread::available_parallelism`); `None` when
    /// unknown.
    pub cores: Option<usize>,
    /// The kernel release (`/proc/sys/kernel/osrelease`, else `uname -r`), or `unknown`.
    pub kernel: String,
    /// The operating system (`std::env::consts::OS`, e.g. `linux`).
    pub os: String,
    /// The CPU architecture (`std::env::consts::ARCH`, e.g. `x86_64`).
    pub arch: String,
}

impl Environment {
    /// This process's environment, read once (later calls return the same values).
    #[must_use]
    pub fn current() -> &'static Environment {
        static CURRENT: OnceLock<Environment> = OnceLock::new();
        CURRENT.get_or_init(|| Environment {
            commit: env!("SWIZZLEDB_LAB_COMMIT").to_string(),
            dirty: match env!("SWIZZLEDB_LAB_DIRTY") {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
            version: env!("CARGO_PKG_VERSION").to_string(),
            command: command_line(std::env::args_os().map(|a| a.to_string_lossy().into_owned())),
            cpu: std::fs::read_to_string("/proc/cpuinfo")
                .ok()
                .and_then(|text| cpu_model(&text))
                .unwrap_or_else(|| UNKNOWN.to_string()),
            cores: std::thread::available_parallelism().ok().map(std::num::NonZeroUsize::get),
            kernel: kernel_release().unwrap_or_else(|| UNKNOWN.to_string()),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
        })
    }
}

/// `args` (program first) as one line for a POSIX shell: separated by spaces, each argument
/// that holds anything but letters, digits and `_-./=:,+@%` (or is empty) in single quotes, a
/// quote in it written `'\''`.
#[must_use]
pub fn command_line(args: impl IntoIterator<Item = String>) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c);
    let quote = |a: String| {
        if !a.is_empty() && a.chars().all(plain) {
            a
        } else {
            format!("'{}'", a.replace('\'', r"'\''"))
        }
    };
    args.into_iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// The CPU model named in a `/proc/cpuinfo` text: `model name` (x86, most others), else the
/// keys other architectures use (`Hardware`, `Processor`, `cpu model`, `cpu`, `uarch`), else
/// ARM's implementer and part numbers; `None` if it names none.
#[must_use]
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    let value = |key: &str| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            let v = v.trim();
            (k.trim() == key && !v.is_empty()).then(|| v.to_string())
        })
    };
    ["model name", "Hardware", "Processor", "cpu model", "cpu", "uarch"].into_iter().find_map(value).or_else(
        || Some(format!("arm implementer {} part {}", value("CPU implementer")?, value("CPU part")?)),
    )
}

/// Bytes of memory available to new work (`/proc/meminfo`'s `MemAvailable`), where the system
/// says; `None` elsewhere.
#[must_use]
pub fn available_memory() -> Option<u64> {
    mem_available(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemAvailable` of a `/proc/meminfo` text, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The kernel release: `/proc/sys/kernel/osrelease`, else `uname -r`.
fn kernel_release() -> Option<String> {
    let proc = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok();
    let release = proc.or_else(|| {
        let out = std::process::Command::new("uname").arg("-r").output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    })?;
    let release = release.trim();
    (!release.is_empty()).then(|| release.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_reads_its_line_in_bytes() {
        let text = "MemTotal:       24576000 kB\nMemFree:         1000 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(text), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
    }

    #[test]
    fn cpu_model_reads_each_architectures_key() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n\
                   model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz\ncpu MHz\t\t: 2100.000\n";
        assert_eq!(cpu_model(x86).as_deref(), Some("Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz"));
        let power = "processor\t: 0\ncpu\t\t: POWER9 (architected), altivec supported\nclock\t\t: 2.2GHz\n";
        assert_eq!(cpu_model(power).as_deref(), Some("POWER9 (architected), altivec supported"));
        let arm64 = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU architecture: 8\n\
                     CPU variant\t: 0x3\nCPU part\t: 0xd0c\n";
        assert_eq!(cpu_model(arm64).as_deref(), Some("arm implementer 0x41 part 0xd0c"));
        // `cpu family` and `cpu MHz` are not `cpu`; an empty value is no name.
        assert_eq!(cpu_model("cpu family\t: 6\ncpu MHz\t: 1.0\nmodel name\t:\n"), None);
        assert_eq!(cpu_model(""), None);
        assert_eq!(cpu_model("no colon here\n:\n"), None);
    }

    #[test]
    fn command_line_quotes_what_a_shell_would_split() {
        let line = |args: &[&str]| command_line(args.iter().map(|a| a.to_string()));
        assert_eq!(
            line(&["target/release/swizzledb", "bench", "lookup", "--threads", "1,2", "--pool=64MiB"]),
            "target/release/swizzledb bench lookup --threads 1,2 --pool=64MiB"
        );
        assert_eq!(line(&["swizzledb", "--out", "my results", ""]), "swizzledb --out 'my results' ''");
        assert_eq!(line(&["a", "it's", "$HOME", "x;y", "*"]), r"a 'it'\''s' '$HOME' 'x;y' '*'");
        assert_eq!(line(&[]), "");
    }

    #[test]
    fn current_environment_is_complete() {
        let env = Environment::current();
        assert!(
            env.commit == UNKNOWN
                || (env.commit.len() >= 40 && env.commit.bytes().all(|b| b.is_ascii_hexdigit())),
            "commit {:?}",
            env.commit
        );
        assert!(env.commit != UNKNOWN || env.dirty.is_none(), "a dirty flag without a commit");
        assert!(!env.command.is_empty() && !env.command.starts_with(' '), "{:?}", env.command);
        assert_eq!(env.os, std::env::consts::OS);
        assert!(!env.arch.is_empty() && !env.version.is_empty());
        assert!(env.cores.is_some_and(|n| n >= 1), "{:?}", env.cores);
        if cfg!(target_os = "linux") {
            assert_ne!(env.kernel, UNKNOWN);
            assert!(!env.cpu.is_empty());
        }
        assert!(std::ptr::eq(env, Environment::current()), "read once");
    }
}
