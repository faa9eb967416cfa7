//! The decoupled page cleaner's replay (RECOVERY.md R20; Lersch 2015, ch. 4): the page changes
//! archived since the last replay are applied, page by page in page-id order, to the pages'
//! copies in the data file — read from the file, never copied out of the buffer pool — and
//! written back; then the file is synced and the progress stored.

use swizzledb_buffer::{page, AlignedBuf, BufferPool, PageId};
use swizzledb_sync::Lsn;
use swizzledb_wal::ArchiveEntry;

use crate::error::{Error, Result};
use crate::logging::Wal;
use crate::record::Record;
use crate::repair::{carries_image, frees, rebuild_page, redo_page, replay_onto};

/// Pages brought forward under one lock of their stripes and written as one batch (B26): one
/// region of the double-write area (F15), so one sync of it per batch.
const BATCH: usize = 64;

/// The most archived changes of one page a replay decodes and holds at a time (R20): a page
/// changed by every transaction has millions in one interval. (Tests take few, so that their
/// replays bring pages forward in parts.)
const PAGE_RECORDS: usize = if cfg!(test) { 8 } else { 16 << 10 };

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
    /// Batches that held part of one page's changes (`PAGE_RECORDS`).
    pub(crate) parts: u64,
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
    let mut between = archive.between(from, to)?;
    let mut rooms = Rooms::default();
    let mut next = between.next_entry()?;
    // A page whose changes filled their part (`PAGE_RECORDS`) after other pages of a batch:
    // it starts the next batch.
    let mut carried: Option<(PageId, Vec<(Lsn, Record)>)> = None;
    loop {
        let mut pages = Vec::with_capacity(BATCH);
        // Every change below it of each of the batch's pages is in the file once they are
        // written: `to`, unless the batch is a part of one page's changes (R20).
        let mut complete = to;
        if let Some((id, records)) = carried.take() {
            let more = next.as_ref().is_some_and(|e| e.page == id.get());
            if more {
                complete = Lsn(records.last().expect("a part holds changes").0 .0 + 1);
            }
            pages.push((id, records));
        }
        while pages.len() < BATCH && complete == to {
            let Some(first) = next.take() else { break };
            let id = PageId::new(first.page).ok_or_else(|| Error::LogCorrupted {
                lsn: first.lsn,
                reason: format!("an archived change of page {}", first.page),
            })?;
            let mut records = vec![decode(&first)?];
            loop {
                next = between.next_entry()?;
                match &next {
                    Some(e) if e.page == first.page && records.len() < PAGE_RECORDS => {
                        records.push(decode(e)?)
                    }
                    _ => break,
                }
            }
            // A hot page's changes come in parts: each part is a batch of its own, written as
            // of its last change, and the next part goes on from there.
            if next.as_ref().is_some_and(|e| e.page == first.page) {
                if pages.is_empty() {
                    complete = Lsn(records.last().expect("a part holds changes").0 .0 + 1);
                    pages.push((id, records));
                } else {
                    carried = Some((id, records));
                }
                break;
            }
            pages.push((id, records));
        }
        if pages.is_empty() {
            break;
        }
        done.parts += u64::from(complete < to);
        for (id, page, changes) in bring_forward_batch(wal, pool, &pages, complete, &mut rooms)? {
            done.pages_written += 1;
            done.changes += changes;
            done.marked_clean += u64::from(pool.note_cleaned(id, page::page_lsn(&page)));
        }
    }
    pool.sync_file()?;
    wal.log.write_named_lsn(PROGRESS, to)?;
    log::debug!(
        "swizzledb decoupled cleaner: replayed {from}..{to}: {} changes, {} pages written, {} batches \
         of part of a hot page's changes",
        done.changes,
        done.pages_written,
        done.parts
    );
    Ok((to, done))
}

/// An archived change, decoded.
fn decode(e: &ArchiveEntry) -> Result<(Lsn, Record)> {
    let r = Record::decode(&e.body).map_err(|m| Error::LogCorrupted { lsn: e.lsn, reason: m.to_string() })?;
    Ok((e.lsn, r))
}

/// Brings the file copies of a batch of pages (each with archived changes of the interval, in
/// LSN order) forward under one lock of their stripes (B26), and writes those that changed as
/// one batch, which reports each as propagated with every change below `complete` (B20): each
/// page's changes below `complete` must be among its records or in its copy. Returns each page
/// written, with the number of its changes. `rooms`: the aligned room the batch is read and
/// written through, kept across batches.
pub(crate) fn bring_forward_batch(
    wal: &Wal,
    pool: &BufferPool,
    pages: &[(PageId, Vec<(Lsn, Record)>)],
    complete: Lsn,
    rooms: &mut Rooms,
) -> Result<Vec<(PageId, Vec<u8>, u64)>> {
    let page_size = pool.page_size();
    let ids: Vec<PageId> = pages.iter().map(|(id, _)| *id).collect();
    let files = pool.lock_file_pages(&ids);
    debug_assert_eq!(files.ids().len(), pages.len(), "one group per page");
    // The copies in the file, read together: one at a time, a replay spends its time waiting
    // for each read.
    let reads = files.read_unchecked_all(&mut rooms.reads)?;
    let copies = rooms.reads.as_ref().expect("read_unchecked_all made it").as_slice();
    let mut written = Vec::with_capacity(pages.len());
    for (id, records) in pages {
        let i = files.ids().binary_search(id).expect("locked above");
        let copy = (&copies[i * page_size..(i + 1) * page_size], &reads[i]);
        if let Some(page) = bring_forward(wal, *id, records, copy, page_size)? {
            written.push((*id, page, records.len() as u64));
        }
    }
    let out: Vec<(PageId, &[u8])> = written.iter().map(|(id, p, _)| (*id, &p[..])).collect();
    files.write(&out, complete, &mut rooms.writes)?;
    Ok(written)
}

/// The aligned room a replay reads and writes its batches through, kept across batches.
#[derive(Default)]
pub(crate) struct Rooms {
    reads: Option<AlignedBuf>,
    writes: Option<AlignedBuf>,
}

/// Brings the file's copy of page `id` forward through `records` (its archived changes of the
/// interval, in LSN order); `read` is the copy as the batch read it, with the read's result
/// (the page is locked, B26). Returns the page to write, or `None` if there is nothing to
/// write (the copy was as new already, or the page ends free).
fn bring_forward(
    wal: &Wal,
    id: PageId,
    records: &[(Lsn, Record)],
    read: (&[u8], &swizzledb_buffer::Result<()>),
    page_size: usize,
) -> Result<Option<Vec<u8>>> {
    let (buf, read) = read;
    let last = records.last().map_or(Lsn(0), |(l, _)| *l);
    let newest_image = records.iter().rposition(|(_, r)| carries_image(r, id));
    // A page freed after its newest image (or without one) has no contents to keep.
    if let Some(i) = records.iter().rposition(|(_, r)| frees(r, id)) {
        if newest_image.is_none_or(|m| m < i) {
            return Ok(None);
        }
    }
    // The copy as the file holds it, stale or not (buffer B28): an eviction that elided a newer
    // version (R21) leaves it stale, and this replay brings it forward itself. A stale copy
    // still holds every change below `from` (the induction of R20), and may hold more than
    // `records` do — the pool can write the page after the replay read the archive — so it
    // is never replaced by an older version: the file never goes back (B26), which the
    // decoupled checkpoint's analysis of the page-write records relies on (R19).
    let copy = match read {
        Ok(()) if swizzledb_btree::validate_page(buf).is_ok() => Some(page::page_lsn(buf)),
        // Never written (a page allocated since): nothing newer than the records to keep.
        _ if buf.iter().all(|&b| b == 0) => None,
        _ => {
            // A damaged copy may have been newer than `last`: rebuild the page from its whole
            // durable history (R18), which is as new as anything the pool wrote (B18).
            match read {
                Ok(()) => log::warn!("the decoupled cleaner found page {id}'s copy in the file malformed"),
                Err(e) => {
                    log::warn!("the decoupled cleaner could not read page {id}'s copy in the file: {e}")
                }
            }
            let Some(page) = redo_page(&wal.log, wal.archive.as_deref(), id, page_size, None)? else {
                return Ok(None);
            };
            log::warn!("the decoupled cleaner rebuilt page {id} from the log");
            return Ok(Some(page));
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
    match result {
        Ok(p) => Ok(Some(p)),
        Err(e) => {
            let p = rebuild_page(&wal.log, wal.archive.as_deref(), id, page_size, Lsn(last.0 + 1))?;
            log::warn!(
                "the decoupled cleaner rebuilt page {id} from the log: its copy in the file did not \
                 take the archived changes ({e})"
            );
            Ok(Some(p))
        }
    }
}
