//! The file layer: every byte SwizzleDB stores goes through a [`Vfs`] and its [`VfsFile`]s.
//!
//! [`OsFs`] is the operating system's file system; [`MemFs`] keeps files in memory for in-memory
//! databases; [`FaultFs`] keeps a visible and a durable state of every file, so tests can crash it
//! and fail chosen calls. The rules each keeps are numbered in `README.md` (IO1–IO16).

pub mod fault;
mod flock;
pub mod mem;
pub mod vfs;

pub use fault::{CrashMode, Fault, FaultFs, FaultRule, Op};
pub use mem::MemFs;
pub use vfs::{FileId, OpenMode, OsFs, Vfs, VfsFile};
