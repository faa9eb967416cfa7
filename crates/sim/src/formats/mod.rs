//! Trace formats beyond the simulator's own text: libCacheSim's `oracleGeneral`, CSV and `txt`
//! traces, zstd compression and standard input. The layouts and the detection rules are in
//! `docs/trace-format.md`; this module reads every format as a stream of [`Request`]s. It only
//! declares the formats' files and names what the crate uses of them.

mod csv;
mod input;
mod lines;
mod oracle;
mod reader;
mod text;

pub(crate) use lines::Lines;
pub(crate) use text::TextReader;

pub use csv::CsvSpec;
pub use input::{Input, ZSTD_MAGIC};
pub use lines::{hash_id, Request};
pub use oracle::{next_access, write_oracle_general, OracleRecord, NO_NEXT_ACCESS, RECORD_LEN};
pub use reader::{resolve, Layout, ReadOptions, RequestReader, TraceFormat, ENGINE_TRACE_MAGIC};
