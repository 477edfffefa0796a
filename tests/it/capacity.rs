//! `dbq-bench capacity` on the shared server: an objective no step can meet fails fast, and
//! a search that reaches its highest rate reports it; `compare` exits by what regressed, and
//! `run --repeat` feeds it.

use crate::support::{SMALL, plan, run_plan, shared_url, smoke_on_shared_server};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn dbq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(args)
        .output()
        .unwrap()
}

fn capacity(out: &Path, extra: &[&str]) -> (Output, Value) {
    let mut args = vec![
        "capacity",
        "scenarios/smoke.toml",
        "--db",
        "url",
        "--database-url",
        shared_url(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--set",
        "capacity={ start_rate = 50, max_rate = 100, warmup = \"500ms\", measure = \"2s\", budget = \"60s\", confirm = \"off\", upset = { kind = \"none\" }, stable_runs = 1 }",
        "--set",
        "bystander.quiet=\"500ms\"",
    ];
    args.extend_from_slice(extra);
    let o = dbq(&args);
    let json = std::fs::read_to_string(out.join("capacity.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    (o, json)
}

/// The steps judged: a step broken while the load machine stalled is measured again, not
/// judged (a loaded test machine stalls now and then).
fn judged(c: &Value) -> Vec<&Value> {
    c["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["disturbed"] != true)
        .collect()
}

#[test]
fn an_objective_no_step_can_meet_fails_fast() {
    let dir = tempfile::tempdir().unwrap();
    let (o, c) = capacity(
        dir.path(),
        &["--slo", "end_to_end.p99=<1ms", "--set", "consumers.count=1"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(99),
        "expected exit 99 (no rate met the objective); stderr: {err}"
    );
    assert!(c["max_sustainable_per_s"].is_null(), "{c}");
    let steps = judged(&c);
    assert!(
        !steps.is_empty() && steps.len() <= 3,
        "expected the search to give up within 3 steps, ran {}",
        steps.len()
    );
    assert!(steps.iter().all(|s| s["passed"] == false));
    assert!(
        steps[0]["why"][0]
            .as_str()
            .unwrap()
            .contains("end_to_end.p99 <1ms"),
        "expected the failed condition to be named: {}",
        steps[0]["why"]
    );
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("did not meet the objective")
    );
}

#[test]
fn a_search_that_reaches_its_highest_rate_reports_it_with_every_step() {
    let dir = tempfile::tempdir().unwrap();
    // Objectives loose enough that a loaded test machine still meets them at 100 jobs/s.
    let (o, c) = capacity(
        dir.path(),
        &[
            "--slo",
            "end_to_end.p99=<10s",
            "--set",
            "producers.late_after=\"2s\"",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr: {err}");
    let steps = judged(&c);
    let offered: Vec<f64> = steps
        .iter()
        .map(|s| s["offered_per_s"].as_f64().unwrap())
        .collect();
    assert_eq!(
        offered,
        [50.0, 100.0],
        "doubling from start_rate up to max_rate"
    );
    assert_eq!(c["max_sustainable_per_s"], 100.0, "{c}");
    let mut schemas = Vec::new();
    for s in steps {
        let d = Path::new(s["dir"].as_str().unwrap());
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap())
                .unwrap();
        // Each step is measured and proved on its own: its proof covers its own jobs.
        assert_eq!(summary["accounting"]["ok"], true, "{d:?}");
        assert_eq!(
            summary["accounting"]["committed"], summary["jobs"]["enqueued"],
            "a step's proof counts its own jobs only: {d:?}"
        );
        schemas.push(summary["database"]["schema"].clone());
    }
    assert!(
        schemas.windows(2).all(|w| w[0] == w[1]),
        "every step runs on the one installed queue: {schemas:?}"
    );
    for f in ["capacity.md", "capacity.html"] {
        assert!(dir.path().join(f).exists(), "{f} missing");
    }

    // compare gates on the capacity found: the same result passes, a lower one regresses.
    let lower = dir.path().join("lower");
    std::fs::create_dir_all(&lower).unwrap();
    let mut c2 = c.clone();
    c2["max_sustainable_per_s"] = 50.0.into();
    std::fs::write(lower.join("capacity.json"), c2.to_string()).unwrap();
    let here = dir.path().to_str().unwrap();
    assert_eq!(dbq(&["compare", here, here]).status.code(), Some(0));
    // One search a side has no spread: a lower answer is inconclusive, failing on request.
    let o = dbq(&["compare", here, lower.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("max_sustainable_per_s"), "{out}");
    assert!(out.contains("INCONCLUSIVE"), "{out}");
    let o = dbq(&[
        "compare",
        here,
        lower.to_str().unwrap(),
        "--inconclusive",
        "fail",
    ]);
    assert_eq!(o.status.code(), Some(99), "{o:?}");

    // A run's verdict cites the capacity result it is given.
    let out = dir.path().join("run");
    let mut args = smoke_on_shared_server();
    args.extend([
        "--quiet",
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--capacity",
        here,
        "--set",
        "phases=[{ name = \"steady\", duration = \"1s\", rate = 50 }]",
        "--set",
        "producers.prefill=0",
    ]);
    let o = dbq(&args);
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    let text = summary["verdict"]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("this design sustains 100 jobs/s") && text.contains("0.3× the article's"),
        "{text}; stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        summary["verdict"]["capacity"]["max_sustainable_per_s"],
        100.0
    );
}

/// The consumer-count search at 60 jobs/s with a 50 ms handler: one consumer finishes at
/// most 20 jobs/s, so 1 and 2 consumers cannot meet a 300 ms p99 whatever the machine does;
/// the answer is at least 3, searched from where Little's law puts it.
#[test]
fn a_consumer_count_search_finds_the_fewest_consumers_for_a_rate() {
    let dir = tempfile::tempdir().unwrap();
    let (o, c) = capacity(
        dir.path(),
        &[
            "--consumers-for",
            "60",
            "--slo",
            "end_to_end.p99=<300ms",
            "--set",
            "consumers.handler.duration={ fixed = \"50ms\" }",
            "--set",
            "consumers.handler.error_rate=0",
            "--set",
            "consumers.poll_interval=\"20ms\"",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr: {err}\n{c}");
    let steps = judged(&c);
    let counts: Vec<u64> = steps
        .iter()
        .map(|s| s["consumers"].as_u64().unwrap())
        .collect();
    // Little's law: 60 jobs/s × 50 ms = 3 workers busy on average; × 1.25 → 4. Where 4
    // holds the search halves to 2; where it does not (a loaded machine) it doubles to 8.
    assert_eq!(counts[0], 4, "from Little's law: {counts:?}");
    assert!([2, 8].contains(&counts[1]), "{counts:?}");
    for s in steps.iter().filter(|s| s["consumers"].as_u64() <= Some(2)) {
        assert_eq!(
            s["passed"], false,
            "20 jobs/s per consumer cannot carry 60/s: {s}"
        );
        assert_eq!(s["offered_per_s"], 60.0);
    }
    let fewest = c["min_consumers"].as_u64().expect("an answer");
    assert!((3..=16).contains(&fewest), "{c}");
    assert!(
        steps
            .iter()
            .any(|s| s["consumers"].as_u64() == Some(fewest) && s["passed"] == true)
    );
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains(&format!("needs {fewest} consumer(s)")),
        "{c}"
    );
}

/// A copy of a results directory with one figure of its summary changed.
fn altered(from: &Path, to: &Path, change: impl Fn(&mut Value)) {
    std::fs::create_dir_all(to).unwrap();
    let mut s: Value =
        serde_json::from_str(&std::fs::read_to_string(from.join("summary.json")).unwrap()).unwrap();
    change(&mut s);
    std::fs::write(to.join("summary.json"), s.to_string()).unwrap();
}

/// `n` copies of a run as a directory of runs, each with claim p50 scaled by `by` and
/// varied by ±2% from copy to copy.
/// `n` copies of a run in `to/<name>{k}`, claim p50 scaled by `by`, give or take 2%.
fn repeats(from: &Path, to: &Path, name: &str, n: usize, by: f64) {
    for k in 0..n {
        altered(from, &to.join(format!("{name}{k}")), |s| {
            let p50 = s["latency_ms"]["claim"]["p50"].as_f64().unwrap();
            let wobble = 1.0 + 0.02 * (k as f64 - 1.0);
            s["latency_ms"]["claim"]["p50"] = (p50.max(0.5) * by * wobble).into();
        });
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_exits_by_what_regressed() {
    let (_, run) = run_plan(&plan(SMALL, &[]), false).await;
    let base = run.path().to_str().unwrap();
    let o = dbq(&["compare", base, base]);
    assert_eq!(o.status.code(), Some(0), "a run against itself: {o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("no regression"));

    // Single runs have no spread: claim p50 doubled is inconclusive, not a regression,
    // unless inconclusive is told to fail.
    let dir = tempfile::tempdir().unwrap();
    let slower = dir.path().join("slower");
    altered(run.path(), &slower, |s| {
        let p50 = s["latency_ms"]["claim"]["p50"].as_f64().unwrap();
        s["latency_ms"]["claim"]["p50"] = (p50.max(0.5) * 2.0).into();
    });
    let slower = slower.to_str().unwrap();
    let o = dbq(&["compare", base, slower]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.starts_with("inconclusive: run: claim_p50_ms"), "{err}");
    assert!(err.contains("--repeat 3"), "{err}");
    let o = dbq(&["compare", base, slower, "--inconclusive", "fail"]);
    assert_eq!(o.status.code(), Some(99), "{o:?}");

    // Three runs a side: the doubling is beyond the noise, one line names it. Runs of the
    // same names (r0 … r2 on both sides) are compared as pairs; other names as two samples.
    let (a, b, c) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    repeats(run.path(), &a, "r", 3, 1.0);
    repeats(run.path(), &b, "r", 3, 2.0);
    repeats(run.path(), &c, "s", 3, 2.0);
    let (a, b, c) = (
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        c.to_str().unwrap(),
    );
    for (candidate, runs) in [(b, "| 3 pairs |"), (c, "| 3 vs 3 |")] {
        let o = dbq(&["compare", a, candidate]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(99),
            "claim p50 doubled must regress: {err}"
        );
        let lines: Vec<&str> = err.lines().collect();
        assert!(
            lines.len() == 1 && lines[0].starts_with("regression: run: claim_p50_ms"),
            "expected one line naming claim_p50_ms: {err}"
        );
        assert!(String::from_utf8_lossy(&o.stdout).contains(runs), "{runs}");
    }
    // A larger allowance for that figure lets it pass.
    let o = dbq(&["compare", a, b, "--max-regression", "claim_p50_ms=150%"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");

    let o = dbq(&["compare", base, "/nonexistent"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent holds no summary.json"), "{err}");
}

/// Two runs of identical settings are never a regression: single runs can only be told
/// apart from noise by repeats, so a difference beyond the allowance is inconclusive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_of_identical_settings_are_never_called_regressed() {
    let p = plan(SMALL, &[]);
    let (_, a) = run_plan(&p, false).await;
    let (_, b) = run_plan(&p, false).await;
    let o = dbq(&[
        "compare",
        a.path().to_str().unwrap(),
        b.path().to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(!out.contains("REGRESSED"), "{out}");
}

/// `run --repeat` measures the scenario N times on one server and gates the set against a
/// baseline saved the same way.
#[test]
fn repeated_runs_are_saved_and_gated_as_one_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("it-repeat-{}", std::process::id());
    let run = |out: &str, baseline: &[&str]| {
        let out = dir.path().join(out);
        let mut args = smoke_on_shared_server();
        args.extend([
            "--quiet",
            "--repeat",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--set",
            "phases.1.duration=\"1s\"",
        ]);
        args.extend_from_slice(baseline);
        (dbq(&args), out)
    };
    let (o, first) = run("first", &["--save-baseline", &name]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(first.join("comparison.json")).unwrap())
            .unwrap();
    assert_eq!(c["cells"][0]["runs"].as_array().unwrap().len(), 2, "{c}");
    // A false-alarm rate of 0.1% keeps a chance regression out of the test.
    let (o, _) = run(
        "second",
        &["--baseline", &name, "--false-alarm-rate", "0.1%"],
    );
    let saved = compare_baseline_dir(&name);
    std::fs::remove_dir_all(&saved).unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("| run | throughput_per_s | 2 vs 2 |"),
        "{table}"
    );
}

fn compare_baseline_dir(name: &str) -> std::path::PathBuf {
    Path::new("results").join("baselines").join(name)
}

/// Ctrl-C keeps the steps that finished: capacity.json is written, marked interrupted, exit 130.
#[test]
fn ctrl_c_keeps_the_finished_steps() {
    let dir = tempfile::tempdir().unwrap();
    let status = crate::support::interrupt_when(
        &[
            "capacity",
            "scenarios/smoke.toml",
            "--db",
            "url",
            "--database-url",
            shared_url(),
            "--slo",
            "end_to_end.p99=<10s",
            "--out",
            dir.path().to_str().unwrap(),
            "--set",
            "capacity={ start_rate = 50, max_rate = 400, warmup = \"500ms\", measure = \"2s\" }",
        ],
        "capacity step 2:",
        std::time::Duration::ZERO,
    );
    assert_eq!(status.code(), Some(130));
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("capacity.json")).unwrap())
            .unwrap();
    assert_eq!(c["interrupted"], true);
    assert_eq!(
        c["steps"].as_array().unwrap().len(),
        1,
        "only the finished step: {c}"
    );
    // An interrupted search states no capacity, though its first step met the objective.
    assert_eq!(c["max_sustainable_per_s"], Value::Null, "{c}");
    let summary = c["summary"].as_str().unwrap();
    assert!(summary.contains("no capacity is stated"), "{summary}");
    assert!(
        summary.contains("met the objective up to 50 jobs/s"),
        "{summary}"
    );
    // `report` renders a capacity search's results again.
    std::fs::remove_file(dir.path().join("capacity.md")).unwrap();
    let o = dbq(&["report", dir.path().to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(dir.path().join("capacity.md").is_file());
}

#[test]
fn bad_objectives_and_baseline_names_are_refused_before_anything_runs() {
    for (args, expected) in [
        (
            vec!["capacity", "scenarios/smoke.toml", "--slo", "p99=<1ms"],
            "--slo p99=<1ms: unknown metric \"p99\"",
        ),
        (
            vec![
                "capacity",
                "scenarios/smoke.toml",
                "--slo",
                "end_to_end.p99",
            ],
            "--slo end_to_end.p99: expected metric=condition",
        ),
        (
            vec![
                "capacity",
                "scenarios/smoke.toml",
                "--set",
                "capacity.start_rate=0",
            ],
            "capacity.start_rate: must be between 1 and 1000000",
        ),
        (
            vec!["capacity", "scenarios/smoke.toml", "--confirm", "soon"],
            "invalid value \"soon\"; write \"auto\", \"off\" or a duration",
        ),
        (
            vec![
                "capacity",
                "scenarios/smoke.toml",
                "--set",
                "capacity.confirm_tries=0",
            ],
            "capacity.confirm_tries: must be between 1 and 20, got 0",
        ),
        (
            vec![
                "capacity",
                "scenarios/smoke.toml",
                "--quick",
                "--set",
                "capacity.hold_horizon=\"1m\"",
            ],
            "capacity.hold_horizon: is held during the confirmation, which a consumer-count search, --quick and confirm = \"off\" leave out",
        ),
        (
            vec!["capacity", "scenarios/smoke.toml", "--hold-horizon", "0s"],
            "--hold-horizon 0s: must be between 1s and 24h",
        ),
        (
            vec!["run", "scenarios/smoke.toml", "--baseline", "../elsewhere"],
            "baseline name \"../elsewhere\"",
        ),
        (
            vec![
                "compare",
                "scenarios",
                "scenarios",
                "--max-regression",
                "lots",
            ],
            "--max-regression lots: expected a percentage",
        ),
    ] {
        let o = dbq(&args);
        crate::support::assert_bad_input(&o, &format!("{args:?}"), expected);
    }
}

/// A capacity found for a custom design is cited by a run of the same design as the same
/// design (the whole record matches, files included), and by a run of another as different,
/// naming what differs.
#[test]
fn a_capacity_of_a_custom_design_is_cited_as_that_design() {
    let dir = tempfile::tempdir().unwrap();
    let custom = [
        "--set",
        "queue.variant=\"custom\"",
        "--set",
        "queue.dir=\"scenarios/custom-seed\"",
    ];
    let mut args = vec![
        "--set",
        "capacity={ start_rate = 50, max_rate = 50, warmup = \"500ms\", measure = \"3s\", budget = \"30s\", confirm = \"off\" }",
    ];
    args.extend(custom);
    let (o, c) = capacity(dir.path(), &args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(c["design"]["variant"], "custom", "{c}");
    assert!(c["design"]["custom_sha256"].as_str().is_some(), "{c}");
    let cited = |extra: &[&str]| {
        let out = tempfile::tempdir().unwrap();
        let mut args = smoke_on_shared_server();
        args.extend([
            "--quiet",
            "--json",
            "--out",
            out.path().to_str().unwrap(),
            "--capacity",
            dir.path().to_str().unwrap(),
            "--set",
            "phases=[{ name = \"steady\", duration = \"1s\", rate = 20 }]",
        ]);
        args.extend_from_slice(extra);
        let o = dbq(&args);
        let s: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        s["verdict"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let same = cited(&custom);
    assert!(same.contains("this design sustains 50 jobs/s"), "{same}");
    assert!(!same.contains("different design"), "{same}");
    let other = cited(&[]);
    assert!(
        other.contains("measured for a different design: variant: custom vs seed"),
        "{other}"
    );
}

/// An objective of fewer than 310 jobs per window, with evenly spaced arrivals: which
/// windows break it follows from their length and rate alone.
const FEWER_THAN_310_PER_WINDOW: [&str; 8] = [
    "--slo",
    "jobs.enqueued=<310",
    "--slo",
    "end_to_end.p99=<10s",
    "--set",
    "producers.late_after=\"2s\"",
    "--set",
    "producers.arrival=\"constant\"",
];

/// The search's answer must hold on a fresh queue. With evenly spaced arrivals, an
/// objective of fewer than 310 jobs per window lets the search's 2 s steps pass up to 100 jobs/s, but a 4 s confirmation window
/// at 100 jobs/s (400 jobs) or 85 (340) breaks it, and 72 (288) holds: the confirmation
/// steps down twice, each try on a queue of its own, and the answer is the rate that held,
/// with the search's figure beside it.
#[test]
fn a_rate_that_does_not_hold_on_a_fresh_queue_is_stepped_down_until_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = FEWER_THAN_310_PER_WINDOW.to_vec();
    args.extend(["--set", "capacity.confirm_tries=3", "--confirm", "4s"]);
    let (o, c) = capacity(dir.path(), &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr: {err}\n{c}");
    assert_eq!(c["between_vacuums_per_s"], 100.0, "{c}");
    let tries = c["confirmation"]["tries"].as_array().unwrap();
    let tried: Vec<(f64, bool)> = tries
        .iter()
        .map(|t| (t["rate"].as_f64().unwrap(), t["held"].as_bool().unwrap()))
        .collect();
    assert_eq!(tried, [(100.0, false), (85.0, false), (72.0, true)], "{c}");
    assert_eq!(c["max_sustainable_per_s"], 72.0, "{c}");
    assert_eq!(c["confirmed"], true);
    let broken = tries[0]["windows"][0]["why"][0].as_str().unwrap();
    assert!(broken.contains("jobs.enqueued <310"), "{broken}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("sustains 72 jobs/s") && summary.contains("held for 4s on a fresh queue"),
        "{summary}"
    );
    // Each try ran on a queue of its own, not the search's.
    let schema = |d: &str| -> Value {
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(Path::new(d).join("summary.json")).unwrap(),
        )
        .unwrap();
        s["database"]["schema"].clone()
    };
    let mut schemas: Vec<Value> = tries
        .iter()
        .map(|t| schema(t["dir"].as_str().unwrap()))
        .collect();
    schemas.push(schema(c["steps"][0]["dir"].as_str().unwrap()));
    schemas.sort_by_key(|v| v.to_string());
    schemas.dedup();
    assert_eq!(schemas.len(), 4, "{schemas:?}");
    let md = std::fs::read_to_string(dir.path().join("capacity.md")).unwrap();
    assert!(
        md.contains("## Confirmation 3: 72 jobs/s on a fresh queue"),
        "{md}"
    );
}

/// `capacity --at RATE`: no search; a whole confirmation at the rate on each of `--runs`
/// fresh queues, and exit 0 only when it held on every one. With the objective of fewer than
/// 310 jobs per window: 2 s windows hold at 100 jobs/s (200 jobs) and break at 200 (400).
#[test]
fn at_a_rate_every_fresh_queue_must_hold_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = FEWER_THAN_310_PER_WINDOW.to_vec();
    args.extend(["--confirm", "2s", "--at", "100", "--runs", "2"]);
    let (o, c) = capacity(dir.path(), &args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr: {err}\n{c}");
    assert_eq!(c["at"]["held"], 2, "{c}");
    assert_eq!(c["max_sustainable_per_s"], 100.0, "{c}");
    assert!(c["steps"].as_array().unwrap().is_empty(), "no search: {c}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("holds 100 jobs/s") && summary.contains("held on 2 of 2 fresh queues"),
        "{summary}"
    );

    let dir = tempfile::tempdir().unwrap();
    let mut args = FEWER_THAN_310_PER_WINDOW.to_vec();
    args.extend(["--confirm", "2s", "--at", "200", "--runs", "2"]);
    let (o, c) = capacity(dir.path(), &args);
    assert_eq!(o.status.code(), Some(99), "{c}");
    assert_eq!(c["at"]["held"], 0, "{c}");
    assert_eq!(c["max_sustainable_per_s"], Value::Null, "{c}");
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("does not hold 200 jobs/s")
            && summary.contains("held on 0 of 2")
            && summary.contains("queue 1: window 1"),
        "{summary}"
    );
    // Every queue is tried, whatever the first did.
    assert_eq!(
        c["confirmation"]["tries"].as_array().unwrap().len(),
        2,
        "{c}"
    );
}

/// Where a whole confirmation is longer than the server's autovacuum_naptime, a screen of the
/// first naptime comes first, with autovacuum kept off the fresh table until it has passed
/// (`first_vacuum = "late"`, PostgreSQL's default). On a server of its own with a 2 s naptime
/// and the objective of fewer than 310 jobs per window: the screen's 2 s window at 100
/// jobs/s (200 jobs) holds, so 100 is confirmed whole; its 4 s window (400 jobs) breaks, and
/// so does 85 (340), while 72 (288) holds.
#[test]
fn a_screen_of_the_first_naptime_comes_before_the_whole_confirmation() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let mut args = vec![
        "capacity",
        "scenarios/smoke.toml",
        "--db",
        "local",
        "--quiet",
        "--out",
        out,
        "--set",
        "database.settings.autovacuum_naptime=\"2s\"",
        "--set",
        "capacity={ start_rate = 50, max_rate = 100, warmup = \"500ms\", measure = \"2s\", budget = \"60s\", confirm_tries = 4, upset = { kind = \"none\" }, stable_runs = 1 }",
        "--set",
        "bystander.quiet=\"500ms\"",
        "--confirm",
        "4s",
    ];
    args.extend(FEWER_THAN_310_PER_WINDOW);
    let o = dbq(&args);
    let c: Value = std::fs::read_to_string(dir.path().join("capacity.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr: {err}\n{c}");
    let confirmation = &c["confirmation"];
    assert_eq!(confirmation["first_vacuum"], "late", "{c}");
    assert_eq!(confirmation["screen_s"], 2.0, "{c}");
    let tries = confirmation["tries"].as_array().unwrap();
    let tried: Vec<(f64, bool, bool)> = tries
        .iter()
        .map(|t| {
            let rate = t["rate"].as_f64().unwrap();
            (
                rate,
                t["screen"].as_bool().unwrap(),
                t["held"].as_bool().unwrap(),
            )
        })
        .collect();
    let expected = [
        (100.0, true, true),
        (100.0, false, false),
        (85.0, false, false),
        (72.0, false, true),
    ];
    assert_eq!(tried, expected, "{c}");
    assert_eq!(c["max_sustainable_per_s"], 72.0, "{c}");
    // Each try's fresh table had autovacuum kept off through the warm-up and the first
    // naptime, then one VACUUM.
    for t in tries {
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(Path::new(t["dir"].as_str().unwrap()).join("summary.json"))
                .unwrap(),
        )
        .unwrap();
        let events = s["faults"]["events"].as_array().unwrap();
        let delayed: Vec<_> = events
            .iter()
            .filter(|e| e["kind"] == "delay_vacuum")
            .collect();
        assert_eq!(delayed.len(), 1, "{events:?}");
        let detail = delayed[0]["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("autovacuum kept off job_queue for"),
            "{detail}"
        );
    }
    let summary = c["summary"].as_str().unwrap();
    assert!(
        summary.contains("its first vacuum after 2s, as late as autovacuum comes")
            && summary.contains("100 jobs/s did not hold"),
        "{summary}"
    );
    let md = std::fs::read_to_string(dir.path().join("capacity.md")).unwrap();
    assert!(
        md.contains("## Screen 1: 100 jobs/s on a fresh queue for 2 s"),
        "{md}"
    );
}

/// With a held horizon the confirmation goes on after its clean windows: the horizon held
/// (an idle transaction with an XID, the fault's own record in the try's summary), judged as
/// the clean windows are, then recovery windows measured after the release.
#[test]
fn a_held_horizon_is_judged_and_its_recovery_measured() {
    let dir = tempfile::tempdir().unwrap();
    let (o, c) = capacity(
        dir.path(),
        &[
            "--set",
            "capacity.confirm_tries=1",
            "--confirm",
            "3s",
            "--hold-horizon",
            "4s",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "stderr: {err}\n{c}");
    assert_eq!(c["confirmation"]["hold_horizon_s"], 4.0, "{c}");
    let t = &c["confirmation"]["tries"][0];
    let hold = &t["hold"];
    assert_eq!(t["held"], true, "{c}");
    assert_eq!(hold["windows"].as_array().unwrap().len(), 1, "{hold}");
    // Recovery is measured for 10 s at least, in one window.
    assert_eq!(hold["recovery"].as_array().unwrap().len(), 1, "{hold}");
    assert_eq!(hold["recovery_s"], 10.0, "{hold}");
    let held_s = hold["held_s"].as_f64().unwrap();
    assert!((3.9..4.6).contains(&held_s), "{hold}");
    // Every completion left a dead row version vacuum could not remove.
    assert!(
        hold["dead_tuples_per_min"].as_f64().unwrap() > 0.0,
        "{hold}"
    );
    assert!(
        hold["recovery_detail"]["baseline_queue_depth"].is_number(),
        "{hold}"
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(t["dir"].as_str().unwrap()).join("summary.json"))
            .unwrap(),
    )
    .unwrap();
    // The fresh table's first vacuum held back from the warm-up, then the horizon held.
    let events = summary["faults"]["events"].as_array().unwrap();
    let kinds: Vec<_> = events.iter().map(|e| (&e["kind"], &e["phase"])).collect();
    assert_eq!(
        kinds,
        [
            (&"delay_vacuum".into(), &"warmup".into()),
            (&"idle_in_transaction".into(), &"held-1".into())
        ],
        "{events:?}"
    );
    let answer = c["summary"].as_str().unwrap();
    assert!(
        answer.contains("and then with the xmin horizon held") && answer.contains("Horizon held"),
        "{answer}"
    );
    let md = std::fs::read_to_string(dir.path().join("capacity.md")).unwrap();
    assert!(
        md.contains("## Confirmation 1, xmin horizon held for 4 s"),
        "{md}"
    );
    assert!(
        md.contains("## Confirmation 1, after the release (measured, not judged)"),
        "{md}"
    );
}
