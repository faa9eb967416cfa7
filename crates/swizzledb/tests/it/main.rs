//! The engine's integration tests, one module per concern, in one test binary: one link
//! instead of one per file. (`observability.rs` stays a binary of its own: it installs the
//! process's logger.)

mod common;

mod adv_api;
mod api_oracle;
mod approximate_len;
mod auto_commit;
mod backup;
mod bad_input;
mod callback_panics;
mod compact;
mod compare_and_swap;
mod concurrency;
mod crash;
mod decoupled_cleaner;
mod demanding;
mod doc_claims;
mod drop_tree;
mod durable_default;
mod fix_timing;
mod free_page_wal_rule;
mod histories;
mod honest_tools;
mod hostile_pages;
mod hostile_records;
mod in_memory;
mod instant_restart;
mod io_errors;
mod isolation;
mod isolation_matrix;
mod large_values;
mod large_versions;
mod lazy_split_images;
mod lifecycles;
mod log_archive;
mod log_damage;
mod log_size;
mod map_api;
mod no_unlogged_writes;
mod oracle;
mod policies;
mod pool_size;
mod racing_crash;
mod read_only;
mod refused_settings;
mod restart;
mod scan_limit;
mod single_page_recovery;
mod small_pool_scans;
mod snapshot_isolation;
mod snapshots;
mod sweep;
mod trace;
mod transactions;
mod typed;
