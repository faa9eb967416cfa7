//! The race of a freed page's write (RECOVERY.md R13, buffer README B23): the WAL rule for page 0 and for
//! freed pages. A page freed by a merge is written to the file as a `Free` page (and page 0,
//! which lists the free chain, rewritten) only when the log record of the merge is durable —
//! on a logged database only at close, after the whole log is flushed; `flush`, checkpoints,
//! the cleaner and eviction write B-tree pages only, each after the log covering it.
//!
//! The test holds a `Database::flush` at its page write (a file-system hook) while the main
//! thread deletes keys whose leaves merge (asynchronous commits, log flusher held back), then
//! lets the flush finish, crashes the file system (unsynced log tail lost) and restarts.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use swizzledb::lab::DatabaseExt as _;
use swizzledb::{Cleaner, CommitMode, Database};
use swizzledb_io::{CrashMode, FaultFs, OpenMode, Vfs, VfsFile};

const DB: &str = "/r/db";
/// The thread whose page write pauses.
const FLUSHER: &str = "race-flush";
/// The log's background flusher (its thread name in the wal crate).
const LOG_FLUSHER: &str = "swizzledb-wal-flusher";
const WAIT: Duration = Duration::from_secs(20);

type Pause = (mpsc::Sender<()>, mpsc::Receiver<()>);

/// What the hooks of [`GateFs`] do.
#[derive(Default, Debug)]
struct Gates {
    /// Armed: the next page-file write of the [`FLUSHER`] thread reports on the sender and
    /// waits for the receiver.
    pause: Mutex<Option<Pause>>,
    /// While true, the log's background flusher waits before writing or syncing a log file.
    log_held: Mutex<bool>,
    log_released: Condvar,
}

impl Gates {
    fn hold_log(&self, held: bool) {
        *self.log_held.lock().unwrap() = held;
        self.log_released.notify_all();
    }

    fn wait_for_log(&self) {
        let held = self.log_held.lock().unwrap();
        let _unused = self.log_released.wait_timeout_while(held, WAIT, |h| *h).unwrap();
    }
}

/// A `Vfs` over a [`FaultFs`] with the two hooks of [`Gates`].
#[derive(Clone, Debug)]
struct GateFs {
    fs: FaultFs,
    gates: Arc<Gates>,
}

#[derive(Debug)]
struct GateFile {
    inner: Arc<dyn VfsFile>,
    path: PathBuf,
    gates: Arc<Gates>,
}

impl GateFile {
    fn is_log(&self) -> bool {
        self.path.starts_with(swizzledb::wal_dir(Path::new(DB)))
    }

    fn before_change(&self) {
        let thread = std::thread::current();
        if self.is_log() && thread.name() == Some(LOG_FLUSHER) {
            self.gates.wait_for_log();
        }
    }
}

impl VfsFile for GateFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.inner.read_at(buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.before_change();
        if self.path == Path::new(DB) && std::thread::current().name() == Some(FLUSHER) {
            let armed = self.gates.pause.lock().unwrap().take();
            if let Some((reached, go)) = armed {
                let _ = reached.send(());
                let _ = go.recv_timeout(WAIT);
            }
        }
        self.inner.write_all_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.before_change();
        self.inner.sync()
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.before_change();
        self.inner.set_len(len)
    }
}

impl Vfs for GateFs {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn VfsFile>> {
        let inner = self.fs.open(path, mode)?;
        Ok(Arc::new(GateFile { inner, path: path.to_path_buf(), gates: Arc::clone(&self.gates) }))
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.fs.remove(path)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.fs.remove_dir(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.fs.rename(from, to)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.fs.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.fs.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.fs.sync_dir(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.fs.exists(path)
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

const KEYS: u32 = 1500;
const KEPT: u32 = 100;

/// B23/R13: pages freed by merges whose records are not durable never reach the file as `Free`
/// pages, nor does a page 0 listing them, whatever a concurrent `flush` does.
///
/// Setup: tree `t` (filled first, so its pages sit in the pool's first frames) is durable and
/// clean; tree `u`'s root, in a later frame, is the only dirty page. A thread runs
/// `Database::flush` and pauses at its page write (of `u`'s root). Meanwhile the main thread
/// deletes most keys of `t` with asynchronous commits: leaves merge and pages are freed, the
/// records stay in the log buffer (the log's flusher is held back). The flush then finishes and
/// the file system crashes, losing the unsynced log tail. Restart must find `t` valid and holding
/// every key (the deletes were never durable).
///
/// Before the fix (R13, commit "Logged flush writes pages only…") a logged `flush` was the
/// pool's `flush`: it went on from `u`'s frame (the merged pages' frames come earlier, so it
/// did not write them or flush the log for them), then wrote the free-page chain — the freed
/// pages formatted as `Free` — and page 0, and synced. The file then held `Free` pages that the
/// durable tree still references: with the fix reverted this test fails at `Tree::verify`
/// ("page 2 is corrupted: expected a B-tree node, found a free or metadata page").
#[test]
fn r13_freed_pages_and_page_0_wait_for_the_records_that_freed_them() {
    for round in 0..3 {
        let fs = FaultFs::new();
        fs.create_dir_all(Path::new("/r")).unwrap();
        let gates = Arc::new(Gates::default());
        let vfs = GateFs { fs: fs.clone(), gates: Arc::clone(&gates) };
        let builder = Database::builder()
            .page_size(4096)
            .pool_bytes(256 * 4096)
            .commit_mode(CommitMode::Async)
            .checkpoint_interval(None)
            .lab(|l| l.cleaner(Cleaner::None))
            .lab(|l| l.vfs(Arc::new(vfs)));
        let path = Path::new(DB);
        let db = builder.clone().create(path).unwrap();
        let t = db.create_tree("t").unwrap();
        for i in 0..KEYS {
            t.insert(&key(i), &[round as u8; 60]).unwrap();
        }
        let u = db.create_tree("u").unwrap();
        // Everything so far in the file, then a checkpoint that finds no dirty page: restart
        // redoes nothing of `t` from before it (redo would rewrite its pages from their logged
        // images and hide what the file holds).
        db.flush().unwrap();
        db.checkpoint().unwrap();
        u.insert(b"u", b"dirty").unwrap();

        let (reached_tx, reached) = mpsc::channel();
        let (go, go_rx) = mpsc::channel();
        *gates.pause.lock().unwrap() = Some((reached_tx, go_rx));
        std::thread::scope(|s| {
            let flusher =
                std::thread::Builder::new().name(FLUSHER.into()).spawn_scoped(s, || db.flush()).unwrap();
            reached.recv_timeout(WAIT).expect("the flush reached its page write");
            gates.hold_log(true);
            for i in 0..KEYS - KEPT {
                assert!(t.delete(&key(i)).unwrap());
            }
            go.send(()).unwrap();
            flusher.join().unwrap().unwrap();
        });
        let freed = db.pool().allocation().free_pages.len();
        assert!(freed > 0, "round {round}: the deletes merged no leaves");
        fs.crash(CrashMode::DropUnsynced);
        gates.hold_log(false);
        drop((t, u));
        drop(db);

        let db = builder.open(path).unwrap_or_else(|e| {
            panic!("round {round}: restart after the crash failed: {e} ({freed} pages freed)")
        });
        let t = db.tree("t").unwrap();
        t.verify().unwrap_or_else(|e| panic!("round {round}: tree t after the crash: {e}"));
        for i in 0..KEYS {
            let got = t.get(&key(i)).unwrap_or_else(|e| panic!("round {round}: key {i}: {e}"));
            assert_eq!(
                got,
                Some(vec![round as u8; 60]),
                "round {round}: key {i} (its delete was not durable)"
            );
        }
        db.close().unwrap();
    }
}
