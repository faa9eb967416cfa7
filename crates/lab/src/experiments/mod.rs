//! One file per experiment or benchmark; its name is the experiment's name, the stem of its
//! output files and (with `-` for `_`) its command.

pub mod chou_dbmin;
pub mod common;
pub mod crash_test;
pub mod ding_bpwrapper;
pub mod ding_buffer_sizes;
pub mod ding_lock_hold;
pub mod drift;
pub mod emulator;
pub mod fix;
pub mod gilbert_fix_time;
pub mod gilbert_long_run;
pub mod gilbert_policies;
pub mod gilbert_pools;
pub mod gilbert_stack_depth;
pub mod graefe_fig10;
pub mod graefe_fig12;
pub mod graefe_fig13;
pub mod graefe_fig14;
pub mod insert;
pub mod isolation;
pub mod lersch_checkpoints;
pub mod lersch_cleaner;
pub mod lersch_restart;
pub mod lookup;
pub mod read_latency;
pub mod tpcb;
pub mod tpcc;
pub mod trace_analyze;
pub mod values;
pub mod wal;
pub mod workload_options;
pub mod ycsb;

#[cfg(test)]
mod tests {
    use crate::output::columns;

    /// The result files and their row types: the section of `docs/results-schema.md` that
    /// documents each (`None`: the opening section) and its columns.
    fn result_files() -> Vec<(&'static str, Option<&'static str>, Vec<String>)> {
        vec![
            ("rndread.csv", None, columns::<crate::harness::buffer_report::Record>()),
            ("<experiment>-series.csv", None, columns::<super::drift::Sample>()),
            ("fix.csv", None, columns::<super::fix::FixSample>()),
            ("miss-ratio.csv", None, columns::<super::trace_analyze::MissRatioRow>()),
            ("stack-distance.csv", None, columns::<super::trace_analyze::StackDistanceRow>()),
            (
                "gilbert-policies.csv",
                Some("`gilbert-policies.csv`"),
                columns::<super::gilbert_policies::PolicyRow>(),
            ),
            (
                "ding-bpwrapper.csv",
                Some("`ding-bpwrapper.csv`"),
                columns::<super::ding_bpwrapper::BpWrapperRow>(),
            ),
            (
                "ding-buffer-sizes.csv",
                Some("`ding-bpwrapper.csv`"),
                columns::<super::ding_bpwrapper::BpWrapperRow>(),
            ),
            (
                "ding-lock-hold.csv",
                Some("`ding-lock-hold.csv`"),
                columns::<super::ding_lock_hold::LockHoldRow>(),
            ),
            ("chou-dbmin.csv", Some("`chou-dbmin.csv`"), columns::<super::chou_dbmin::DbminRow>()),
            ("emulator.csv", Some("`emulator.csv`"), columns::<super::emulator::EmulatorRow>()),
            ("wal.csv", Some("`wal.csv`"), columns::<super::wal::WalRow>()),
            ("isolation.csv", Some("`isolation.csv`"), columns::<super::isolation::IsolationRow>()),
            (
                "read-latency.csv",
                Some("`read-latency.csv`"),
                columns::<super::read_latency::ReadLatencyRow>(),
            ),
            ("tpcc.csv", Some("`tpcc.csv`"), columns::<crate::tpcc::TpccRow>()),
            ("graefe-fig14.csv", Some("`tpcc.csv`"), columns::<crate::tpcc::TpccRow>()),
            ("tpcb.csv", Some("`tpcb.csv`"), columns::<crate::tpcb::TpcbRow>()),
            ("lersch-checkpoints.csv", Some("`tpcb.csv`"), columns::<crate::tpcb::TpcbRow>()),
            ("lersch-cleaner.csv", Some("`tpcb.csv`"), columns::<crate::tpcb::TpcbRow>()),
            (
                "lersch-restart.csv",
                Some("`lersch-restart.csv`"),
                columns::<super::lersch_restart::LerschRestartRow>(),
            ),
            ("ycsb.csv", Some("`ycsb.csv`"), columns::<crate::ycsb::YcsbRow>()),
            ("values.csv", Some("`values.csv`"), columns::<super::values::ValuesRow>()),
            (
                "gilbert-long-run.csv",
                Some("`gilbert-long-run.csv`"),
                columns::<super::gilbert_long_run::LongRunRow>(),
            ),
            ("gilbert-pools.csv", Some("`gilbert-pools.csv`"), columns::<super::gilbert_pools::PoolsRow>()),
            (
                "gilbert-stack-depth.csv",
                Some("`gilbert-stack-depth.csv`"),
                columns::<super::gilbert_stack_depth::StackDepthRow>(),
            ),
        ]
    }

    /// Every column of every result file is named (in backquotes) in its section of
    /// `docs/results-schema.md`.
    #[test]
    fn results_schema_documents_every_column() {
        let doc = include_str!("../../../../docs/results-schema.md");
        for (file, heading, cols) in result_files() {
            assert!(!cols.is_empty(), "{file}: no columns");
            let section = match heading {
                None => doc.split("\n## ").next().unwrap(),
                Some(h) => doc
                    .split("\n## ")
                    .find(|s| s.starts_with(h))
                    .unwrap_or_else(|| panic!("docs/results-schema.md has no section {h}")),
            };
            let named: std::collections::BTreeSet<&str> = section
                .split('`')
                .skip(1)
                .step_by(2)
                .flat_map(|span| span.split([',', ' ']))
                .map(str::trim)
                .collect();
            for c in &cols {
                assert!(named.contains(c.as_str()), "{file}: column {c} is not documented");
            }
        }
    }

    /// The columns are the ones these files have always had, in the same order (columns are only
    /// ever added at the end).
    #[test]
    fn columns_keep_their_order() {
        let joined = |c: Vec<String>| c.join(",");
        assert_eq!(
            joined(columns::<super::gilbert_policies::PolicyRow>()),
            super::gilbert_policies::CSV_HEADER
        );
        assert_eq!(
            joined(columns::<super::ding_bpwrapper::BpWrapperRow>()),
            super::ding_bpwrapper::CSV_HEADER
        );
        assert_eq!(joined(columns::<super::chou_dbmin::DbminRow>()), super::chou_dbmin::CSV_HEADER);
        assert_eq!(joined(columns::<super::emulator::EmulatorRow>()), super::emulator::CSV_HEADER);
        assert_eq!(joined(columns::<super::wal::WalRow>()), super::wal::CSV_HEADER);
        assert_eq!(
            joined(columns::<super::lersch_restart::LerschRestartRow>()),
            super::lersch_restart::CSV_HEADER
        );
        assert_eq!(joined(columns::<crate::tpcc::TpccRow>()), crate::tpcc::CSV_COLUMNS);
        assert_eq!(joined(columns::<crate::tpcb::TpcbRow>()), crate::tpcb::CSV_COLUMNS);
        assert_eq!(joined(columns::<crate::ycsb::YcsbRow>()), crate::ycsb::CSV_COLUMNS);
        assert_eq!(
            joined(columns::<super::isolation::IsolationRow>()),
            "experiment,mix,locking,threads,rep,per_sec,records_per_sec,retries_per_1000,locks_per_txn"
        );
        assert_eq!(
            joined(columns::<super::read_latency::ReadLatencyRow>()),
            "experiment,kind,threads,rep,reads,reads_per_sec,p50_us,p99_us,p999_us,max_us,writer_commits_per_sec,writer_retries"
        );
        assert_eq!(
            joined(columns::<super::drift::Sample>()),
            "experiment,mode,repetition,t_s,phase,throughput,hit_ratio,logging,io"
        );
        assert_eq!(
            joined(columns::<super::fix::FixSample>()),
            "experiment,mode,latch,repetition,fixes,ns_per_fix,logging,io"
        );
        assert_eq!(
            joined(columns::<super::trace_analyze::MissRatioRow>()),
            "policy,cache_pages,requests,misses,miss_ratio"
        );
        assert_eq!(
            joined(columns::<super::trace_analyze::StackDistanceRow>()),
            "distance_min,distance_max,references,lru_misses,lru_miss_ratio"
        );
    }
}
