//! The papers' experiments, one folder per paper as `reproduce/figures/<paper>.rs` has one file
//! per paper; a file's command and output stem are `<paper>-<file>` (`graefe/fig10.rs`:
//! `graefe-fig10`), except Ding's buffer emulator (`bench emulator`, `emulator.csv`) and
//! Chou's simulator (`sim chou-dbmin`, `chou-dbmin.csv`). The registry of `swizzledb experiment`
//! and `swizzledb sim` is here (the module `entry` says what an entry holds).

pub mod chou;
pub mod ding;
pub mod gilbert;
pub mod graefe;
pub mod lersch;

use super::bench;
use super::entry::registry;
use crate::harness::buffer_report::Record;
use crate::workloads::{tpcb::TpcbRow, tpcc::TpccRow};

registry! {
    /// `swizzledb experiment`: one experiment of the papers.
    pub enum ExperimentCommand in "experiment" {
        /// Graefe et al. 2014 Fig. 10/11: lookups as the data grows from 1/8 of the pool to 8 times
        /// it; swizzling should match main-memory in memory and degrade like traditional beyond
        "graefe-fig10" | "fig10" => Fig10(graefe::fig10::Fig10Args), graefe::fig10::execute,
            files [("graefe-fig10.csv", Record, None)];
        /// Graefe et al. 2014 Fig. 12: random-order insertions into an index that fits in memory
        /// (2,000,000 new records after 400,000 preloaded); swizzling should match main-memory and
        /// beat traditional
        "graefe-fig12" | "fig12" => Fig12(graefe::fig12::Fig12Args), graefe::fig12::execute,
            files [("graefe-fig12.csv", Record, None)];
        /// Graefe et al. 2014 Fig. 13: a drifting working set (16 MiB hot range, 25% replaced every
        /// 5 s) in 1 GiB of data with a 128 MiB pool; swizzling should beat traditional in the steady
        /// state and recover from each shift as fast
        "graefe-fig13" | "fig13" => Fig13(bench::drift::DriftArgs), graefe::fig13::execute,
            files [
                ("graefe-fig13.csv", Record, None),
                ("graefe-fig13-series.csv", bench::drift::Sample, None),
            ];
        /// Graefe et al. 2014 Fig. 14: TPC-C in the three buffer modes with logging and locking each
        /// on and off, the pool larger than the data, descents coupling latches as the paper's
        /// engine did (no optimistic descents); swizzling should gain about 10% over traditional
        /// with both on and about 50% with both off, and match main-memory throughout
        "graefe-fig14" | "fig14" => Fig14(graefe::fig14::Fig14Args), graefe::fig14::execute,
            files [("graefe-fig14.csv", TpccRow, Some("`tpcc.csv`"))];
        /// Lersch 2015 Figs. 5.1-5.4: TPC-B throughput and CPU against the checkpoint interval,
        /// classical (fuzzy) against decoupled (log-based) checkpoints; the thesis found them equal
        /// above 1 s, the decoupled ones using slightly more CPU
        "lersch-checkpoints" => LerschCheckpoints(lersch::checkpoints::LerschCheckpointsArgs),
            lersch::checkpoints::execute,
            files [("lersch-checkpoints.csv", TpcbRow, Some("`tpcb.csv`"))];
        /// Lersch 2015 Figs. 5.5-5.8: TPC-B throughput, CPU and pages written against the page
        /// cleaner's interval, the classical cleaner against the decoupled one (replaying the log
        /// archive); the thesis found the decoupled one equal or better
        "lersch-cleaner" => LerschCleaner(lersch::cleaner::LerschCleanerArgs), lersch::cleaner::execute,
            files [("lersch-cleaner.csv", TpcbRow, Some("`tpcb.csv`"))];
        /// Beside Lersch 2015 (Sec. 2.1.1 describes instant restart, after Graefe, Guy and Sauer):
        /// restart time after a kill against the log since the checkpoint,
        /// classical restart (analysis and redo of that log) against instant restart (the log
        /// archive's state and index, redo per page on fetch and in the background); the issue's
        /// target is an instant open within 0.1 s at 1 GiB of log
        "lersch-restart" => LerschRestart(lersch::restart::LerschRestartArgs), lersch::restart::execute,
            files [("lersch-restart.csv", lersch::restart::LerschRestartRow, Some("`lersch-restart.csv`"))];
        /// The cost of one fix() hit per buffer mode and latch mode, in nanoseconds (Graefe et al.
        /// 2014; Gilbert 2017 found a swizzled fix about 30% cheaper than a page-table fix)
        "fix" => Fix(bench::fix::FixArgs), bench::fix::execute,
            files [("fix.csv", bench::fix::FixSample, None)];
        /// Gilbert 2017 Figs. 3.4/3.5/3.9: lookups with each replacement policy, swizzling off and
        /// on, at pools of a fraction of the data: throughput, hit ratio, evictioner time per call and
        /// refused candidates (about 12 minutes with the defaults; --duration 1 for a quicker look)
        "gilbert-policies" | "policies" => Policies(gilbert::policies::PoliciesArgs),
            gilbert::policies::execute,
            files [("gilbert-policies.csv", gilbert::policies::PolicyRow, Some("`gilbert-policies.csv`"))];
        /// Gilbert 2017 Figs. 2.3 and 3.4-3.9: TPC-C against pools of a few percent of the data to
        /// more than all of it, swizzling off and on, RANDOM, GCLOCK and CAR, every run cold:
        /// throughput, miss ratio, evictioner time per call and in total (about 15 minutes with the
        /// defaults; --duration 1 --repeat 1 for a quicker look)
        "gilbert-pools" => Pools(gilbert::pools::PoolsArgs), gilbert::pools::execute,
            files [("gilbert-pools.csv", gilbert::pools::PoolsRow, Some("`gilbert-pools.csv`"))];
        /// Gilbert 2017 Figs. 1.5/3.1: the LRU stack-depth histogram of TPC-C's page references,
        /// traced per thread count; the share of references at a distance below 20 and the frames LRU
        /// needs for a 75% hit ratio
        "gilbert-stack-depth" => StackDepth(gilbert::stack_depth::StackDepthArgs),
            gilbert::stack_depth::execute,
            files [
                (
                    "gilbert-stack-depth.csv",
                    gilbert::stack_depth::StackDepthRow,
                    Some("`gilbert-stack-depth.csv`")
                ),
            ];
        /// Gilbert 2017 Fig. 2.12: long TPC-C runs with swizzling off and on, starting cold, as a
        /// throughput time series (the gain of swizzling appears once the pool is warm)
        "gilbert-long-run" => LongRun(gilbert::long_run::LongRunArgs), gilbert::long_run::execute,
            files [("gilbert-long-run.csv", gilbert::long_run::LongRunRow, Some("`gilbert-long-run.csv`"))];
        /// Gilbert 2017 Figs. 2.7/2.8: nanoseconds per fix() inside TPC-C by hit or miss and latch
        /// mode, swizzling off and on, at a pool larger than the data and at a small one
        "gilbert-fix-time" => FixTime(gilbert::fix_time::FixTimeArgs), gilbert::fix_time::execute,
            files [("gilbert-fix-time.csv", gilbert::fix_time::FixTimeRow, Some("`gilbert-fix-time.csv`"))];
        /// Ding, Shan & Jiang 2015 (BP-Wrapper) on the live engine: lookups at a pool of half the data
        /// with CLOCK, LRU, 2Q and hot/cold locked on every access (locked-*), 2Q with prefetching
        /// alone (bpw-pref-2q) and batching alone (bpw-batch-2q), and behind BP-Wrapper (bpw-*;
        /// hot/cold's hot hits are not queued, the paper's Fig. 7), at 1 to 16 threads (Figs. 8-9):
        /// throughput, hit ratio and lock waits per million accesses
        "ding-bpwrapper" | "bp-wrapper" => BpWrapper(ding::bpwrapper::BpWrapperArgs),
            ding::bpwrapper::execute,
            files [("ding-bpwrapper.csv", ding::bpwrapper::BpWrapperRow, Some("`ding-bpwrapper.csv`"))];
        /// Ding et al. 2015 Fig. 4: the replacement lock's time per page access (held plus waited
        /// for) and the hit ratio as BP-Wrapper's batch size grows (queue size S and threshold T)
        "ding-lock-hold" => LockHold(ding::lock_hold::LockHoldArgs), ding::lock_hold::execute,
            files [("ding-lock-hold.csv", ding::lock_hold::LockHoldRow, Some("`ding-lock-hold.csv`"))];
        /// Ding et al. 2015 Fig. 10: hit ratio and throughput of CLOCK, locked 2Q and BP-Wrapper 2Q
        /// as the pool grows (--direct-io for device reads)
        "ding-buffer-sizes" => BufferSizes(ding::buffer_sizes::BufferSizesArgs), ding::buffer_sizes::execute,
            files [("ding-buffer-sizes.csv", ding::bpwrapper::BpWrapperRow, Some("`ding-bpwrapper.csv`"))];
    }
}

registry! {
    /// `swizzledb sim`: the simulators of buffer management papers.
    pub enum SimCommand in "sim" {
        /// Chou & DeWitt 1986, Figs. 2-5: throughput vs concurrent queries of DBMIN, HOT, WS, RAND,
        /// FIFO and CLOCK for mixes M1-M3 at no, half and full sharing, and the simple algorithms
        /// with feedback load control; prints the check of the paper's claims (a few minutes)
        "chou-dbmin" | "dbmin" => Dbmin(chou::dbmin::DbminArgs), chou::dbmin::run,
            files [("chou-dbmin.csv", chou::dbmin::DbminRow, Some("`chou-dbmin.csv`"))];
    }
}
