//! The shipped regression gate, end to end: `scripts/ci-gate` (the script the workflow in
//! .github/workflows/queue-regression.yml runs) on a real server, with a regressed and an
//! identical candidate; and `compare` refusing results that measured different things.

use crate::support::{said as text, shared_url};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn gate(out: &Path, extra: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_dbq-bench");
    let mut args = vec!["--database-url", shared_url(), "--pairs", "3"];
    args.extend(["--out", out.to_str().unwrap(), bin, bin]);
    args.extend(extra);
    Command::new("scripts/ci-gate")
        .args(&args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("DATABASE_URL")
        .output()
        .unwrap()
}

fn dbq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

#[test]
fn the_shipped_gate_catches_a_slower_handler_and_passes_an_identical_candidate() {
    let dir = tempfile::tempdir().unwrap();
    // The handler 2 → 6 ms: both halves, jobs/s and latency.
    let slower = r#"consumers.handler={ duration = { fixed = "6ms" } }"#;
    let regressed = gate(&dir.path().join("slower"), &["--cand-set", slower]);
    let said = text(&regressed);
    assert_eq!(regressed.status.code(), Some(99), "{said}");
    // Caught on the jobs/s of the drained backlog (while busy, or over the window).
    assert!(
        said.contains("regression: run: throughput_per_s")
            || said.contains("regression: run: completed_per_s"),
        "{said}"
    );
    // Latency is judged too (on a loaded machine its verdict may be inconclusive).
    let judged = |figure: &str| {
        let row = format!("| run | {figure} |");
        said.contains(&row)
            && said
                .lines()
                .filter(|l| l.starts_with(&row))
                .all(|l| !l.contains("not gated"))
    };
    assert!(
        judged("e2e_p50_ms") && judged("e2e_p99_ms"),
        "latency is gated too: {said}"
    );
    assert!(said.contains("REGRESSED (3 pairs"), "{said}");

    // The same binary and settings on both sides: no regression. The throughput half only,
    // with a false-alarm rate of 0.1%, so that the suite's own load on the shared server
    // cannot fail the test by chance.
    let same = gate(
        &dir.path().join("same"),
        &[
            "--scenario",
            "scenarios/gate.toml",
            "--",
            "--false-alarm-rate",
            "0.1%",
        ],
    );
    assert_eq!(same.status.code(), Some(0), "{}", text(&same));
    assert!(
        text(&same).contains("no regression (3 pairs"),
        "{}",
        text(&same)
    );

    // compare refuses two results that measured different scenarios, naming the difference.
    let base = dir.path().join("slower/gate/base");
    let other = dir.path().join("slower/gate-latency/cand");
    let refused = dbq(&["compare", base.to_str().unwrap(), other.to_str().unwrap()]);
    crate::support::assert_bad_input(
        &refused,
        "another scenario",
        "scenario: baseline gate, candidate gate-latency",
    );
    // Allowed, it says so and judges; and the figures go out for Bencher and
    // github-action-benchmark.
    let bmf = dir.path().join("bmf.json");
    let gab = dir.path().join("gab.json");
    let allowed = dbq(&[
        "compare",
        base.to_str().unwrap(),
        other.to_str().unwrap(),
        "--allow-different",
        "scenario",
        "--export-bmf",
        bmf.to_str().unwrap(),
        "--export-github-benchmark",
        gab.to_str().unwrap(),
    ]);
    assert!(
        text(&allowed).contains(
            "warning: compared although they differ (--allow-different scenario): scenario"
        ),
        "{}",
        text(&allowed)
    );
    let bmf: Value = serde_json::from_str(&std::fs::read_to_string(bmf).unwrap()).unwrap();
    let measures = &bmf["gate-latency: seed on PostgreSQL"];
    assert!(
        measures["e2e_p99_ms"]["value"].as_f64().unwrap() > 0.0,
        "{bmf}"
    );
    assert!(
        measures["e2e_p99_ms"]["lower_value"].as_f64()
            <= measures["e2e_p99_ms"]["upper_value"].as_f64(),
        "{bmf}"
    );
    let gab: Value = serde_json::from_str(&std::fs::read_to_string(gab).unwrap()).unwrap();
    assert!(
        gab.as_array().unwrap().iter().any(|e| e["unit"] == "µs"),
        "{gab}"
    );
}
