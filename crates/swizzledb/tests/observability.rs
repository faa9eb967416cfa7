//! Nothing fails silently: background work that fails, and a `Database` dropped without a
//! successful close, leave a `log` record (warning or error) a logger can show. One test per
//! process, since the logger is global.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use swizzledb::Database;
use swizzledb_io::fault::{Fault, FaultRule, Op};
use swizzledb_io::{FaultFs, Vfs};

/// Keeps every record at or above `Warn`.
struct Capture(Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn
    }

    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            self.0.lock().unwrap().push((r.level(), r.args().to_string()));
        }
    }

    fn flush(&self) {}
}

fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let c: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(c).expect("the only logger of this test binary");
        log::set_max_level(log::LevelFilter::Warn);
        c
    })
}

fn records() -> Vec<(log::Level, String)> {
    capture().0.lock().unwrap().clone()
}

#[test]
fn failed_background_checkpoints_and_a_failed_drop_are_logged() {
    capture();
    let fs = FaultFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    let db = Database::builder()
        .page_size(4096)
        .pool_bytes(64 * 4096)
        .checkpoint_interval(Some(Duration::from_millis(5)))
        .lab(|l| l.vfs(Arc::new(fs.clone())))
        .create(Path::new("/d/db"))
        .unwrap();
    let t = db.create_tree("t").unwrap();
    for i in 0..100u32 {
        t.insert(&i.to_be_bytes(), b"value").unwrap();
    }
    assert!(records().is_empty(), "{:?}", records());
    // Every sync fails from here on: the checkpointer's rounds fail, and so does the close
    // that dropping the database runs.
    fs.fail_next(FaultRule::new(Op::Sync, Fault::Eio).repeating());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while db.checkpoint_counts().failed == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(db.checkpoint_counts().failed > 0, "no background checkpoint failed");
    drop(t);
    drop(db);
    let seen = records();
    assert!(
        seen.iter().any(|(l, m)| *l == log::Level::Warn && m.contains("checkpointer: a checkpoint failed")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|(l, m)| *l == log::Level::Error && m.contains("could not close it cleanly")),
        "{seen:?}"
    );
}
