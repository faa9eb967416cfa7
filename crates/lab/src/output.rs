//! Where results go: the output directory, CSV and JSON rows, charts.

use std::error::Error;
use std::path::Path;

use crate::harness::buffer_report as report;
use crate::plot;

/// Creates the output directory (before any work, so that bad input writes nothing).
pub fn prepare_out(out: Option<&Path>) -> Result<(), String> {
    if let Some(dir) = out {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create --out {}: {e}", dir.display()))?;
        let probe = dir.join(".swizzledb-write-test");
        std::fs::write(&probe, b"").map_err(|e| format!("cannot write to --out {}: {e}", dir.display()))?;
        let _ = std::fs::remove_file(probe);
    }
    Ok(())
}

/// Draws `chart` to `<out>/<name>.svg` and `.png` and says so on stderr (stdout carries only
/// the tables, for scripts).
pub fn write_plot(out: Option<&Path>, name: &str, chart: &plot::Chart) -> Result<(), Box<dyn Error>> {
    let Some(dir) = out else { return Ok(()) };
    let files = plot::write_chart(&dir.join(name), chart)?;
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    eprintln!("Plotted {}.", names.join(" and "));
    Ok(())
}

/// Writes `<name>.csv` and `<name>.json` into `out` and says so.
pub fn write_outputs(out: Option<&Path>, name: &str, rows: &[report::Record]) -> Result<(), Box<dyn Error>> {
    let Some(dir) = out else { return Ok(()) };
    let csv = dir.join(format!("{name}.csv"));
    let json = dir.join(format!("{name}.json"));
    report::write_csv(&csv, rows, true).map_err(|e| format!("writing {}: {e}", csv.display()))?;
    report::write_json(&json, rows).map_err(|e| format!("writing {}: {e}", json.display()))?;
    eprintln!("Wrote {} and {}.", csv.display(), json.display());
    Ok(())
}
