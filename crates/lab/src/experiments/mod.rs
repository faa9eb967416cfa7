//! Every benchmark and experiment, by kind: [`bench`](mod@bench) (the `swizzledb bench` workloads
//! and the buffer measurements beside them), [`papers`] (one folder per paper, as
//! `reproduce/figures/<paper>.rs`), [`tools`] (crash test, trace analysis), and the options and
//! helpers they share ([`common`], [`workload_options`]). Each command is declared once, in the
//! [`registry`] of its kind.

pub mod bench;
pub mod common;
pub mod entry;
pub mod papers;
pub mod registry;
pub mod tools;
pub mod workload_options;

#[cfg(test)]
mod tests {
    use crate::support::output::columns;

    /// Every column of every result file is named (in backquotes) in its section of
    /// `docs/results-schema.md`.
    #[test]
    fn results_schema_documents_every_column() {
        let doc = include_str!("../../../../docs/results-schema.md");
        let files: Vec<_> = super::registry::all().iter().flat_map(|e| e.files).copied().collect();
        assert!(files.len() > 20, "the registry lists {} result files", files.len());
        for super::registry::ResultFile { file, section: heading, columns } in files {
            let cols = columns();
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
