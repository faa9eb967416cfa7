//! Reference strings: the pages a workload fixes, in order, with page ids remapped to dense `u32`s.
//! Beside them, what goes wrong reading, building or writing one ([`TraceError`]) and drawing
//! one from a pattern ([`GenError`]; the patterns are in `generate.rs`, above this file).

use rustc_hash::FxHashMap;

/// The most references a [`Trace`] holds. Times are `u32` positions and `u32::MAX` means
/// "never" (see [`crate::NextUse`]), so every position must stay below it.
pub const MAX_REFS: usize = (u32::MAX - 1) as usize;

/// A reference string over page ids `0..page_slots`.
///
/// Ids are `u32`, so 10^8 references take 400 MB. A text trace's ids are *dense*: the first
/// page seen becomes 0, the next new page 1, and so on, whatever the original ids were; a
/// generated trace keeps its ids, which are already below the page count it was drawn from.
/// Replacement does not depend on the ids themselves, only on which references repeat, so the
/// remapping changes no result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    refs: Vec<u32>,
    page_slots: u32,
    distinct: u32,
}

/// What went wrong while reading, building or writing a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The trace could not be read or written.
    #[error("cannot {action} {what}: {source}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file, or what stood for it.
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line of a text trace that is not a page id.
    #[error(
        "line {line}: {content:?} is not a page id; each line must hold one unsigned integer below \
         2^64 (blank lines and text after # are skipped)"
    )]
    BadLine {
        /// The line number, from 1.
        line: u64,
        /// The line as read (shortened past 80 characters).
        content: String,
    },
    /// More references than [`MAX_REFS`].
    #[error("the trace holds more than {MAX_REFS} references; split it into shorter traces")]
    TooLong,
    /// A reference to a page id outside `0..page_slots` (a caller's bug when building a trace).
    #[error("reference {position} is page {page}, outside the {page_slots} page ids of the trace")]
    PageOutOfRange {
        /// The position of the reference, from 0.
        position: usize,
        /// The page id found.
        page: u32,
        /// The declared number of page ids.
        page_slots: u32,
    },
    /// Generating a synthetic trace failed.
    #[error(transparent)]
    Generate(#[from] GenError),
    /// A binary trace that ends inside a fixed-size record.
    #[error(
        "truncated {format} record at byte offset {offset}{of}: expected {expected} bytes, found \
         {found}; the {format} format is a sequence of {expected}-byte records",
        of = if *.decompressed { " of the decompressed data" } else { "" }
    )]
    Truncated {
        /// The format's name (`oracleGeneral`).
        format: &'static str,
        /// Byte offset of the record's first byte, from the start of the (decompressed) data.
        offset: u64,
        /// The record size.
        expected: usize,
        /// The bytes left.
        found: usize,
        /// True if the offset counts decompressed bytes of a zstd input.
        decompressed: bool,
    },
    /// A line of a CSV or txt trace that does not fit the format.
    #[error("line {line}: {reason}; the line reads {content:?}")]
    BadRecord {
        /// The line number, from 1 (the header, if any, is line 1).
        line: u64,
        /// What was expected and what was found.
        reason: String,
        /// The line as read (shortened past 80 characters).
        content: String,
    },
    /// A CSV column specification that cannot be used.
    #[error(
        "bad CSV spec {spec:?}: {reason}; write it as libCacheSim does, e.g. \
         \"time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true\""
    )]
    BadCsvSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// A format name that is not one of the supported ones.
    #[error("unknown trace format {0:?}; use auto, swizzledb, oracle-general, csv or txt")]
    UnknownFormat(String),
    /// The format could not be told from the input, or the input is not in the format given.
    #[error("{what}: {reason}")]
    Undetected {
        /// The input.
        what: String,
        /// Why, and which option to give.
        reason: String,
    },
    /// zstd-compressed input that cannot be decompressed.
    #[error("{what}: the zstd data is corrupt or truncated ({reason}); check the file with `zstd -t`")]
    Zstd {
        /// The input.
        what: String,
        /// The decoder's message.
        reason: String,
    },
    /// A value that does not fit the field of the output format.
    #[error("request {position}: {field} {value} does not fit the {format} format's {bits}-bit field")]
    FieldOverflow {
        /// The request's position, from 0.
        position: usize,
        /// The output format.
        format: &'static str,
        /// The field's name.
        field: &'static str,
        /// The value.
        value: u64,
        /// The field's width.
        bits: u32,
    },
}

/// The accepted syntax of a pattern (`generate.rs`), for error messages.
pub const SYNTAX: &str = "a pattern is uniform, zipf:S, scan, scan:L, loop:N or drift:H:E, or a mixture \
     such as zipf:0.9@70%+scan@30%";

/// A pattern that cannot be parsed or cannot be drawn over the requested pages.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GenError {
    /// The pattern does not parse.
    #[error("bad pattern {spec:?}: {reason}; {SYNTAX}")]
    Syntax {
        /// The pattern, as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The page count is 0.
    #[error("a trace needs at least one page to draw from")]
    NoPages,
    /// A component needs more pages than there are.
    #[error(
        "{component} needs {needed} pages but the trace has only {pages}; lower it or raise the page count"
    )]
    TooFewPages {
        /// The component, as spelled.
        component: String,
        /// The pages it needs.
        needed: u32,
        /// The pages available.
        pages: u32,
    },
    /// More references than a trace holds.
    #[error("{refs} references are more than the {MAX_REFS} a trace holds")]
    TooManyRefs {
        /// The requested length.
        refs: usize,
    },
}

impl Trace {
    /// A trace of `refs` over page ids `0..page_slots`.
    ///
    /// # Errors
    /// [`TraceError::PageOutOfRange`] if a reference is not below `page_slots`, and
    /// [`TraceError::TooLong`] past [`MAX_REFS`] references.
    pub fn new(refs: Vec<u32>, page_slots: u32) -> Result<Trace, TraceError> {
        if refs.len() > MAX_REFS {
            return Err(TraceError::TooLong);
        }
        let mut seen = vec![false; page_slots as usize];
        let mut distinct = 0;
        for (position, &page) in refs.iter().enumerate() {
            let slot = seen.get_mut(page as usize).ok_or(TraceError::PageOutOfRange {
                position,
                page,
                page_slots,
            })?;
            if !*slot {
                *slot = true;
                distinct += 1;
            }
        }
        Ok(Trace { refs, page_slots, distinct })
    }

    /// A trace of arbitrary page ids, remapped to dense ids in order of first appearance.
    ///
    /// # Errors
    /// [`TraceError::TooLong`] past [`MAX_REFS`] references.
    pub fn from_pages(pages: impl IntoIterator<Item = u64>) -> Result<Trace, TraceError> {
        let mut remap = Remap::default();
        for page in pages {
            remap.push(page)?;
        }
        Ok(remap.finish())
    }

    /// The references, in order.
    #[must_use]
    pub fn refs(&self) -> &[u32] {
        &self.refs
    }

    /// The number of references.
    #[must_use]
    pub fn len(&self) -> usize {
        self.refs.len()
    }

    /// True if the trace holds no reference.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.refs.is_empty()
    }

    /// Every reference is below this; the size of per-page arrays.
    #[must_use]
    pub fn page_slots(&self) -> u32 {
        self.page_slots
    }

    /// The number of different pages referenced: the cold misses of any cache.
    #[must_use]
    pub fn distinct_pages(&self) -> u32 {
        self.distinct
    }
}

/// Raw ids below this may get a slot in the direct table (4 bytes each, at most 512 MiB).
const DIRECT_LIMIT: u64 = 1 << 27;

/// Builds a dense trace from arbitrary page ids. Small raw ids (the usual case) are looked up in
/// a plain array, `direct`, about three times faster than a hash map for millions of pages;
/// other ids go to `sparse`. The array grows to cover an id only while it stays within a few
/// entries per reference read, so a single huge id does not allocate a huge array.
#[derive(Default)]
pub(crate) struct Remap {
    /// `direct[raw]`: the dense id plus 1, or 0 if not seen yet. Covers the raw ids below its
    /// length; `sparse` holds none of them.
    direct: Vec<u32>,
    /// The dense ids of raw ids at or beyond `direct.len()`.
    sparse: FxHashMap<u64, u32>,
    distinct: u32,
    refs: Vec<u32>,
}

impl Remap {
    pub(crate) fn push(&mut self, page: u64) -> Result<(), TraceError> {
        if self.refs.len() == MAX_REFS {
            return Err(TraceError::TooLong);
        }
        if page >= self.direct.len() as u64
            && page < DIRECT_LIMIT
            && page < 2 * self.refs.len() as u64 + (1 << 16)
        {
            self.grow(page);
        }
        // Fewer than MAX_REFS pages were seen, so `distinct + 1` fits.
        let id = if let Some(slot) = usize::try_from(page).ok().and_then(|p| self.direct.get_mut(p)) {
            if *slot == 0 {
                self.distinct += 1;
                *slot = self.distinct;
            }
            *slot - 1
        } else {
            let next = self.distinct;
            let id = *self.sparse.entry(page).or_insert(next);
            if id == next {
                self.distinct += 1;
            }
            id
        };
        self.refs.push(id);
        Ok(())
    }

    /// Extends `direct` past `page` and moves the ids it now covers out of `sparse`.
    fn grow(&mut self, page: u64) {
        let len = (page + 1).next_power_of_two().min(DIRECT_LIMIT);
        self.direct.resize(len as usize, 0);
        let direct = &mut self.direct;
        self.sparse.retain(|&raw, &mut id| {
            if raw < len {
                direct[raw as usize] = id + 1;
                false
            } else {
                true
            }
        });
    }

    pub(crate) fn finish(self) -> Trace {
        Trace { refs: self.refs, page_slots: self.distinct, distinct: self.distinct }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Ids small and huge, with small ones first met while the direct table cannot cover
        /// them yet (and moved into it later), map as a plain first-appearance map does.
        #[test]
        fn s6_remap_is_first_appearance_order(
            ids in proptest::collection::vec(
                proptest::prop_oneof![0u64..50, 60_000u64..300_000, proptest::num::u64::ANY],
                0..3_000,
            ),
        ) {
            let mut naive = std::collections::HashMap::new();
            let expected: Vec<u32> = ids.iter().map(|&p| {
                let next = naive.len() as u32;
                *naive.entry(p).or_insert(next)
            }).collect();
            let t = Trace::from_pages(ids.iter().copied()).unwrap();
            proptest::prop_assert_eq!(t.refs(), &expected[..]);
            proptest::prop_assert_eq!(t.distinct_pages() as usize, naive.len());
        }
    }

    #[test]
    fn s6_ids_move_from_the_map_to_the_table() {
        // 100_000 is beyond the table at first; after enough references the table covers it.
        let mut ids = vec![100_000u64, 7];
        ids.extend((0..40_000).map(|i| i % 5));
        ids.push(100_000);
        let t = Trace::from_pages(ids).unwrap();
        assert_eq!(t.refs()[..2], [0, 1]);
        assert_eq!(*t.refs().last().unwrap(), 0);
        assert_eq!(t.distinct_pages(), 7);
    }

    #[test]
    fn new_checks_the_page_range() {
        assert!(matches!(
            Trace::new(vec![0, 3, 1], 3),
            Err(TraceError::PageOutOfRange { position: 1, page: 3, page_slots: 3 })
        ));
        let t = Trace::new(vec![2, 2, 0], 5).unwrap();
        assert_eq!((t.distinct_pages(), t.page_slots()), (2, 5));
    }
}
