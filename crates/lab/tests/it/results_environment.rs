//! Every result file carries its environment: a cheap experiment (`sim chou-dbmin --quick` on
//! one mix, one algorithm, one NCQ) run through the same path as every command writes
//! `<name>.csv`, `<name>.json` with an `environment` object, and `<name>.env.json` beside the
//! CSV with the same environment (`docs/results-schema.md`, "The environment").

use clap::Parser;
use serde_json::Value;
use swizzledb_lab::experiments::papers::chou::dbmin as chou_dbmin;
use swizzledb_lab::experiments::registry::SimCommand;
use swizzledb_lab::support::environment::{command_line, Environment, UNKNOWN};

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    sim: SimCommand,
}

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fields the schema documents, with values this machine can give.
fn check_environment(env: &Value, what: &str) {
    let text = |key: &str| {
        env[key].as_str().unwrap_or_else(|| panic!("{what}: {key} is not a string: {env}")).to_string()
    };
    let commit = text("commit");
    assert!(
        commit == UNKNOWN || (commit.len() >= 40 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{what}: commit {commit:?}"
    );
    assert!(env["dirty"].is_boolean() || env["dirty"].is_null(), "{what}: dirty {}", env["dirty"]);
    for key in ["command", "cpu", "kernel", "os", "arch", "version"] {
        assert!(!text(key).is_empty(), "{what}: empty {key}");
    }
    if cfg!(target_os = "linux") {
        assert_ne!(text("kernel"), UNKNOWN, "{what}: Linux has /proc/sys/kernel/osrelease");
    }
    assert!(env["cores"].as_u64().is_some_and(|n| n >= 1), "{what}: cores {}", env["cores"]);
    let args = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
    assert_eq!(text("command"), command_line(args), "{what}: the command line of this process");
    let back: Environment = serde_json::from_value(env.clone()).unwrap();
    assert_eq!(&back, Environment::current(), "{what}: the environment read back");
}

#[test]
fn a_run_writes_csv_json_and_their_environment() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let cli = Cli::try_parse_from([
        "sim",
        "chou-dbmin",
        "--quick",
        "--mixes",
        "m3",
        "--figures",
        "2",
        "--algorithms",
        "dbmin",
        "--ncq",
        "1",
        "--jobs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ])
    .unwrap();
    cli.sim.run().unwrap();

    let mut csv = csv::Reader::from_path(out.join("chou-dbmin.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(str::to_string).collect();
    let csv_rows = csv.records().count();
    assert!(csv_rows > 0, "chou-dbmin.csv has no rows");
    assert_eq!(header.join(","), chou_dbmin::CSV_HEADER, "a plain CSV: the header comes first");

    let json = read_json(&out.join("chou-dbmin.json"));
    assert_eq!(json["schema"], 1);
    let rows = json["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), csv_rows, "the JSON holds the CSV's rows");
    let columns: Vec<&str> = rows[0].as_object().unwrap().keys().map(String::as_str).collect();
    for c in &header {
        assert!(columns.contains(&c.as_str()), "the JSON rows lack column {c}");
    }
    check_environment(&json["environment"], "chou-dbmin.json");

    let sidecar = read_json(&out.join("chou-dbmin.env.json"));
    assert_eq!(sidecar["schema"], 1);
    assert_eq!(sidecar["environment"], json["environment"], "the CSV's environment is the JSON's");
    check_environment(&sidecar["environment"], "chou-dbmin.env.json");
}
