//! Tools beside the experiments: the crash test and trace analysis, and their registry (the
//! module `entry` says what an entry holds). `trace record` and `trace export` belong to the
//! `swizzledb` command, which embeds [`TraceCommand`] beside them.

pub mod crash_test;
pub mod trace_analyze;

use super::entry::registry;

registry! {
    /// The `swizzledb trace` commands the lab runs: analysis and synthetic traces.
    pub enum TraceCommand in "trace" {
        /// Miss ratios of every replacement policy and of Belady's OPT at several cache sizes, and
        /// the LRU stack-distance histogram, over a recorded, plain-text or synthetic trace, or one
        /// of libCacheSim's (oracleGeneral, CSV, txt; zstd-compressed or not)
        "analyze" => Analyze(trace_analyze::AnalyzeArgs), trace_analyze::analyze,
            files [
                ("miss-ratio.csv", trace_analyze::MissRatioRow, None),
                ("stack-distance.csv", trace_analyze::StackDistanceRow, None),
            ];
        /// Write a synthetic reference string (uniform, Zipf, scans, loops, mixtures, a drifting
        /// hot set) as a plain-text trace
        "generate" => Generate(trace_analyze::GenerateArgs), trace_analyze::generate,
            files [];
    }
}

registry! {
    /// The top-level tools.
    pub enum ToolCommand in "" {
        /// Kill a logged writer with SIGKILL at random moments, restart, and check that every
        /// acknowledged commit survived, nothing uncommitted is visible and the tree is valid
        "crash-test" => CrashTest(crash_test::CrashTestArgs), crash_test::run,
            files [];
    }
}
