//! Single-page recovery (RECOVERY.md R18; Lersch 2015, Sec. 4.3, after Graefe and Kuno): a
//! page whose copy in the file is damaged, or older than its last write, is rebuilt from the
//! log alone — its newest image in the log archive or the log, then every change after it,
//! replayed page-locally (R9) — without reading any other page.

use swizzledb_buffer::page;
use swizzledb_buffer::PageId;
use swizzledb_sync::Lsn;
use swizzledb_wal::{Archive, LogError, LogManager};

use crate::error::{Error, Result};
use crate::record::Record;
use crate::redo::{check_image, redo_on_page, RedoTarget};

/// Why a page could not be rebuilt (part of the error the read then fails with).
fn unrecoverable(page: PageId, reason: impl std::fmt::Display) -> Error {
    Error::PageUnrecoverable { page, reason: reason.to_string() }
}

/// The page's history, oldest first: every record of the archive and the log that changes it,
/// from `from` on, below `before` and the log's durable end.
fn history(
    log: &LogManager,
    archive: Option<&Archive>,
    id: PageId,
    from: Lsn,
    before: Lsn,
) -> Result<Vec<(Lsn, Record)>> {
    let decode = |lsn: Lsn, body: &[u8]| {
        Record::decode(body).map_err(|e| Error::LogCorrupted { lsn, reason: e.to_string() })
    };
    // The archive may advance, and the log be truncated below its new end, while we read: then
    // the log no longer holds where the archive ended when we looked; look again.
    for _ in 0..8 {
        let mut out = Vec::new();
        let scan_from = match archive {
            Some(a) => {
                let end = a.end();
                match a.page_entries(id.get(), from) {
                    Ok(entries) => {
                        for e in entries {
                            if end.is_some_and(|end| e.lsn < end) && e.lsn < before {
                                out.push((e.lsn, decode(e.lsn, &e.body)?));
                            }
                        }
                        end.unwrap_or(Lsn(0))
                    }
                    // A damaged run the log still covers (it holds every record from the
                    // archive's beginning, or from `from`): the log has the same records.
                    Err(e @ LogError::ArchiveCorrupted { .. })
                        if log.oldest() <= from.max(a.begin().unwrap_or(from)) =>
                    {
                        log::warn!(
                            "page {id}'s history is read from the log instead of the log archive: {e}"
                        );
                        Lsn(0)
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            None => Lsn(0),
        };
        let to = log.durable().min(before);
        let scanned = (|| -> Result<()> {
            for item in log.scan(scan_from)? {
                let (lsn, body) = item?;
                if lsn >= to {
                    break;
                }
                if lsn < from {
                    continue;
                }
                let pages = Record::pages_in(&body)
                    .map_err(|e| Error::LogCorrupted { lsn, reason: e.to_string() })?;
                if pages.contains(&id) {
                    out.push((lsn, decode(lsn, &body)?));
                }
            }
            Ok(())
        })();
        match scanned {
            Ok(()) => return Ok(out),
            // A checkpoint truncated the log under the scan (past where the archive ended when
            // we looked): the archive holds those records now.
            Err(_) if archive.is_some() && log.oldest() > scan_from => continue,
            Err(e) => return Err(e),
        }
    }
    Err(unrecoverable(id, "the log kept being truncated under the repair; try again"))
}

/// Whether `record` carries the whole image of `id` (a structure image, or a leaf change's
/// base image), so that nothing before it matters.
pub(crate) fn carries_image(record: &Record, id: PageId) -> bool {
    match record {
        Record::Structure { pages, .. } => pages.iter().any(|(p, n)| *p == id && n.replaces_page()),
        Record::Leaf { page, base, chain, .. } => (*page == id && base.is_some()) || chain.contains(&id),
        Record::Begin { .. }
        | Record::Commit { .. }
        | Record::Abort { .. }
        | Record::End { .. }
        | Record::CreateTree { .. }
        | Record::DropTree { .. }
        | Record::CheckpointBegin
        | Record::CheckpointEnd(_)
        | Record::CheckpointPart(_)
        | Record::PageWrite { .. } => false,
    }
}

/// Whether `record` frees `id`.
pub(crate) fn frees(record: &Record, id: PageId) -> bool {
    matches!(record, Record::Structure { freed, .. } | Record::Leaf { freed, .. } if freed.contains(&id))
}

/// The one page single-page recovery builds.
struct OnePage {
    page_size: usize,
    page: Option<Vec<u8>>,
}

impl RedoTarget for OnePage {
    fn page(&mut self, id: PageId, lsn: Lsn) -> Result<&mut Vec<u8>> {
        self.page.as_mut().ok_or_else(|| Error::LogCorrupted {
            lsn,
            reason: format!("a change to page {id} with no image of the page before it"),
        })
    }

    fn install(&mut self, id: PageId, image: &[u8], lsn: Lsn) -> Result<()> {
        check_image(id, image, self.page_size, lsn)?;
        let mut p = image.to_vec();
        page::set_page_lsn(&mut p, lsn);
        self.page = Some(p);
        Ok(())
    }

    fn page_size(&self) -> usize {
        self.page_size
    }
}

/// Replays `records` (changes of page `id`, in LSN order) page-locally (R9) onto `start` (the
/// page before the first of them; `None` if the first carries the page's image), and returns
/// the page, a validated node (btree README T17).
///
/// # Errors
/// A change does not fit the page, the page is freed on the way, or there is no page to
/// apply the first change to.
pub(crate) fn replay_onto(
    id: PageId,
    page_size: usize,
    start: Option<Vec<u8>>,
    records: &[(Lsn, Record)],
) -> Result<Vec<u8>> {
    let mut target = OnePage { page_size, page: start };
    for (lsn, record) in records {
        if frees(record, id) {
            return Err(unrecoverable(id, format!("the page was freed at LSN {lsn}")));
        }
        redo_on_page(&mut target, id, *lsn, record)?;
    }
    let page = target.page.ok_or_else(|| unrecoverable(id, "no image to replay onto"))?;
    swizzledb_btree::validate_page(&page)
        .map_err(|e| unrecoverable(id, format!("the rebuilt page is not a valid node: {e}")))?;
    Ok(page)
}

/// Rebuilds page `id` as it was just before the record at `before` (`Lsn(u64::MAX)`: as of
/// the log's durable end) (R18): its newest image in the archive or the log, then every change
/// after it. The result is a well-formed node (btree README T17) carrying the page LSN of its
/// newest change.
///
/// # Errors
/// [`Error::PageUnrecoverable`] if no image of the page is in the archive or the log (without
/// an archive, only pages changed since the log was last truncated can be rebuilt) or the page
/// is free; [`Error::LogCorrupted`] or [`Error::Log`] if a record cannot be read.
pub(crate) fn rebuild_page(
    log: &LogManager,
    archive: Option<&Archive>,
    id: PageId,
    page_size: usize,
    before: Lsn,
) -> Result<Vec<u8>> {
    rebuild_derived(log, archive, id, page_size, before, 0)
}

/// R29 rule 6: how many split-offs deep [`rebuild_page`] derives a page from its source's
/// history (a chain of new nodes, each split from the one before, as ascending inserts make).
const MAX_DERIVATIONS: usize = 64;

/// [`rebuild_page`], `depth` split-offs deep.
fn rebuild_derived(
    log: &LogManager,
    archive: Option<&Archive>,
    id: PageId,
    page_size: usize,
    before: Lsn,
    depth: usize,
) -> Result<Vec<u8>> {
    let history = history(log, archive, id, Lsn(0), before)?;
    rebuild_from(log, archive, id, page_size, &history, depth)
}

/// [`rebuild_page`] from the page's whole `history`: from its newest image on, or, where the
/// page was made as a split-off (R29) after it, from its source rebuilt as of just before that
/// record (rule 6), the source's history being in the archive or the log too.
fn rebuild_from(
    log: &LogManager,
    archive: Option<&Archive>,
    id: PageId,
    page_size: usize,
    history: &[(Lsn, Record)],
    depth: usize,
) -> Result<Vec<u8>> {
    let Some(start) = history.iter().rposition(|(_, r)| carries_image(r, id)) else {
        let hint = if archive.is_some() {
            "neither the log archive nor the log holds an image of it"
        } else {
            "the log holds no image of it, and the database keeps no log archive (Builder::log_archive)"
        };
        return Err(unrecoverable(id, hint));
    };
    let (lsn, record) = &history[start];
    let Some((source, key)) = record.split_off_source(id) else {
        return replay_onto(id, page_size, None, &history[start..]);
    };
    if depth >= MAX_DERIVATIONS {
        return Err(unrecoverable(
            id,
            format!("it was split off page {source} at LSN {lsn}, {MAX_DERIVATIONS} split-offs deep"),
        ));
    }
    let from = rebuild_derived(log, archive, source, page_size, *lsn, depth + 1).map_err(|e| {
        unrecoverable(
            id,
            format!("it was split off page {source} at LSN {lsn}, which cannot be rebuilt: {e}"),
        )
    })?;
    let mut image = swizzledb_btree::log::split_off(&from, key, id)
        .map_err(|e| unrecoverable(id, format!("split off page {source} at LSN {lsn}: {e}")))?;
    page::set_page_lsn(&mut image, *lsn);
    replay_onto(id, page_size, Some(image), &history[start + 1..])
}

/// Redo of one page (R18, R22): brings `copy` — the file's copy of page `id`, a well-formed
/// node with a good checksum, or `None` if it is damaged — forward to the log's durable end:
/// the changes after its page LSN replayed onto it, or onto the newest image among them.
/// Returns `None` if the page is free at the end of its history (its contents do not matter).
/// When the changes do not fit the copy (a write lost before the archive began), or there is
/// no copy, the page is rebuilt from its whole history ([`rebuild_page`]).
///
/// # Errors
/// As [`rebuild_page`].
pub(crate) fn redo_page(
    log: &LogManager,
    archive: Option<&Archive>,
    id: PageId,
    page_size: usize,
    copy: Option<Vec<u8>>,
) -> Result<Option<Vec<u8>>> {
    let Some(copy) = copy else {
        return rebuild_or_free(log, archive, id, page_size);
    };
    let history = history(log, archive, id, Lsn(page::page_lsn(&copy).0 + 1), Lsn(u64::MAX))?;
    if ends_free(&history, id) {
        return Ok(None);
    }
    bring_forward(log, archive, id, page_size, copy, &history, Lsn(u64::MAX)).map(Some)
}

/// The copy of a torn page that restart puts back (R3): `copy`, the double-write area's, brought
/// forward as [`redo_page`] does — except that a page whose history ends free is brought to
/// where it was just before its last free, not left alone, so that no torn page stays in the
/// file (restart's redo skips it either way, RECOVERY.md R8).
///
/// # Errors
/// As [`rebuild_page`].
pub(crate) fn redo_torn_page(
    log: &LogManager,
    archive: Option<&Archive>,
    id: PageId,
    page_size: usize,
    copy: Vec<u8>,
) -> Result<Vec<u8>> {
    let mut history = history(log, archive, id, Lsn(page::page_lsn(&copy).0 + 1), Lsn(u64::MAX))?;
    let mut before = Lsn(u64::MAX);
    // R29: a split-off made of this page, or this page made as a split-off, is redone from the
    // source's state just before it, which restart's redo builds in memory: the copy is
    // brought up to just before it, and redo goes on from there (the page stays in its dirty
    // page table from that record on).
    if let Some(cut) = history.iter().position(|(_, r)| r.derives(id)) {
        before = history[cut].0;
        history.truncate(cut);
    }
    if ends_free(&history, id) {
        let last_free = history.iter().rposition(|(_, r)| frees(r, id)).unwrap_or(history.len());
        before = history[last_free].0;
        history.truncate(last_free);
    }
    bring_forward(log, archive, id, page_size, copy, &history, before)
}

/// `copy` with `history` (the page's changes after its page LSN, up to `before`) replayed onto
/// it, or onto the newest image among them; rebuilt from the page's whole history before
/// `before` when they do not fit the copy.
fn bring_forward(
    log: &LogManager,
    archive: Option<&Archive>,
    id: PageId,
    page_size: usize,
    copy: Vec<u8>,
    history: &[(Lsn, Record)],
    before: Lsn,
) -> Result<Vec<u8>> {
    if history.is_empty() {
        return Ok(copy);
    }
    let newest_image = history.iter().rposition(|(_, r)| carries_image(r, id));
    let replayed = match newest_image {
        Some(i) => replay_onto(id, page_size, None, &history[i..]),
        None => replay_onto(id, page_size, Some(copy), history),
    };
    replayed.or_else(|_| rebuild_page(log, archive, id, page_size, before))
}

/// [`rebuild_page`] as of the log's durable end, or `None` if the page ends free.
fn rebuild_or_free(
    log: &LogManager,
    archive: Option<&Archive>,
    id: PageId,
    page_size: usize,
) -> Result<Option<Vec<u8>>> {
    let history = history(log, archive, id, Lsn(0), Lsn(u64::MAX))?;
    if ends_free(&history, id) {
        return Ok(None);
    }
    rebuild_from(log, archive, id, page_size, &history, 0).map(Some)
}

/// Whether the last record of `history` that frees page `id` follows its newest image.
fn ends_free(history: &[(Lsn, Record)], id: PageId) -> bool {
    let newest_image = history.iter().rposition(|(_, r)| carries_image(r, id));
    history.iter().rposition(|(_, r)| frees(r, id)).is_some_and(|i| newest_image.is_none_or(|m| m < i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Change;
    use crate::redo::archive_entries;
    use swizzledb_sync::TxnId;

    fn ids(range: std::ops::Range<u64>) -> Vec<PageId> {
        range.map(|i| PageId::new(i).unwrap()).collect()
    }

    /// R17: for every page a record names, its archive entry carries an image, frees the page
    /// and rebuilds it exactly as the whole record does; the chain's and the freed pages'
    /// entries hold about a page, not the record.
    #[test]
    fn r17_each_pages_archive_entry_redoes_as_the_whole_record() {
        let page_size = 4096;
        let new: Vec<u8> = (0..50_000u32).map(|i| (i * 7) as u8).collect();
        let old: Vec<u8> = (0..30_000u32).map(|i| (i * 13) as u8).collect();
        let chain = ids(100..100 + swizzledb_btree::overflow::chain_len(page_size, new.len()) as u64);
        let freed = ids(200..200 + swizzledb_btree::overflow::chain_len(page_size, old.len()) as u64);
        let leaf = |change: Change, chain: &[PageId], freed: &[PageId]| Record::Leaf {
            txn: TxnId(9),
            prev: Lsn(0),
            undo_next: None,
            tree: PageId::new(1).unwrap(),
            page: PageId::new(7).unwrap(),
            change,
            base: None,
            chain: chain.to_vec(),
            freed: freed.to_vec(),
            commits: false,
        };
        let records = [
            leaf(Change::Insert { key: b"k".to_vec(), value: new.clone() }, &chain, &[]),
            leaf(Change::Update { key: b"k".to_vec(), old: old.clone(), new: new.clone() }, &chain, &freed),
            leaf(Change::Delete { key: b"k".to_vec(), old: old.clone() }, &[], &freed),
            Record::Structure { pages: Vec::new(), freed: freed.clone() },
            // A value whose chain does not match its length: the readers report it, so every
            // page keeps the whole record.
            leaf(Change::Insert { key: b"k".to_vec(), value: new[..100].to_vec() }, &chain, &[]),
        ];
        let lsn = Lsn(4242);
        for (n, record) in records.iter().enumerate() {
            let body = record.encode();
            let pages = Record::pages_in(&body).unwrap();
            let entries = archive_entries(body.clone(), &pages, page_size);
            let mut named: Vec<PageId> = entries.iter().map(|(p, _)| *p).collect();
            let mut want = pages.clone();
            named.sort_unstable();
            want.sort_unstable();
            assert_eq!(named, want, "record {n}: one entry per page");
            for (p, entry) in &entries {
                let got = Record::decode(entry).unwrap();
                assert_eq!(carries_image(&got, *p), carries_image(record, *p), "record {n}, page {p}");
                assert_eq!(frees(&got, *p), frees(record, *p), "record {n}, page {p}");
                if n < 4 && *p != PageId::new(7).unwrap() {
                    assert!(entry.len() < page_size + 64, "record {n}, page {p}: {} bytes", entry.len());
                }
                if n == 4 {
                    assert_eq!(entry, &body, "record {n}, page {p}");
                }
                let whole =
                    replay_onto(*p, page_size, None, &[(lsn, record.clone())]).map_err(|e| e.to_string());
                let alone = replay_onto(*p, page_size, None, &[(lsn, got)]).map_err(|e| e.to_string());
                if n < 2 && chain.contains(p) {
                    assert!(whole.is_ok(), "record {n}, page {p}: the chain page is rebuilt: {whole:?}");
                }
                match (&whole, &alone) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "record {n}, page {p}"),
                    (Err(_), Err(_)) => {}
                    _ => panic!("record {n}, page {p}: {whole:?} against {alone:?}"),
                }
            }
        }
    }
}
