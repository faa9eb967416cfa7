//! The lab's one way to run a child process the parent talks to: this same binary again with
//! other arguments (a hidden `--child` mode of the experiment), its stdout read line by line and
//! its stderr kept, then killed with SIGKILL at a moment the parent chooses. `bench wal`
//! (restart after a crash) and `crash-test` use it.

use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Read};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// A running child process.
pub struct Child {
    process: std::process::Child,
    lines: Receiver<String>,
    stderr: Option<Receiver<String>>,
}

/// What a child left behind.
#[derive(Debug)]
pub struct Ended {
    /// How it ended (killed, or exited by itself before).
    pub status: ExitStatus,
    /// Whether it had exited by itself before the kill.
    pub exited_early: bool,
    /// Its stdout lines not read before.
    pub lines: Vec<String>,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

impl Child {
    /// Starts this binary with `args`, stdin, stdout and stderr piped; stdout is read on a thread
    /// of its own (lines arrive through [`Child::next_line`]), stderr on another, so the child
    /// never blocks on a full pipe.
    ///
    /// # Errors
    /// The binary's path is unknown or the process cannot start.
    pub fn spawn<I, S>(args: I) -> io::Result<Child>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Child::spawn_program(std::env::current_exe()?, args)
    }

    /// [`Child::spawn`] of another program (tests).
    ///
    /// # Errors
    /// The process cannot start.
    pub fn spawn_program<P, I, S>(program: P, args: I) -> io::Result<Child>
    where
        P: AsRef<OsStr>,
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut process = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = process.stdout.take().ok_or_else(|| io::Error::other("no stdout pipe"))?;
        let mut stderr = process.stderr.take().ok_or_else(|| io::Error::other("no stderr pipe"))?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (tx, stderr_text) = mpsc::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            let _ = tx.send(text);
        });
        Ok(Child { process, lines, stderr: Some(stderr_text) })
    }

    /// The next stdout line, waiting for it; `None` once stdout is closed (the child ended).
    pub fn next_line(&mut self) -> Option<String> {
        self.lines.recv().ok()
    }

    /// The next stdout line if one comes within `timeout`.
    pub fn next_line_within(&mut self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Kills the child with SIGKILL (unless it exited already), waits for it, and returns its
    /// status, the stdout lines not read yet and its stderr.
    ///
    /// # Errors
    /// Waiting for the child failed.
    pub fn kill(mut self) -> io::Result<Ended> {
        let exited_early = self.process.try_wait()?.is_some();
        let _ = self.process.kill();
        let status = self.process.wait()?;
        // The pipes close when the process is gone (unless it left children of its own holding
        // them: then give up on the rest after a moment).
        let mut lines = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(1)) {
            lines.push(line);
        }
        let stderr = self
            .stderr
            .take()
            .and_then(|rx| rx.recv_timeout(Duration::from_secs(1)).ok())
            .unwrap_or_default();
        Ok(Ended { status, exited_early, lines, stderr })
    }
}

impl Drop for Child {
    /// A child is never left running: dropping it kills it.
    fn drop(&mut self) {
        if self.stderr.is_some() {
            let _ = self.process.kill();
            let _ = self.process.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_arrive_and_the_kill_collects_the_rest() {
        let mut c = Child::spawn_program(
            "sh",
            ["-c", "echo ready; echo oops >&2; echo one; echo two; exec sleep 30"],
        )
        .unwrap();
        assert_eq!(c.next_line().as_deref(), Some("ready"));
        // Both remaining lines are written before the sleep.
        let mut seen = Vec::new();
        while seen.len() < 2 {
            seen.push(c.next_line_within(Duration::from_secs(10)).expect("the lines come"));
        }
        let ended = c.kill().unwrap();
        assert!(!ended.exited_early && !ended.status.success());
        assert_eq!(seen, ["one", "two"]);
        assert!(ended.lines.is_empty());
        assert_eq!(ended.stderr.trim(), "oops");
    }

    #[test]
    fn a_child_that_ended_by_itself_says_so() {
        let mut c = Child::spawn_program("sh", ["-c", "echo bye; exit 3"]).unwrap();
        assert_eq!(c.next_line().as_deref(), Some("bye"));
        assert_eq!(c.next_line(), None);
        // Stdout closes a moment before the process is gone.
        for _ in 0..1000 {
            if c.process.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let ended = c.kill().unwrap();
        assert!(ended.exited_early);
        assert_eq!(ended.status.code(), Some(3));
    }
}
