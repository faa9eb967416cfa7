//! Page-replacement policies.
//!
//! A policy only *proposes* victims; the buffer pool decides. The contract between the two is in
//! this crate's `README.md` (rules R1–R9): the pool reports hits, inserts, unfixes, rejections,
//! removals and changes of structure; the policy proposes candidates through
//! [`Policy::next_candidate`] and must survive any number of rejections without corrupting its
//! statistics. The same policy objects drive the live pool and the offline trace simulator
//! (`swizzledb-sim`), which plays the pool's part.
//!
//! This file only declares the modules and re-exports their public items. The contract is
//! `policy.rs`; the policies are in `policies/`, one file each, over the building blocks beside
//! this file; `bp_wrapper/` wraps any of them; `kind.rs` and `spec.rs` name and build them.

#![forbid(unsafe_code)]

mod batch;
mod bp_wrapper;
mod capacity;
mod ghost;
mod ghost_ring;
mod kind;
mod lazy;
mod list;
mod policies;
mod policy;
mod residency;
mod spec;
#[cfg(test)]
mod testpool;

pub use bp_wrapper::{BpConfig, BpConfigError, BpStats, BpWrapper, Variant, MAX_QUEUE_SIZE};
pub use kind::{PolicyKind, UnknownPolicy};
pub use policies::arc::ArcPolicy;
pub use policies::car::Car;
pub use policies::clock::Clock;
pub use policies::clock_pro::ClockPro;
pub use policies::fifo::Fifo;
pub use policies::gclock::{Gclock, GclockSweep};
pub use policies::hot_cold::HotCold;
pub use policies::leaf::LeafOnly;
pub use policies::lirs::Lirs;
pub use policies::lru::Lru;
pub use policies::lru_k::LruK;
pub use policies::mq::Mq;
pub use policies::mru::Mru;
pub use policies::random::RandomPolicy;
pub use policies::s3_fifo::S3Fifo;
pub use policies::sieve::Sieve;
pub use policies::two_q::TwoQ;
pub use policy::{Evictor, FrameHook, HitEffect, HookHit, HookTable, Policy, QueuedHook, Rejection, Verdict};
pub use spec::PolicySpec;
pub use swizzledb_sync::{FrameId, PageId};
