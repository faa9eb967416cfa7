//! The decoupled page cleaner's replay (RECOVERY.md R20; Lersch 2015, ch. 4): the page changes
//! archived since the last replay are applied, page by page in page-id order, to the pages'
//! copies in the data file — read from the file, never copied out of the buffer pool — and
//! written back; then the file is synced and the progress stored.

use swizzledb_buffer::{page, BufferPool, PageId};
use swizzledb_sync::Lsn;

use crate::error::{Error, Result};
use crate::logging::Wal;
use crate::record::Record;
use crate::repair::{carries_image, frees, rebuild_page, redo_page, replay_onto};

/// The name the replay's progress is kept under in the log directory.
const PROGRESS: &str = "cleaned";

/// What one replay did.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Replayed {
    /// Pages whose file copy was brought forward and written.
    pub(crate) pages_written: u64,
    /// Of those, frames the pool then marked clean (B26).
    pub(crate) marked_clean: u64,
    /// Archived changes applied.
    pub(crate) changes: u64,
}

/// Where the previous replays ended: every page's copy in the file holds every change below
/// it (R20). Read from the log directory; else the archive's beginning.
pub(crate) fn progress(wal: &Wal) -> Result<Lsn> {
    let stored = wal.log.read_named_lsn(PROGRESS)?;
    let begin = wal.archive.as_ref().and_then(|a| a.begin()).unwrap_or(Lsn(0));
    Ok(stored.unwrap_or(begin).max(begin))
}

/// One replay (R20): archives the durable log, then brings every page changed in
/// `[from, archive end)` forward in the file, syncs the file and stores the new progress.
/// Returns the new progress.
pub(crate) fn replay(wal: &Wal, pool: &BufferPool, from: Lsn) -> Result<(Lsn, Replayed)> {
    // No checkpoint begins during a replay (R20): the last one began below the archive end the
    // replay's page-write records name, so the next one's scan starts below it too and can
    // use them.
    let _no_checkpoint = wal.checkpointing.lock();
    let mut done = Replayed::default();
    wal.archive_durable()?;
    let Some(archive) = wal.archive.as_deref() else { return Ok((from, done)) };
    let Some(to) = archive.end().filter(|&to| to > from) else { return Ok((from, done)) };
    let entries = archive.entries_between(from, to)?;
    let page_size = pool.page_size();
    let mut buf = vec![0u8; page_size];
    for group in entries.chunk_by(|a, b| a.page == b.page) {
        let id = PageId::new(group[0].page).ok_or_else(|| Error::LogCorrupted {
            lsn: group[0].lsn,
            reason: format!("an archived change of page {}", group[0].page),
        })?;
        let mut records = Vec::with_capacity(group.len());
        for e in group {
            let r = Record::decode(&e.body)
                .map_err(|m| Error::LogCorrupted { lsn: e.lsn, reason: m.to_string() })?;
            records.push((e.lsn, r));
        }
        if let Some(lsn) = bring_forward(wal, pool, id, &records, to, page_size, &mut buf)? {
            done.pages_written += 1;
            done.changes += records.len() as u64;
            done.marked_clean += u64::from(pool.note_cleaned(id, lsn));
        }
    }
    pool.sync_file()?;
    wal.log.write_named_lsn(PROGRESS, to)?;
    log::debug!(
        "swizzledb decoupled cleaner: replayed {from}..{to}: {} changes, {} pages written",
        done.changes,
        done.pages_written
    );
    Ok((to, done))
}

/// Brings the file's copy of page `id` forward through `records` (its archived changes of the
/// interval, in LSN order, all below `to`) under the page's file lock (B26); returns the page LSN written, or
/// `None` if nothing was written (the copy was as new already, or the page ends free).
pub(crate) fn bring_forward(
    wal: &Wal,
    pool: &BufferPool,
    id: PageId,
    records: &[(Lsn, Record)],
    to: Lsn,
    page_size: usize,
    buf: &mut [u8],
) -> Result<Option<Lsn>> {
    let last = records.last().map_or(Lsn(0), |(l, _)| *l);
    let newest_image = records.iter().rposition(|(_, r)| carries_image(r, id));
    // A page freed after its newest image (or without one) has no contents to keep.
    if let Some(i) = records.iter().rposition(|(_, r)| frees(r, id)) {
        if newest_image.is_none_or(|m| m < i) {
            return Ok(None);
        }
    }
    let file = pool.lock_file_page(id);
    // The copy as the file holds it, stale or not (buffer B28): an eviction that elided a newer
    // version (R21) leaves it stale, and this replay brings it forward itself. A stale copy
    // still holds every change below `from` (the induction of R20), and may hold more than
    // `records` do — the pool can write the page after the replay read the archive — so it
    // is never replaced by an older version: the file never goes back (B26), which the
    // decoupled checkpoint's analysis of the page-write records relies on (R19).
    buf.fill(0);
    let read = file.read_unchecked(buf);
    let copy = match read {
        Ok(()) if swizzledb_btree::validate_page(buf).is_ok() => Some(page::page_lsn(buf)),
        // Never written (a page allocated since): nothing newer than the records to keep.
        _ if buf.iter().all(|&b| b == 0) => None,
        _ => {
            // A damaged copy may have been newer than `last`: rebuild the page from its whole
            // durable history (R18), which is as new as anything the pool wrote (B18).
            match &read {
                Ok(()) => log::warn!("the decoupled cleaner found page {id}'s copy in the file malformed"),
                Err(e) => {
                    log::warn!("the decoupled cleaner could not read page {id}'s copy in the file: {e}")
                }
            }
            let Some(mut page) = redo_page(&wal.log, wal.archive.as_deref(), id, page_size, None)? else {
                return Ok(None);
            };
            log::warn!("the decoupled cleaner rebuilt page {id} from the log");
            let lsn = page::page_lsn(&page);
            file.write(&mut page, to)?;
            return Ok(Some(lsn));
        }
    };
    if copy.is_some_and(|lsn| lsn >= last) {
        return Ok(None);
    }
    let image_is_newer = newest_image.is_some_and(|i| copy.is_none_or(|c| records[i].0 > c));
    let result = match (copy, newest_image) {
        (_, Some(i)) if image_is_newer => replay_onto(id, page_size, None, &records[i..]),
        // The copy is at least as new as any image here: only the changes after the newest
        // image can be missing from it (the page-LSN test skips those it holds).
        (Some(_), _) => {
            replay_onto(id, page_size, Some(buf.to_vec()), &records[newest_image.map_or(0, |i| i + 1)..])
        }
        (None, _) => Err(Error::PageUnrecoverable { page: id, reason: "it was never written".into() }),
    };
    // A copy the changes do not fit (a write lost before this run began): rebuild the page
    // from the whole archive and log (R18) up to `last`, which is newer than the copy.
    let mut page = match result {
        Ok(p) => p,
        Err(e) => {
            let p = rebuild_page(&wal.log, wal.archive.as_deref(), id, page_size, Lsn(last.0 + 1))?;
            log::warn!(
                "the decoupled cleaner rebuilt page {id} from the log: its copy in the file did not \
                 take the archived changes ({e})"
            );
            p
        }
    };
    let lsn = page::page_lsn(&page);
    file.write(&mut page, to)?;
    Ok(Some(lsn))
}
