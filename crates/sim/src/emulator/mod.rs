//! The BP-Wrapper paper's buffer emulator (Ding, Shan & Jiang, TPDS 2015, §4.3, Figs. 11–13):
//! an in-memory buffer of C frames over D data pages, driven by T threads that each loop "pick a
//! page, access it through the buffer, compute for a while". There is no I/O: a miss costs only
//! the replacement work and the page-table updates, so the replacement policy's lock is what
//! limits scaling. The crate `README.md` ("Buffer emulator", rules E1–E9) describes the model.
//!
//! ```
//! use swizzledb_sim::emulator::{EmuConfig, EmuVariant, Emulator, Stop};
//!
//! let config = EmuConfig { data_pages: 2_000, buffer_pages: 200, threads: 2, ..EmuConfig::new(EmuVariant::BatPref) };
//! let emu = Emulator::new(&config).unwrap();
//! let result = emu.run(0.0, Stop::Accesses(5_000));
//! assert_eq!(result.accesses, 10_000);
//! assert_eq!(result.hits + result.misses, result.accesses);
//! emu.check().unwrap();
//! ```

mod buffer;
mod check;
mod config;
mod partition;
mod run;
mod spin;

pub use check::Inconsistency;
pub use config::{EmuConfig, EmuError, EmuVariant, UnknownVariant, DEFAULT_ZIPF};
pub use run::{Emulator, LockCounts, PageStream, RunResult, Stop};
pub use spin::spins_per_us;
