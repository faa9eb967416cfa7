//! A Foster B-tree (Graefe, Kimura, Kuno 2012) over SwizzleDB's buffer pool.
//!
//! Every node has exactly one incoming reference at all times: a split moves the upper half of a
//! node into a new *foster child* reachable only through its foster parent, and a later
//! *adoption* moves that reference into the real parent. There are no sibling links, so the
//! buffer pool can swizzle and un-swizzle the single reference to each node. The rules are in
//! `README.md` (T1…).

#![forbid(unsafe_code)]

mod api;
mod error;
mod large;
pub mod log;
pub mod node;
mod optimistic;
#[cfg(test)]
mod optimistic_tests;
pub mod overflow;
mod owner;
mod scan;
mod tree;
mod verify;

pub use api::{prefix_end, KeyValue};
pub use error::{CompareAndSwapError, Result, TreeError};
pub use log::{ChangeLog, LeafChange, NodeChange, Overflow, PageChange};
pub use overflow::{max_inline_value_len, MAX_VALUE_LEN};
pub use owner::{max_key_len, max_value_len, validate_page, BTreeOwner};
pub use scan::{key_after, Overlay, RangeIter, Rebuilt, RevRangeIter};
pub use tree::{AutoCommit, GapGate, Gated, NoGate, ReadGate, Tree};
pub use verify::TreeShape;
