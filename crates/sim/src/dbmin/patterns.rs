//! The reference patterns of the query locality set model (QLSM; Chou & DeWitt 1986, Sec. 3.1
//! and 3.2.1–3.2.7): generators of each pattern's page reference string over one file, each
//! pattern's locality-set size rule and local policy, Yao's formula, the residual-value rule of
//! independent random references and the sizing of looping hierarchical references
//! (README "DBMIN workload", decisions D1–D4).
//!
//! Page numbers are positions within the file (`0..pages`). Index files are complete trees
//! ([`Tree`]) numbered level by level from the root (page 0).

use super::LocalPolicy;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use thiserror::Error;

/// The residual-value threshold β of the IR and LH rules (Sec. 3.2.4, 3.2.7; decision D3): a
/// page whose expected number of re-references `(k - b) / b` exceeds β is worth keeping. The
/// paper gives no value; 5 keeps the hash table of query VI (residual about 69) and drops the
/// leaves of query IV's index probes (about 4.0) and the data pages of nonclustered index
/// scans (about 0.1), which gives the hot-set sizes of Table 2.
pub const BETA: f64 = 5.0;

/// A pattern whose parameters cannot produce a reference string.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum PatternError {
    /// A size that must be positive is zero.
    #[error("{what} must be at least 1; give a positive value")]
    Zero {
        /// Which parameter.
        what: &'static str,
    },
    /// More distinct records were asked for than the file holds.
    #[error("{asked} distinct records asked of a file of {records}; ask for at most {records}")]
    TooManyRecords {
        /// Records asked for.
        asked: u64,
        /// Records in the file.
        records: u64,
    },
    /// A leaf or range lies outside the tree.
    #[error("leaves {first}..{end} lie outside a tree of {leaves} leaves; stay below {leaves}")]
    OutsideTree {
        /// First leaf asked for.
        first: u64,
        /// One past the last leaf asked for.
        end: u64,
        /// Leaves of the tree.
        leaves: u64,
    },
    /// The tree has more pages than page numbers can name.
    #[error("a tree of fan-out {fanout} and height {height} has more than 2^32 pages; make it smaller")]
    TreeTooLarge {
        /// Fan-out.
        fanout: u32,
        /// Height.
        height: u32,
    },
}

/// A locality set's desired size and local policy, as a file-open event carries them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LsSpec {
    /// Desired size in pages (DBMIN's `l`), at least 1.
    pub size: u32,
    /// The local replacement policy.
    pub policy: LocalPolicy,
}

/// Yao's formula (CACM 1977), exact product form: the expected number of distinct pages touched
/// when `k` distinct records are chosen at random among `n` records stored `n / m` to a page
/// on `m` pages:
///
/// `b = m * (1 - prod_{i=1..k} (n - n/m - i + 1) / (n - i + 1))`.
///
/// The product is the probability that a given page holds none of the `k` records. It is zero
/// (every page touched) as soon as `k > n - n/m`. `k = 0` touches nothing; `m = 0` or `n = 0`
/// give 0.
pub fn yao(n: u64, m: u64, k: u64) -> f64 {
    if n == 0 || m == 0 || k == 0 {
        return 0.0;
    }
    let (nf, per_page) = (n as f64, n as f64 / m as f64);
    if k as f64 > nf - per_page {
        return m as f64;
    }
    let mut miss = 1.0;
    for i in 1..=k {
        let i = i as f64;
        miss *= (nf - per_page - i + 1.0) / (nf - i + 1.0);
        if miss <= 0.0 {
            return m as f64;
        }
    }
    m as f64 * (1.0 - miss)
}

/// The residual value of a page (Sec. 3.2.4): `(k - b) / b`, the expected number of
/// re-references of each of the `b` distinct pages among `k` references. 0 when `b` is 0.
pub fn residual_value(k: u64, b: f64) -> f64 {
    if b <= 0.0 {
        0.0
    } else {
        (k as f64 - b) / b
    }
}

/// The IR rule (Sec. 3.2.4, decisions D2–D3): `k` random accesses to `n` records on `m` pages
/// want `ceil(b)` buffers (Yao's `b`, at least 1) if the residual value exceeds `beta`, and one
/// buffer otherwise (the paper's "l", read as 1: a sparsely re-referenced page need not stay).
pub fn ir_ls_size(n: u64, m: u64, k: u64, beta: f64) -> u32 {
    let b = yao(n, m, k);
    if residual_value(k, b) > beta {
        (b.ceil() as u32).max(1)
    } else {
        1
    }
}

/// A complete index tree (Sec. 3.2.7): every non-leaf page has `fanout` children, the root is
/// level 0 and the leaves are level `height` (`fanout^height` leaves, each holding
/// `entries_per_leaf` key-pointer pairs). Pages are numbered level by level from the root:
/// level `i` starts at page `1 + f + ... + f^(i-1)`. Height 0 is a one-page index.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    /// Children per non-leaf page (ignored at height 0).
    pub fanout: u32,
    /// Levels below the root.
    pub height: u32,
    /// Key-pointer pairs per leaf.
    pub entries_per_leaf: u32,
}

impl Tree {
    fn check(&self) -> Result<(), PatternError> {
        if self.entries_per_leaf == 0 {
            return Err(PatternError::Zero { what: "entries per leaf" });
        }
        if self.height > 0 && self.fanout == 0 {
            return Err(PatternError::Zero { what: "fan-out" });
        }
        let too_large = PatternError::TreeTooLarge { fanout: self.fanout, height: self.height };
        let mut total: u64 = 0;
        for level in 0..=self.height {
            let width = (self.fanout as u64).checked_pow(level).ok_or_else(|| too_large.clone())?;
            total = total
                .checked_add(width)
                .filter(|t| *t <= u32::MAX as u64)
                .ok_or_else(|| too_large.clone())?;
        }
        Ok(())
    }

    /// Pages at `level` (`fanout^level`, saturating at `u64::MAX`).
    pub fn width(&self, level: u32) -> u64 {
        (self.fanout as u64).saturating_pow(level)
    }

    /// Leaves of the tree (saturating).
    pub fn leaves(&self) -> u64 {
        self.width(self.height)
    }

    /// Key-pointer pairs in the leaves (saturating).
    pub fn entries(&self) -> u64 {
        self.leaves().saturating_mul(self.entries_per_leaf as u64)
    }

    /// Pages of the whole tree, `u32::MAX` for a tree too large to number (which
    /// [`RefPattern::references`] rejects).
    pub fn pages(&self) -> u32 {
        let total = (0..=self.height).fold(0u64, |sum, l| sum.saturating_add(self.width(l)));
        total.min(u32::MAX as u64) as u32
    }

    /// The page at `level` on the path from the root to leaf `leaf`.
    pub fn page(&self, level: u32, leaf: u64) -> u32 {
        let offset: u64 = (0..level).map(|l| self.width(l)).sum();
        (offset + leaf / self.width(self.height - level)) as u32
    }

    /// The root-to-leaf path of leaf `leaf`: `height + 1` pages.
    pub fn path(&self, leaf: u64) -> impl Iterator<Item = u32> + '_ {
        (0..=self.height).map(move |level| self.page(level, leaf))
    }
}

/// The LH rule (Sec. 3.2.7, decision D4): `k` probes of random distinct keys through `tree`
/// want `1 + sum_{i=1..j} ceil(b_i) + 1` buffers: the root, the pages of levels `1..=j` and one
/// scratch buffer for the levels below, where `b_i` is Yao's estimate of the pages touched at
/// level `i` (`n` = the tree's entries, `m` = the level's pages) and `j` is the deepest level
/// whose residual value `(k - b_i) / b_i` exceeds `beta` (0 if none: root and scratch, 2).
/// A one-page tree (height 0) wants 1.
pub fn lh_ls_size(tree: &Tree, k: u64, beta: f64) -> u32 {
    if tree.height == 0 {
        return 1;
    }
    let n = tree.entries();
    let kept: Vec<u32> = (1..=tree.height)
        .map(|level| yao(n, tree.width(level), k))
        .take_while(|b| residual_value(k, *b) > beta)
        .map(|b| b.ceil() as u32)
        .collect();
    kept.iter().fold(2u32, |sum, &b| sum.saturating_add(b))
}

/// One QLSM reference pattern over one file, with the parameters that fix its reference string.
/// Random patterns carry their seed: the same pattern gives the same string with the same build.
#[derive(Clone, Debug, PartialEq)]
pub enum RefPattern {
    /// SS: pages `0..pages`, each once (a scan of an unordered relation).
    StraightSequential {
        /// Pages of the file.
        pages: u32,
    },
    /// CS: records stored `per_page` to a page, in clusters laid out one after another from
    /// record 0; cluster `c` of `(size, scans)` is read `scans` times before the scan moves on
    /// (the inner relation of a merge join).
    ClusteredSequential {
        /// Records per page (blocking factor).
        per_page: u32,
        /// `(records, scans)` per cluster, in file order.
        clusters: Vec<(u32, u32)>,
    },
    /// LS: pages `0..pages`, `loops` times over (the inner relation of a nested-loops join).
    LoopingSequential {
        /// Pages of the file.
        pages: u32,
        /// Scans.
        loops: u32,
    },
    /// IR: `k` distinct records chosen at random among `pages * per_page`, in random order
    /// (data pages through a nonclustered index, a hash table).
    IndependentRandom {
        /// Pages of the file.
        pages: u32,
        /// Records per page.
        per_page: u32,
        /// Records accessed.
        k: u64,
        /// Seed.
        seed: u64,
    },
    /// CR: clusters of records placed at random over the file (distinct records overall),
    /// each cluster read `scans` times in a row (the inner relation through a nonclustered,
    /// nonunique index with a clustered, nonunique outer).
    ClusteredRandom {
        /// Pages of the file.
        pages: u32,
        /// Records per page.
        per_page: u32,
        /// `(records, scans)` per cluster, in access order.
        clusters: Vec<(u32, u32)>,
        /// Seed.
        seed: u64,
    },
    /// SH: one root-to-leaf traversal (fetching a single tuple).
    StraightHierarchical {
        /// The index.
        tree: Tree,
        /// The leaf reached.
        leaf: u64,
    },
    /// H/SS: a traversal to leaf `first`, then leaves `first..first + leaves` once each.
    HierarchicalStraight {
        /// The index.
        tree: Tree,
        /// The first leaf.
        first: u64,
        /// Leaves scanned.
        leaves: u64,
    },
    /// H/CS: a traversal to the first leaf, then a CS scan of the leaves' key-pointer pairs
    /// (`tree.entries_per_leaf` to a leaf), in clusters from the first entry of the leaves.
    HierarchicalClustered {
        /// The index.
        tree: Tree,
        /// `(pairs, scans)` per cluster, in key order.
        clusters: Vec<(u32, u32)>,
    },
    /// LH: `k` root-to-leaf traversals for random distinct keys (the inner index of an index
    /// join).
    LoopingHierarchical {
        /// The index.
        tree: Tree,
        /// Traversals.
        k: u64,
        /// Seed.
        seed: u64,
    },
}

/// Pages of consecutive records in clusters, each cluster scanned `scans` times; a page read
/// for consecutive records is one reference.
fn clustered_pages(per_page: u32, clusters: &[(u32, u32)], first_page: u32) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let mut start: u64 = 0;
    for &(size, scans) in clusters {
        for _ in 0..scans {
            for record in start..start + size as u64 {
                let page = first_page + (record / per_page as u64) as u32;
                if out.last() != Some(&page) {
                    out.push(page);
                }
            }
        }
        start += size as u64;
    }
    out
}

/// The most pages any cluster of consecutive records spans (CS rule, decision D1).
fn clustered_span(per_page: u32, clusters: &[(u32, u32)]) -> u32 {
    let mut start: u64 = 0;
    let mut most = 1;
    for &(size, _) in clusters {
        if size > 0 {
            let end = start + size as u64 - 1;
            most = most.max((end / per_page as u64 - start / per_page as u64 + 1) as u32);
        }
        start += size as u64;
    }
    most
}

fn check_clusters(per_page: u32, clusters: &[(u32, u32)]) -> Result<(), PatternError> {
    if per_page == 0 {
        return Err(PatternError::Zero { what: "records per page" });
    }
    if clusters.iter().any(|&(size, _)| size == 0) {
        return Err(PatternError::Zero { what: "cluster size" });
    }
    Ok(())
}

impl RefPattern {
    /// The pattern's two-letter name in the paper (SS, CS, LS, IR, CR, SH, H/SS, H/CS, LH).
    pub fn name(&self) -> &'static str {
        match self {
            RefPattern::StraightSequential { .. } => "SS",
            RefPattern::ClusteredSequential { .. } => "CS",
            RefPattern::LoopingSequential { .. } => "LS",
            RefPattern::IndependentRandom { .. } => "IR",
            RefPattern::ClusteredRandom { .. } => "CR",
            RefPattern::StraightHierarchical { .. } => "SH",
            RefPattern::HierarchicalStraight { .. } => "H/SS",
            RefPattern::HierarchicalClustered { .. } => "H/CS",
            RefPattern::LoopingHierarchical { .. } => "LH",
        }
    }

    /// The reference string: page numbers within the file, in order. Bad parameters (zero
    /// sizes, more records than the file holds, leaves outside the tree) are errors.
    pub fn references(&self) -> Result<Vec<u32>, PatternError> {
        match self {
            RefPattern::StraightSequential { pages } => Ok((0..*pages).collect()),
            RefPattern::ClusteredSequential { per_page, clusters } => {
                check_clusters(*per_page, clusters)?;
                Ok(clustered_pages(*per_page, clusters, 0))
            }
            RefPattern::LoopingSequential { pages, loops } => {
                Ok((0..*loops).flat_map(|_| 0..*pages).collect())
            }
            RefPattern::IndependentRandom { pages, per_page, k, seed } => {
                let records = *pages as u64 * *per_page as u64;
                if *k > records {
                    return Err(PatternError::TooManyRecords { asked: *k, records });
                }
                let mut rng = SmallRng::seed_from_u64(*seed);
                let picks = rand::seq::index::sample(&mut rng, records as usize, *k as usize);
                Ok(picks.iter().map(|r| (r as u64 / *per_page as u64) as u32).collect())
            }
            RefPattern::ClusteredRandom { pages, per_page, clusters, seed } => {
                check_clusters(*per_page, clusters)?;
                let records = *pages as u64 * *per_page as u64;
                let asked: u64 = clusters.iter().map(|&(size, _)| size as u64).sum();
                if asked > records {
                    return Err(PatternError::TooManyRecords { asked, records });
                }
                let mut rng = SmallRng::seed_from_u64(*seed);
                let picks = rand::seq::index::sample(&mut rng, records as usize, asked as usize).into_vec();
                let mut out = Vec::new();
                let mut start = 0;
                for &(size, scans) in clusters {
                    let members = &picks[start..start + size as usize];
                    for _ in 0..scans {
                        out.extend(members.iter().map(|r| (*r as u64 / *per_page as u64) as u32));
                    }
                    start += size as usize;
                }
                Ok(out)
            }
            RefPattern::StraightHierarchical { tree, leaf } => {
                tree.check()?;
                check_leaves(tree, *leaf, 1)?;
                Ok(tree.path(*leaf).collect())
            }
            RefPattern::HierarchicalStraight { tree, first, leaves } => {
                tree.check()?;
                if *leaves == 0 {
                    return Err(PatternError::Zero { what: "leaves scanned" });
                }
                check_leaves(tree, *first, *leaves)?;
                let mut out: Vec<u32> = tree.path(*first).collect();
                out.extend((first + 1..first + leaves).map(|leaf| tree.page(tree.height, leaf)));
                Ok(out)
            }
            RefPattern::HierarchicalClustered { tree, clusters } => {
                tree.check()?;
                check_clusters(tree.entries_per_leaf, clusters)?;
                let pairs: u64 = clusters.iter().map(|&(size, _)| size as u64).sum();
                let leaves = pairs.div_ceil(tree.entries_per_leaf as u64);
                check_leaves(tree, 0, leaves)?;
                let mut out: Vec<u32> = tree.path(0).collect();
                out.pop();
                out.extend(clustered_pages(tree.entries_per_leaf, clusters, tree.page(tree.height, 0)));
                Ok(out)
            }
            RefPattern::LoopingHierarchical { tree, k, seed } => {
                tree.check()?;
                let entries = tree.entries();
                if *k > entries {
                    return Err(PatternError::TooManyRecords { asked: *k, records: entries });
                }
                let mut rng = SmallRng::seed_from_u64(*seed);
                let keys = rand::seq::index::sample(&mut rng, entries as usize, *k as usize);
                Ok(keys.iter().flat_map(|key| tree.path(key as u64 / tree.entries_per_leaf as u64)).collect())
            }
        }
    }

    /// The locality set the QLSM gives this pattern (Sec. 3.2.1–3.2.7; decisions D1–D4):
    ///
    /// | pattern | size | policy |
    /// | --- | --- | --- |
    /// | SS, SH, H/SS | 1 | `Single` |
    /// | CS, H/CS | pages spanned by the largest cluster | `Fifo` |
    /// | LS | pages of the file | `Mru` |
    /// | IR | [`ir_ls_size`] | `Any` |
    /// | CR | Yao's pages of the largest cluster (footnote 9), rounded up | `Fifo` |
    /// | LH | [`lh_ls_size`] | `Lifo` if at most 2 (root and scratch), else `Hierarchical` |
    pub fn locality_set(&self, beta: f64) -> LsSpec {
        let (size, policy) = match self {
            RefPattern::StraightSequential { .. }
            | RefPattern::StraightHierarchical { .. }
            | RefPattern::HierarchicalStraight { .. } => (1, LocalPolicy::Single),
            RefPattern::ClusteredSequential { per_page, clusters } => {
                (clustered_span((*per_page).max(1), clusters), LocalPolicy::Fifo)
            }
            RefPattern::HierarchicalClustered { tree, clusters } => {
                (clustered_span(tree.entries_per_leaf.max(1), clusters), LocalPolicy::Fifo)
            }
            RefPattern::LoopingSequential { pages, .. } => (*pages, LocalPolicy::Mru),
            RefPattern::IndependentRandom { pages, per_page, k, .. } => {
                (ir_ls_size(*pages as u64 * *per_page as u64, *pages as u64, *k, beta), LocalPolicy::Any)
            }
            RefPattern::ClusteredRandom { pages, per_page, clusters, .. } => {
                let largest = clusters.iter().map(|&(size, _)| size).max().unwrap_or(1) as u64;
                let n = *pages as u64 * *per_page as u64;
                (yao(n, *pages as u64, largest).ceil() as u32, LocalPolicy::Fifo)
            }
            RefPattern::LoopingHierarchical { tree, k, .. } => {
                let size = lh_ls_size(tree, *k, beta);
                // D4: root and scratch only (2, or a one-page index) is the paper's LIFO case;
                // kept levels below the root need the upper levels kept whatever the load order.
                let policy = if size <= 2 { LocalPolicy::Lifo } else { LocalPolicy::Hierarchical };
                (size, policy)
            }
        };
        LsSpec { size: size.max(1), policy }
    }
}

fn check_leaves(tree: &Tree, first: u64, count: u64) -> Result<(), PatternError> {
    let leaves = tree.leaves();
    if first + count > leaves {
        return Err(PatternError::OutsideTree { first, end: first + count, leaves });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Yao by hand: 4 records on 2 pages (2 per page). One record touches one page: the product
    /// is (4 - 2 - 1 + 1) / (4 - 1 + 1) = 2/4, b = 2 (1 - 1/2) = 1. Two records: the product is
    /// 2/4 * 1/3 = 1/6, b = 2 * 5/6 = 5/3 (of the 6 pairs, the 2 on one page touch 1, the other 4
    /// touch 2: (2 + 8) / 6 = 5/3). Three records > n - n/m = 2: every page, b = 2.
    #[test]
    fn d2_yao_matches_hand_values() {
        assert!(close(yao(4, 2, 1), 1.0));
        assert!(close(yao(4, 2, 2), 5.0 / 3.0));
        assert!(close(yao(4, 2, 3), 2.0));
        // 6 records on 3 pages, 2 records: P(page missed) = 4/6 * 3/5 = 2/5, b = 3 * 3/5 = 9/5.
        assert!(close(yao(6, 3, 2), 9.0 / 5.0));
    }

    #[test]
    fn d2_yao_limits() {
        assert_eq!(yao(100, 10, 0), 0.0);
        assert_eq!(yao(0, 0, 5), 0.0);
        // One record per page: every record is its own page.
        assert!(close(yao(50, 50, 17), 17.0));
        // One page: any access touches it.
        assert!(close(yao(50, 1, 3), 1.0));
        // All records: all pages.
        assert!(close(yao(1000, 50, 1000), 50.0));
        // Large files: close to the with-replacement estimate m (1 - (1 - 1/m)^k).
        let approx = 455.0 * (1.0 - (1.0 - 1.0 / 455.0f64).powi(100));
        assert!((yao(10_010, 455, 100) - approx).abs() < 0.5, "{}", yao(10_010, 455, 100));
        // Never above k nor m, and increasing in k.
        let mut last = 0.0;
        for k in 0..=200 {
            let b = yao(200, 20, k);
            assert!(b <= k as f64 + 1e-9 && b <= 20.0 + 1e-9 && b >= last - 1e-12);
            last = b;
        }
    }

    #[test]
    fn d3_residual_rule_picks_one_or_b() {
        // 10 accesses to 10 pages of 1 record: b = 10, residual 0: one buffer.
        assert_eq!(ir_ls_size(10, 10, 10, BETA), 1);
        // 1400 accesses to 20 pages: every page, residual 69 > 5: all 20.
        assert_eq!(ir_ls_size(28_000, 20, 1400, BETA), 20);
        // The threshold is strict: residual exactly beta keeps one buffer.
        // 12 accesses to 2 pages (all touched): residual (12 - 2) / 2 = 5.
        assert_eq!(ir_ls_size(12, 2, 12, 5.0), 1);
        assert_eq!(ir_ls_size(12, 2, 12, 4.99), 2);
        assert_eq!(residual_value(3, 0.0), 0.0);
    }

    /// Tree f = 3, h = 2: levels start at pages 0, 1, 4; leaf 7 lies under level-1 page
    /// 1 + 7 / 3 = 3 and is page 4 + 7 = 11.
    #[test]
    fn d4_tree_numbering_by_hand() {
        let tree = Tree { fanout: 3, height: 2, entries_per_leaf: 2 };
        assert_eq!(tree.pages(), 13);
        assert_eq!(tree.path(7).collect::<Vec<_>>(), vec![0, 3, 11]);
        let sh = RefPattern::StraightHierarchical { tree, leaf: 7 };
        assert_eq!(sh.references().unwrap(), vec![0, 3, 11]);
        assert_eq!(sh.locality_set(BETA), LsSpec { size: 1, policy: LocalPolicy::Single });
    }

    /// LH sizing by hand. Tree f = 4, h = 2 (16 leaves of 1 entry), k = 16 probes (every key):
    /// level 1: b_1 = 4, residual 3; level 2: b_2 = 16, residual 0. With beta = 2 level 1 is kept:
    /// 1 + 4 + 1 = 6; with beta = 3 (strict) only root and scratch: 2. A one-page tree wants 1.
    #[test]
    fn d4_lh_size_by_hand() {
        let tree = Tree { fanout: 4, height: 2, entries_per_leaf: 1 };
        assert_eq!(lh_ls_size(&tree, 16, 2.0), 6);
        assert_eq!(lh_ls_size(&tree, 16, 3.0), 2);
        let flat = Tree { fanout: 1, height: 0, entries_per_leaf: 500 };
        assert_eq!(lh_ls_size(&flat, 200, BETA), 1);
        let lh = RefPattern::LoopingHierarchical { tree, k: 16, seed: 3 };
        let refs = lh.references().unwrap();
        // Each traversal is root, level-1 page, leaf; all 16 leaves once.
        assert_eq!(refs.len(), 48);
        assert!(refs
            .chunks(3)
            .all(|p| p[0] == 0 && (1..5).contains(&p[1]) && p[2] == 5 + (p[1] - 1) * 4 + (p[2] - 5) % 4));
        let leaves: BTreeSet<u32> = refs.chunks(3).map(|p| p[2]).collect();
        assert_eq!(leaves, (5..21).collect());
        assert_eq!(lh.locality_set(2.0), LsSpec { size: 6, policy: LocalPolicy::Hierarchical });
        assert_eq!(lh.locality_set(3.0), LsSpec { size: 2, policy: LocalPolicy::Lifo });
    }

    #[test]
    fn d1_sequential_patterns_by_hand() {
        let ss = RefPattern::StraightSequential { pages: 4 };
        assert_eq!(ss.references().unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(ss.locality_set(BETA).size, 1);
        let ls = RefPattern::LoopingSequential { pages: 3, loops: 2 };
        assert_eq!(ls.references().unwrap(), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(ls.locality_set(BETA), LsSpec { size: 3, policy: LocalPolicy::Mru });
        // 2 records per page; cluster 0 = records 0..3 (pages 0, 0, 1) read twice: 0 1 0 1;
        // cluster 1 = record 3 (page 1), read once: the same page as the last reference;
        // cluster 2 = records 4..9 (pages 2, 2, 3, 3, 4) read twice: 2 3 4 2 3 4.
        let cs = RefPattern::ClusteredSequential { per_page: 2, clusters: vec![(3, 2), (1, 1), (5, 2)] };
        assert_eq!(cs.references().unwrap(), vec![0, 1, 0, 1, 2, 3, 4, 2, 3, 4]);
        // The largest cluster spans 3 pages (the paper's ceil(5 / 2) = 3 as well).
        assert_eq!(cs.locality_set(BETA), LsSpec { size: 3, policy: LocalPolicy::Fifo });
        // A cluster of 2 starting mid-page spans 2 pages although 2 / 2 = 1 (D1).
        let straddle = RefPattern::ClusteredSequential { per_page: 2, clusters: vec![(1, 1), (2, 3)] };
        assert_eq!(straddle.references().unwrap(), vec![0, 1, 0, 1, 0, 1]);
        assert_eq!(straddle.locality_set(BETA).size, 2);
    }

    /// H/SS over f = 2, h = 2 (leaves are pages 3..7): to leaf 1 = 0, 1, 4, then leaves 2, 3 =
    /// pages 5, 6. H/CS with 3 pairs per leaf and clusters (4 pairs, 2 scans), (2, 1): path
    /// 0, 1, then leaf pages 3 4 3 4 for the first cluster (pairs 0..4), 4 for pairs 4 and 5.
    #[test]
    fn d1_hierarchical_patterns_by_hand() {
        let tree = Tree { fanout: 2, height: 2, entries_per_leaf: 3 };
        let hss = RefPattern::HierarchicalStraight { tree, first: 1, leaves: 3 };
        assert_eq!(hss.references().unwrap(), vec![0, 1, 4, 5, 6]);
        assert_eq!(hss.locality_set(BETA), LsSpec { size: 1, policy: LocalPolicy::Single });
        let hcs = RefPattern::HierarchicalClustered { tree, clusters: vec![(4, 2), (2, 1)] };
        assert_eq!(hcs.references().unwrap(), vec![0, 1, 3, 4, 3, 4]);
        assert_eq!(hcs.locality_set(BETA), LsSpec { size: 2, policy: LocalPolicy::Fifo });
    }

    #[test]
    fn d2_random_patterns() {
        // One record per page and k = all: a permutation of the pages.
        let ir = RefPattern::IndependentRandom { pages: 30, per_page: 1, k: 30, seed: 9 };
        let refs = ir.references().unwrap();
        let mut sorted = refs.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..30).collect::<Vec<_>>());
        assert_ne!(refs, sorted, "a seeded shuffle, not the identity");
        assert_eq!(ir.references().unwrap(), refs, "deterministic under the seed");
        assert_eq!(ir.locality_set(BETA), LsSpec { size: 1, policy: LocalPolicy::Any });
        // 4 records per page, k = 6: no page can be hit more than 4 times, and 6 distinct records.
        let ir = RefPattern::IndependentRandom { pages: 5, per_page: 4, k: 6, seed: 1 };
        let refs = ir.references().unwrap();
        assert_eq!(refs.len(), 6);
        assert!(refs.iter().all(|p| *p < 5));
        // CR: clusters (3 records, 2 scans), (1, 1): a cluster's pages repeat in the same order.
        let cr =
            RefPattern::ClusteredRandom { pages: 10, per_page: 2, clusters: vec![(3, 2), (1, 1)], seed: 4 };
        let refs = cr.references().unwrap();
        assert_eq!(refs.len(), 7);
        assert_eq!(refs[0..3], refs[3..6]);
        // Yao for 3 of 20 records on 10 pages: 10 (1 - 18/20 * 17/19 * 16/18) = 2.84..., so 3.
        assert_eq!(cr.locality_set(BETA), LsSpec { size: 3, policy: LocalPolicy::Fifo });
    }

    /// Sizing a pattern over a tree too large to number (which `references` rejects) gives a
    /// size, not an arithmetic overflow: f = 2^16, h = 5 has 2^80 leaves.
    #[test]
    fn d4_sizes_of_trees_too_large_are_not_overflows() {
        let huge = Tree { fanout: 1 << 16, height: 5, entries_per_leaf: 1 << 20 };
        assert_eq!(huge.width(5), u64::MAX);
        assert_eq!(huge.pages(), u32::MAX);
        let lh = RefPattern::LoopingHierarchical { tree: huge, k: 1000, seed: 0 };
        assert!(matches!(lh.references(), Err(PatternError::TreeTooLarge { .. })));
        assert!(lh.locality_set(BETA).size >= 1);
        assert!(lh.locality_set(0.0).size >= 1);
    }

    #[test]
    fn bad_parameters_are_errors() {
        let ir = RefPattern::IndependentRandom { pages: 2, per_page: 2, k: 5, seed: 0 };
        assert_eq!(ir.references(), Err(PatternError::TooManyRecords { asked: 5, records: 4 }));
        let cs = RefPattern::ClusteredSequential { per_page: 0, clusters: vec![(1, 1)] };
        assert!(matches!(cs.references(), Err(PatternError::Zero { .. })));
        let tree = Tree { fanout: 2, height: 1, entries_per_leaf: 1 };
        let sh = RefPattern::StraightHierarchical { tree, leaf: 2 };
        assert!(matches!(sh.references(), Err(PatternError::OutsideTree { .. })));
        let huge = Tree { fanout: 1 << 16, height: 3, entries_per_leaf: 1 };
        let sh = RefPattern::StraightHierarchical { tree: huge, leaf: 0 };
        assert!(matches!(sh.references(), Err(PatternError::TreeTooLarge { .. })));
    }
}
