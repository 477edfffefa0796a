//! `dbq-bench matrix`: cells run interleaved on one server and are compared; cells run apart
//! merge into the same comparison; a cell that lost a job fails the matrix.

use crate::support::{shared_mariadb_url, shared_url};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn matrix(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .arg("matrix")
        .args(args)
        .output()
        .unwrap()
}

/// smoke.toml shortened, on the shared server.
fn base_args<'a>(url: &'a str, out: &'a str) -> Vec<&'a str> {
    let mut args = short_smoke(out);
    args.extend(["--db", "url", "--database-url", url]);
    args
}

/// smoke.toml shortened, its results in `out`.
fn short_smoke(out: &str) -> Vec<&str> {
    vec![
        "scenarios/smoke.toml",
        "--set",
        "phases.0.duration=1s",
        "--set",
        "phases.1.duration=1s",
        "--out",
        out,
        "--quiet",
    ]
}

fn comparison(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("comparison.json")).unwrap()).unwrap()
}

fn started(run_dir: &Path) -> String {
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    s["meta"]["started_at"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_matrix_runs_cells_interleaved_and_compares_them_to_the_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = base_args(shared_url(), out);
    args.extend(["--vary", "queue.variant=seed,batch", "--repeat", "2"]);
    let o = matrix(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "expected exit 0; stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let c = comparison(dir.path());
    let cells = c["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    assert_eq!(cells[0]["label"], "queue.variant=seed");
    assert_eq!(cells[1]["label"], "queue.variant=batch");
    assert_eq!(cells[1]["baseline"], 0);
    for cell in cells {
        assert_eq!(
            cell["runs"].as_array().unwrap().len(),
            2,
            "two repeats: {cell}"
        );
        assert_eq!(cell["lost_jobs"], false);
        let t = &cell["figures"]["throughput_per_s"];
        assert!(
            t["min"].as_f64() <= t["median"].as_f64() && t["median"].as_f64() <= t["max"].as_f64()
        );
    }
    assert!(
        cells[1]["ratio_to_baseline"]["throughput_per_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    for f in ["comparison.md", "comparison.csv", "comparison.html"] {
        assert!(dir.path().join(f).exists(), "{f} missing");
    }
    // The design measured is recorded whole: the batch cell's claim batch, in the JSON and
    // in the table every format shows.
    assert_eq!(cells[0]["design"]["claim_batch"], 1);
    assert_eq!(cells[1]["design"]["claim_batch"], 10);
    assert_eq!(cells[1]["design"]["variant"], "batch");
    let md = std::fs::read_to_string(dir.path().join("comparison.md")).unwrap();
    assert!(md.contains("| batch ×10 on PostgreSQL |"), "{md}");
    // Interleaved: seed, batch, seed, batch.
    let run = |cell: &Value, r: usize| started(Path::new(cell["runs"][r]["dir"].as_str().unwrap()));
    let order = [
        run(&cells[0], 0),
        run(&cells[1], 0),
        run(&cells[0], 1),
        run(&cells[1], 1),
    ];
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "expected runs in the order A B A B; start times: {order:?}"
    );
}

#[test]
fn cells_run_apart_merge_into_one_comparison_and_a_lost_job_fails_it() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (dir, cell) in [(&a, "1"), (&b, "0")] {
        let mut args = base_args(shared_url(), dir.path().to_str().unwrap());
        args.extend(["--vary", "queue.variant=seed,delete", "--cell", cell]);
        let o = matrix(&args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "cell {cell}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // Written into a directory that does not exist yet (as the README's CI recipe does).
    let parent = tempfile::tempdir().unwrap();
    let merged = parent.path().join("comparison");
    let o = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["matrix", "merge"])
        .args([a.path(), b.path()])
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let c = comparison(&merged);
    let labels: Vec<&str> = c["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["queue.variant=seed", "queue.variant=delete"]);
    assert_eq!(c["cells"][1]["baseline"], 0);

    // A run whose proof found a lost job fails the matrix, whatever its speed.
    let cell_dir = std::fs::read_dir(a.path().join("cells"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let summary_path = cell_dir.join("r1/summary.json");
    let mut s: Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_path).unwrap()).unwrap();
    s["jobs"]["lost"] = 1.into();
    s["accounting"]["ok"] = false.into();
    std::fs::write(&summary_path, serde_json::to_string(&s).unwrap()).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["matrix", "merge"])
        .args([a.path(), b.path()])
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "a lost job must fail the matrix");
    let md = String::from_utf8_lossy(&o.stdout);
    assert!(
        md.contains("LOST JOBS"),
        "expected the comparison to say so: {md}"
    );
}

#[test]
fn matrix_input_errors_are_one_line_and_exit_2() {
    for (args, expected) in [
        (
            vec!["scenarios/smoke.toml", "--vary", "queue.variant"],
            "--vary queue.variant: expected key.path=value1,value2",
        ),
        (
            vec!["scenarios/smoke.toml", "--vary", "queue.variant=seed,bogus"],
            "queue.variant",
        ),
        (
            vec!["scenarios/smoke.toml", "--cell", "5"],
            "--cell 5: the matrix has cells 0 to 0",
        ),
    ] {
        let o = matrix(&args);
        crate::support::assert_bad_input(&o, &format!("{args:?}"), expected);
    }
}

#[test]
fn a_matrix_puts_both_engines_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("engines.toml");
    std::fs::write(
        &scenario,
        format!(
            r#"
seed = 3
[database]
provider = "url"
url = "{}"
[producers]
count = 2
rate = 100
[consumers]
count = 4
poll_interval = "20ms"
handler = {{ duration = {{ fixed = "1ms" }} }}
[[phases]]
name = "steady"
duration = "1s"
[matrix]
axes = [[
  {{ label = "postgres" }},
  {{ label = "mariadb", set = {{ "database.engine" = "mariadb", "database.url" = "{}" }} }},
]]
"#,
            shared_url(),
            shared_mariadb_url()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = matrix(&[
        scenario.to_str().unwrap(),
        "--vary",
        "queue.variant=seed,batch",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let c = comparison(&out);
    let cells = c["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    for cell in cells {
        assert_eq!(cell["lost_jobs"], false, "{cell}");
        let run_dir = Path::new(cell["runs"][0]["dir"].as_str().unwrap());
        let s: Value =
            serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
                .unwrap();
        let engine = if cell["label"].as_str().unwrap().starts_with("mariadb") {
            "MariaDB"
        } else {
            "PostgreSQL"
        };
        let version = s["database"]["server_version"].as_str().unwrap();
        assert!(version.starts_with(engine), "{}: {version}", cell["label"]);
        assert!(s["jobs"]["completed"].as_u64().unwrap() > 0);
    }
}

/// A server setting as an axis: each cell gets a local server of its own started with its
/// value (vacuum settings need a restart), and the cell's summary records what the server
/// reported.
#[test]
fn a_server_setting_varies_by_cell_on_servers_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = short_smoke(out);
    args.extend([
        "--db",
        "local",
        "--vary",
        "database.settings.autovacuum_naptime=1s,60s",
    ]);
    let o = matrix(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let c = comparison(dir.path());
    let naptimes: Vec<String> = c["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| {
            let run = Path::new(cell["runs"][0]["dir"].as_str().unwrap());
            let text = std::fs::read_to_string(run.join("summary.json")).unwrap();
            let s: Value = serde_json::from_str(&text).unwrap();
            s["meta"]["server_settings"]["autovacuum_naptime"].to_string()
        })
        .collect();
    assert_eq!(naptimes, ["\"1s\"", "\"60s\""], "{c}");
}
