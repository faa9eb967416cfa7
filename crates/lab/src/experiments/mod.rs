//! Every benchmark and experiment, by kind: [`bench`] (the `swizzledb bench` workloads and the
//! buffer measurements beside them), [`papers`] (one folder per paper, as
//! `reproduce/figures/<paper>.rs`), [`tools`] (crash test, trace analysis), and the options
//! and helpers they share ([`common`], [`workload_options`]).

pub mod bench;
pub mod common;
pub mod papers;
pub mod tools;
pub mod workload_options;

#[cfg(test)]
mod tests {
    use crate::support::output::columns;

    /// The result files and their row types: the section of `docs/results-schema.md` that
    /// documents each (`None`: the opening section) and its columns.
    fn result_files() -> Vec<(&'static str, Option<&'static str>, Vec<String>)> {
        vec![
            ("rndread.csv", None, columns::<crate::harness::buffer_report::Record>()),
            ("<experiment>-series.csv", None, columns::<crate::experiments::bench::drift::Sample>()),
            ("fix.csv", None, columns::<crate::experiments::bench::fix::FixSample>()),
            ("miss-ratio.csv", None, columns::<crate::experiments::tools::trace_analyze::MissRatioRow>()),
            (
                "stack-distance.csv",
                None,
                columns::<crate::experiments::tools::trace_analyze::StackDistanceRow>(),
            ),
            (
                "gilbert-policies.csv",
                Some("`gilbert-policies.csv`"),
                columns::<crate::experiments::papers::gilbert::policies::PolicyRow>(),
            ),
            (
                "ding-bpwrapper.csv",
                Some("`ding-bpwrapper.csv`"),
                columns::<crate::experiments::papers::ding::bpwrapper::BpWrapperRow>(),
            ),
            (
                "ding-buffer-sizes.csv",
                Some("`ding-bpwrapper.csv`"),
                columns::<crate::experiments::papers::ding::bpwrapper::BpWrapperRow>(),
            ),
            (
                "ding-lock-hold.csv",
                Some("`ding-lock-hold.csv`"),
                columns::<crate::experiments::papers::ding::lock_hold::LockHoldRow>(),
            ),
            (
                "chou-dbmin.csv",
                Some("`chou-dbmin.csv`"),
                columns::<crate::experiments::papers::chou::dbmin::DbminRow>(),
            ),
            (
                "emulator.csv",
                Some("`emulator.csv`"),
                columns::<crate::experiments::papers::ding::emulator::EmulatorRow>(),
            ),
            ("wal.csv", Some("`wal.csv`"), columns::<crate::experiments::bench::wal::WalRow>()),
            (
                "isolation.csv",
                Some("`isolation.csv`"),
                columns::<crate::experiments::bench::isolation::IsolationRow>(),
            ),
            (
                "read-latency.csv",
                Some("`read-latency.csv`"),
                columns::<crate::experiments::bench::read_latency::ReadLatencyRow>(),
            ),
            ("tpcc.csv", Some("`tpcc.csv`"), columns::<crate::workloads::tpcc::TpccRow>()),
            ("graefe-fig14.csv", Some("`tpcc.csv`"), columns::<crate::workloads::tpcc::TpccRow>()),
            ("tpcb.csv", Some("`tpcb.csv`"), columns::<crate::workloads::tpcb::TpcbRow>()),
            ("lersch-checkpoints.csv", Some("`tpcb.csv`"), columns::<crate::workloads::tpcb::TpcbRow>()),
            ("lersch-cleaner.csv", Some("`tpcb.csv`"), columns::<crate::workloads::tpcb::TpcbRow>()),
            (
                "lersch-restart.csv",
                Some("`lersch-restart.csv`"),
                columns::<crate::experiments::papers::lersch::restart::LerschRestartRow>(),
            ),
            ("ycsb.csv", Some("`ycsb.csv`"), columns::<crate::workloads::ycsb::YcsbRow>()),
            ("values.csv", Some("`values.csv`"), columns::<crate::experiments::bench::values::ValuesRow>()),
            (
                "gilbert-long-run.csv",
                Some("`gilbert-long-run.csv`"),
                columns::<crate::experiments::papers::gilbert::long_run::LongRunRow>(),
            ),
            (
                "gilbert-pools.csv",
                Some("`gilbert-pools.csv`"),
                columns::<crate::experiments::papers::gilbert::pools::PoolsRow>(),
            ),
            (
                "gilbert-stack-depth.csv",
                Some("`gilbert-stack-depth.csv`"),
                columns::<crate::experiments::papers::gilbert::stack_depth::StackDepthRow>(),
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
            joined(columns::<crate::experiments::papers::gilbert::policies::PolicyRow>()),
            crate::experiments::papers::gilbert::policies::CSV_HEADER
        );
        assert_eq!(
            joined(columns::<crate::experiments::papers::ding::bpwrapper::BpWrapperRow>()),
            crate::experiments::papers::ding::bpwrapper::CSV_HEADER
        );
        assert_eq!(
            joined(columns::<crate::experiments::papers::chou::dbmin::DbminRow>()),
            crate::experiments::papers::chou::dbmin::CSV_HEADER
        );
        assert_eq!(
            joined(columns::<crate::experiments::papers::ding::emulator::EmulatorRow>()),
            crate::experiments::papers::ding::emulator::CSV_HEADER
        );
        assert_eq!(
            joined(columns::<crate::experiments::bench::wal::WalRow>()),
            crate::experiments::bench::wal::CSV_HEADER
        );
        assert_eq!(
            joined(columns::<crate::experiments::papers::lersch::restart::LerschRestartRow>()),
            crate::experiments::papers::lersch::restart::CSV_HEADER
        );
        assert_eq!(joined(columns::<crate::workloads::tpcc::TpccRow>()), crate::workloads::tpcc::CSV_COLUMNS);
        assert_eq!(joined(columns::<crate::workloads::tpcb::TpcbRow>()), crate::workloads::tpcb::CSV_COLUMNS);
        assert_eq!(joined(columns::<crate::workloads::ycsb::YcsbRow>()), crate::workloads::ycsb::CSV_COLUMNS);
        assert_eq!(
            joined(columns::<crate::experiments::bench::isolation::IsolationRow>()),
            "experiment,mix,locking,threads,rep,per_sec,records_per_sec,retries_per_1000,locks_per_txn"
        );
        assert_eq!(
            joined(columns::<crate::experiments::bench::read_latency::ReadLatencyRow>()),
            "experiment,kind,threads,rep,reads,reads_per_sec,p50_us,p99_us,p999_us,max_us,writer_commits_per_sec,writer_retries"
        );
        assert_eq!(
            joined(columns::<crate::experiments::bench::drift::Sample>()),
            "experiment,mode,repetition,t_s,phase,throughput,hit_ratio,logging,io"
        );
        assert_eq!(
            joined(columns::<crate::experiments::bench::fix::FixSample>()),
            "experiment,mode,latch,repetition,fixes,ns_per_fix,logging,io"
        );
        assert_eq!(
            joined(columns::<crate::experiments::tools::trace_analyze::MissRatioRow>()),
            "policy,cache_pages,requests,misses,miss_ratio"
        );
        assert_eq!(
            joined(columns::<crate::experiments::tools::trace_analyze::StackDistanceRow>()),
            "distance_min,distance_max,references,lru_misses,lru_miss_ratio"
        );
    }
}
