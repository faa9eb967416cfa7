//! The lowest SwizzleDB layer: identifier newtypes and the frame latch.
//!
//! Everything above this crate speaks of pages, frames and log positions through the newtypes in
//! [`ids`], and protects frame contents with the [`latch::Latch`] described in `README.md`.
//! [`hint::prefetch`] lets the layers above, which have no `unsafe`, ask for a cache line early;
//! [`thread::thread_number`] numbers the live threads for per-thread slots.

pub mod hint;
pub mod ids;
pub mod latch;
mod primitive;
pub mod thread;

pub use ids::{FrameId, Lsn, PageId, TxnId};
pub use latch::{Latch, LatchMode};
