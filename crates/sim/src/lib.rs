//! Offline trace simulation for SwizzleDB's replacement policies.
//!
//! The same policy objects that serve the live buffer pool run here over a reference string:
//! a [`SimPool`] plays the pool's part (hits, misses, evictions) for one policy and one cache
//! size. Beside the policies it computes Belady's OPT ([`opt()`]), the lower bound of misses for
//! any demand-paging policy, and the LRU stack-distance histogram ([`StackDistances`]), which
//! gives LRU's miss-ratio curve for every cache size in one pass. [`analyze`] runs a whole
//! comparison in parallel. Traces come from plain-text files ([`read_text`]), from seeded
//! generators ([`Pattern`]), or from libCacheSim's formats (oracleGeneral, CSV, txt), zstd or
//! not, through [`Input`], [`resolve`] and [`RequestReader`]; [`write_oracle_general`] writes
//! oracleGeneral. See `README.md` for what the simulation models and what it does not.
//! The [`emulator`] module is the concurrent counterpart: the BP-Wrapper paper's buffer emulator,
//! where threads share an in-memory buffer and the policies' locks are what is measured.
//!
//! ```
//! use swizzledb_sim::{opt, NextUse, Pattern, SimPool, StackDistances};
//! use swizzledb_replacement::PolicyKind;
//!
//! let pattern: Pattern = "zipf:0.9@70%+scan@30%".parse().unwrap();
//! let trace = pattern.generate(1_000, 20_000, 7).unwrap();
//! let lru = SimPool::for_kind(PolicyKind::Lru, 100, trace.page_slots(), 0).run(trace.refs()).unwrap();
//! let best = opt(&trace, &NextUse::new(&trace), 100);
//! assert!(best.misses <= lru.misses);
//! assert_eq!(StackDistances::new(&trace).lru_misses(100), lru.misses);
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod dbmin;
pub mod emulator;
mod formats;
mod generate;
mod opt;
mod pool;
mod run;
mod source;
mod stack;
mod trace;

pub use formats::{
    hash_id, next_access, resolve, write_oracle_general, CsvSpec, Input, Layout, OracleRecord, ReadOptions,
    Request, RequestReader, TraceFormat, ENGINE_TRACE_MAGIC, NO_NEXT_ACCESS, RECORD_LEN, ZSTD_MAGIC,
};
pub use generate::{Component, Generator, Pattern};
pub use opt::{opt, NextUse, NEVER};
pub use pool::{Counts, SimError, SimPool};
pub use run::{all_subjects, analyze, below_opt, effective_frames, Analysis, Outcome, Plan, Subject};
pub use source::{read_text, read_text_file, write_text, TraceSource};
pub use stack::StackDistances;
pub use swizzledb_replacement::PolicyKind;
pub use trace::{GenError, Trace, TraceError, MAX_REFS, SYNTAX};
