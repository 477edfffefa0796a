//! The command line: validation errors, exit codes, results on disk, Ctrl-C.

use crate::support::{shared_url, smoke_on_shared_server, stdout_of};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

fn dbq(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(args)
        .env_remove("DATABASE_URL")
        .output()
        .unwrap()
}

fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn every_validation_error_is_one_line_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let base = "[producers]\nrate = 100\n[[phases]]\nname = \"a\"\nduration = \"1s\"\n";
    let cases = [
        (
            "unknown-key",
            format!("{base}[consumers]\nthreads = 4\n"),
            "consumers.threads: unknown key",
        ),
        (
            "wrong-type",
            format!("{base}[consumers]\ncount = \"four\"\n"),
            "consumers.count: invalid type",
        ),
        (
            "bad-duration",
            format!("{base}[consumers]\npoll_interval = \"soon\"\n"),
            "consumers.poll_interval: invalid duration",
        ),
        (
            "bad-rate",
            "[[phases]]\nname = \"a\"\nduration = \"1s\"\nrate = -5\n".to_string(),
            "phases[0].rate:",
        ),
        (
            "missing",
            "[[phases]]\nname = \"a\"\n".to_string(),
            "phases[0].duration: required key is missing",
        ),
        (
            "range",
            format!("{base}[consumers.handler]\nerror_rate = 2\n"),
            "consumers.handler.error_rate:",
        ),
        (
            "syntax",
            "[producers\nrate = 1\n".to_string(),
            "line 1, column",
        ),
        (
            "no-phases",
            "[producers]\nrate = 1\n".to_string(),
            "phases: at least one",
        ),
        (
            "bad-threshold",
            format!("{base}[thresholds]\n\"end_to_end.p98\" = \"< 1s\"\n"),
            "thresholds[\"end_to_end.p98\"]: unknown metric",
        ),
        (
            "bad-fault",
            format!("{base}[[phases.faults]]\nkind = \"kill_workers\"\nevry = \"1s\"\n"),
            "phases[0].faults[0].evry: unknown key",
        ),
    ];
    for (name, text, want) in cases {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        let out = dbq(&["validate", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(
            err.starts_with(&format!("error: {}: {want}", path.display())),
            "{name}: {err}"
        );
    }
    // A --set with a bad value is blamed on the flag, says what is allowed, and `run`
    // refuses it before doing anything.
    let out = dbq(&["run", "scenarios/smoke.toml", "--set", "consumers.count=-1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--set consumers.count=-1: consumers.count:")
            && err.contains("expected a whole number from 1 to 1000")
            && !err.contains("u32"),
        "{err}"
    );
}

/// Every scenario the repository ships validates.
#[test]
fn every_shipped_scenario_is_valid() {
    let mut shipped: Vec<String> = std::fs::read_dir("scenarios")
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .filter(|p| p.ends_with(".toml"))
        .collect();
    shipped.sort();
    let out = dbq(&[
        &["validate"],
        &shipped.iter().map(String::as_str).collect::<Vec<_>>()[..],
    ]
    .concat());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn smoke_with(provider: &str) {
    match provider {
        "container" => {
            // The image is passed on through DBQ_POSTGRES_IMAGE, as a user would.
            crate::support::require_image();
        }
        _ => crate::support::require_local_binaries(),
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dbq(&[
        "run",
        "scenarios/smoke.toml",
        "--db",
        provider,
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary(dir.path());
    assert_eq!(s["schema_version"], 2);
    assert!(
        s["meta"]["server_version"]
            .as_str()
            .unwrap()
            .contains("PostgreSQL")
    );
    assert_eq!(s["complete"], true);
    assert_eq!(s["database"]["provider"], provider);
    assert!(s["jobs"]["completed"].as_u64().unwrap() > 0);
    assert_eq!(s["jobs"]["lost"], 0);
    assert_eq!(s["accounting"]["ok"], true);
    for f in [
        "scenario.resolved.toml",
        "timeline.csv",
        "latency.hlog",
        "report.md",
    ] {
        assert!(dir.path().join(f).exists(), "{f} missing");
    }
    // The terminal summary and the report say the same.
    assert!(stdout.contains("accounting all"), "{stdout}");
    let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("**Verdict.**") && report.contains("few hundred per second"));
}

#[test]
fn smoke_runs_on_a_local_cluster() {
    smoke_with("local");
}

#[test]
fn smoke_runs_in_a_container() {
    smoke_with("container");
}

#[test]
fn ctrl_c_keeps_partial_results_and_removes_the_cluster() {
    crate::support::require_local_binaries();
    let dir = tempfile::tempdir().unwrap();
    // Interrupt during the 60 s phase, a few seconds after the load started.
    let status = crate::support::interrupt_when(
        &[
            "run",
            "scenarios/smoke.toml",
            "--db",
            "local",
            "--set",
            "phases.1.duration=60s",
            "--out",
            dir.path().to_str().unwrap(),
        ],
        "load started",
        Duration::from_secs(4),
    );
    assert_eq!(status.code(), Some(130));
    let s = summary(dir.path());
    assert_eq!(s["complete"], false);
    assert_eq!(s["interrupted"], true);
    // Not judged: an interrupted window says nothing of keeping up.
    assert_eq!(s["verdict"]["state"], "incomplete", "{}", s["verdict"]);
    assert!(
        s["verdict"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Incomplete: interrupted (Ctrl-C)"),
        "{}",
        s["verdict"]
    );
    // The interrupted phase is cut where the load stopped, not counted as 60 s.
    let steady = s["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "steady")
        .unwrap();
    assert!(steady["duration_s"].as_f64().unwrap() < 30.0, "{steady}");
    assert!(s["jobs"]["completed"].as_u64().unwrap() > 0);
    assert_eq!(s["jobs"]["lost"], 0, "{}", s["accounting"]["verdict"]);
    // The throwaway cluster is gone.
    let desc = s["database"]["description"].as_str().unwrap();
    let data_dir = desc
        .trim_start_matches("local server in ")
        .split(' ')
        .next()
        .unwrap();
    assert!(
        data_dir.starts_with(std::env::temp_dir().to_str().unwrap()),
        "{desc}"
    );
    assert!(!Path::new(data_dir).exists(), "{data_dir} left behind");
}

/// Ctrl-C twice, 300 ms apart, 2 s into a run on `db`: jobs take 5 s, so the first Ctrl-C's
/// teardown is still waiting for them when the second comes.
fn ctrl_c_twice(db: &[&str]) -> (std::process::ExitStatus, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["run", "scenarios/smoke.toml"];
    args.extend(db);
    args.extend([
        "--set",
        "phases.1.duration=60s",
        "--set",
        "consumers.handler={ duration = { fixed = \"5s\" } }",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let (status, said) = crate::support::interrupt_twice_when(
        &args,
        "load started",
        Duration::from_secs(2),
        Duration::from_millis(300),
    );
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(said.contains("quitting now"), "{said}");
    assert!(!said.contains("left behind"), "{said}");
    (status, said)
}

/// A second Ctrl-C quits without the results, but still removes the local server it started:
/// no process, no directory.
#[test]
fn a_second_ctrl_c_still_removes_the_local_server() {
    crate::support::require_local_binaries();
    let (_, said) = ctrl_c_twice(&["--db", "local"]);
    let data_dir = said
        .split("local server in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no data directory in: {said}"));
    let server_dir = Path::new(data_dir).parent().unwrap();
    assert!(!server_dir.exists(), "{} left behind", server_dir.display());
    let running = crate::support::processes_mentioning(server_dir.to_str().unwrap());
    assert!(running.is_empty(), "still running: {running:?}");
}

/// A second Ctrl-C quits without the results, but still removes the container it started,
/// with its data volume and its network.
#[test]
fn a_second_ctrl_c_still_removes_the_container_its_volume_and_network() {
    crate::support::require_image();
    let dangling = || {
        let out = std::process::Command::new("docker")
            .args(["volume", "ls", "-q", "-f", "dangling=true"])
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&out.stdout).into_owned();
        listed.lines().map(String::from).collect::<Vec<_>>()
    };
    let before = dangling();
    let (_, said) = ctrl_c_twice(&["--db", "container"]);
    let words = said
        .split("container ")
        .find_map(|rest| rest.split_once(" on network "))
        .unwrap_or_else(|| panic!("no container line in: {said}"));
    let id = words.0.split(' ').next().unwrap();
    let network = words.1.split([' ', ';']).next().unwrap();
    let docker = |what: &str, name: &str| {
        std::process::Command::new("docker")
            .args([what, "inspect", name])
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(
        !docker("container", id),
        "container {id} left behind: {said}"
    );
    assert!(!docker("network", network), "network {network} left behind");
    let left: Vec<String> = dangling()
        .into_iter()
        .filter(|v| !before.contains(v))
        .collect();
    assert!(left.is_empty(), "volumes left behind: {left:?}");
}

/// A second Ctrl-C on a server the run did not start drops the run's schema there.
#[test]
fn a_second_ctrl_c_still_drops_the_schema_on_the_users_server() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = rt.block_on(crate::support::database_of_its_own("ctrl_c_twice"));
    let (_, said) = ctrl_c_twice(&["--db", "url", "--database-url", &url]);
    let schemas: Vec<String> = rt.block_on(async {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(&url).await.unwrap();
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'dbq%'")
                .fetch_all(&mut c)
                .await
                .unwrap();
        c.close().await.ok();
        rows.into_iter().map(|r| r.0).collect()
    });
    rt.block_on(crate::support::drop_database("ctrl_c_twice"));
    assert!(
        schemas.is_empty(),
        "left on the server: {schemas:?}; {said}"
    );
}

/// Edges a first user met: the engines in --help come from the registry; a server that
/// refuses the connection leaves no empty --out behind; a capacity search's results render
/// again with `report`.
#[test]
fn a_first_users_edges() {
    let help = String::from_utf8_lossy(&dbq(&["--help"]).stdout).into_owned();
    for engine in dbq_bench::backend::Engine::ALL {
        assert!(
            help.contains(engine.as_str()),
            "{engine:?} missing from --help: {help}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let o = dbq(&[
        "run",
        "scenarios/smoke.toml",
        "--db",
        "url",
        "--database-url",
        "postgres://u@127.0.0.1:1/x",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("within 3s"), "{err}");
    assert!(!out.exists(), "an empty --out was left behind");
}

#[test]
fn completions_are_printed_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _dbq__bench"),
        ("zsh", "#compdef dbq-bench"),
        ("fish", "complete -c dbq-bench"),
    ] {
        let out = dbq(&["completions", shell]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "completions {shell}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains(marker),
            "expected {marker:?} in the {shell} completions"
        );
        assert!(
            text.contains("abort-on-fail"),
            "expected run's flags in the {shell} completions"
        );
    }
    let out = dbq(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "an unknown shell is bad input");
}

#[test]
fn the_schema_describes_every_section_and_fault_kind() {
    let out = dbq(&["schema"]);
    assert_eq!(out.status.code(), Some(0));
    let schema: Value = serde_json::from_slice(&out.stdout).expect("the schema is JSON");
    let props = schema["properties"]
        .as_object()
        .expect("top-level properties");
    for key in [
        "database",
        "queue",
        "producers",
        "consumers",
        "reaper",
        "drain",
        "verify",
        "sampler",
        "thresholds",
        "phases",
    ] {
        assert!(
            props.contains_key(key),
            "expected {key} in the schema's properties"
        );
    }
    assert_eq!(
        schema["additionalProperties"], false,
        "unknown keys are errors, in the schema too"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for kind in [
        "crash_workers",
        "kill_workers",
        "freeze_workers",
        "kill_backends",
        "restart_server",
        "idle_in_transaction",
        "active_readers",
        "pool_exhaustion",
    ] {
        assert!(
            text.contains(&format!("\"{kind}\"")),
            "expected fault kind {kind} in the schema"
        );
    }
}

/// A load generator whose own runtime is blocked (one runtime thread for everything,
/// `TOKIO_WORKER_THREADS=1`, CPU-bound handlers that hold it 20 ms at a time) sends jobs late
/// while the queue keeps up: the verdict says the load generator was the limit, with its
/// figures, in its own (non-red) state. The blocks are long (an arrival due during the first
/// 15 ms of one is sent more than `late_after` = 5 ms late: about 15% of them) but rare
/// (20% of the thread at 10 jobs/s), so the consumers keep up even when the rest of the
/// suite shares the machine; with 8 ms blocks at half the thread they sometimes did not.
#[test]
fn a_saturated_load_generator_is_named_as_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .env("TOKIO_WORKER_THREADS", "1")
        .args(smoke_on_shared_server())
        .args([
            "--quiet",
            "--out",
            dir.path().to_str().unwrap(),
            "--set",
            "producers.prefill=0",
            "--set",
            "consumers.count=8",
            "--set",
            "consumers.handler={ duration = { fixed = \"20ms\" }, cpu_bound = true }",
            "--set",
            "phases=[{ name = \"steady\", duration = \"6s\", rate = 10 }]",
        ])
        .output()
        .unwrap();
    let s = summary(dir.path());
    let v = &s["verdict"];
    let text = v["text"].as_str().unwrap_or_default();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{text}; stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        v["state"], "load_generator_limited",
        "{text}\n{}",
        s["harness"]
    );
    assert_eq!(v["producers_kept_schedule"], false);
    assert_eq!(v["consumers_kept_up"], true);
    assert!(
        text.starts_with("Limited by the load generator") && text.contains("timer woke late"),
        "{text}"
    );
    assert!(s["harness"]["timer_late_pct"].as_f64().unwrap() > 1.0);
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("<div class=\"box warn\"><b>Verdict.</b> Limited by the load generator"));
}

/// `calibrate --fresh-table` offers a rate to a fresh table through pgbench and through the
/// harness, sampled the same way, and says whether they agree; what each did is complete
/// and its raw output kept (the figures themselves are the machine's: no timing asserted).
#[test]
fn calibrate_cross_checks_a_fresh_table_with_pgbench() {
    crate::support::require_local_binaries();
    let dir = tempfile::tempdir().unwrap();
    let o = dbq(&[
        "calibrate",
        "--fresh-table",
        "200",
        "--duration",
        "4s",
        "--db",
        "url",
        "--database-url",
        shared_url(),
        "--quiet",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = stdout_of(&o, 0);
    assert!(
        stdout.contains("| offered jobs/s | run | tool | completed jobs/s"),
        "{stdout}"
    );
    let c: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("fresh-table.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(c["consumers"], 8, "scenarios/capacity.toml's: {c}");
    let row = &c["rows"][0];
    for side in ["pgbench", "harness"] {
        let s = &row[side];
        assert!(
            s["completed_per_s"].as_f64().unwrap() > 100.0,
            "{side}: {s}"
        );
        assert!(s["dead_tuples_max"].as_i64().unwrap() > 0, "{side}: {s}");
        assert!(s["claim_mean_ms"].as_f64().unwrap() > 0.0, "{side}: {s}");
        assert!(
            s["seq_scans_per_claim"].as_f64().unwrap() < 0.05,
            "{side}: {s}"
        );
        let samples = Path::new(s["dir"].as_str().unwrap()).join("db_stats.csv");
        assert!(samples.is_file(), "{side}: {}", samples.display());
    }
    let pg = Path::new(row["pgbench"]["dir"].as_str().unwrap());
    let consume = std::fs::read_to_string(pg.join("consume.txt")).unwrap();
    assert!(consume.contains("statement latencies"), "{consume}");
    assert!(
        row["finding"].as_str().unwrap().starts_with("200 jobs/s: "),
        "{row}"
    );
    // What pgbench cannot run is refused before anything starts.
    let o = dbq(&[
        "calibrate",
        "--fresh-table",
        "100",
        "--set",
        "queue.variant=batch",
    ]);
    crate::support::assert_bad_input(
        &o,
        "batch",
        "calibrate --fresh-table runs the seed's own statements",
    );
    // Plain calibrate runs a 0 ms handler on both sides: slow runs are refused, not dropped.
    let o = dbq(&[
        "calibrate",
        "--set",
        "consumers.handler.slow={ fraction = 0.1, duration = \"1s\" }",
    ]);
    crate::support::assert_bad_input(
        &o,
        "slow",
        "consumers.handler: calibrate runs a 0 ms handler",
    );
}

/// `calibrate` runs pgbench and the harness on the same table and prints both; the numbers
/// themselves are machine-dependent (no timing assertions), so the test checks that both
/// tools ran the transaction and each row is complete.
#[test]
fn calibrate_runs_pgbench_and_the_harness_side_by_side() {
    crate::support::require_local_binaries();
    let dir = tempfile::tempdir().unwrap();
    let o = dbq(&[
        "calibrate",
        "scenarios/smoke.toml",
        "--db",
        "url",
        "--database-url",
        shared_url(),
        "--quiet",
        "--connections",
        "1,2",
        "--duration",
        "1s",
        "--prefill",
        "40000",
        "--repeats",
        "2",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = stdout_of(&o, 0);
    assert!(
        stdout.contains("| connections | pgbench jobs/s | dbq-bench jobs/s"),
        "{stdout}"
    );
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("calibrate.json")).unwrap())
            .unwrap();
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        for k in [
            "pgbench_per_s",
            "harness_per_s",
            "pgbench_cpu_us_per_job",
            "harness_cpu_us_per_job",
            "bare_per_s",
        ] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{k}: {r}");
        }
        // The instrumentation's cost is a share of the bare rate, below 1 while the harness
        // completed jobs. It has no lower bound: a bare run slowed by a neighbour (the rest of
        // the suite on the shared server) makes it as negative as the slowdown, and once it
        // went below -1 (bare 1,389 jobs/s, instrumented 2,901, beside two CPU burners).
        let cost = r["instrumentation_cost"].as_f64().unwrap();
        assert!(cost.is_finite() && cost < 1.0, "{r}");
        for k in ["ratio", "cpu_ratio", "instrumentation_cost"] {
            let (mid, range) = (r[k].as_f64().unwrap(), &r[format!("{k}_range")]);
            let (lo, hi) = (range[0].as_f64().unwrap(), range[1].as_f64().unwrap());
            assert!(lo <= mid && mid <= hi, "{k}: {r}");
        }
    }
    for run in ["harness-2-1", "harness-2-2", "bare-2-1", "bare-2-2"] {
        assert!(dir.path().join(run).join("summary.json").exists(), "{run}");
    }
    // The bare runs had no completion audit.
    let bare = std::fs::read_to_string(dir.path().join("bare-2-1/scenario.resolved.toml")).unwrap();
    assert!(bare.contains("completion_audit = false"), "{bare}");
    assert!(
        stdout.contains("The harness's instrumentation in the database"),
        "{stdout}"
    );
    assert!(
        stdout.contains("At every connection count") || stdout.contains("Short of pgbench at"),
        "{stdout}"
    );
    assert!(
        !shared_url().is_empty() && !stdout.contains(shared_url()),
        "no URL printed"
    );
}

/// No form of connection string prints its password: URL userinfo (with or without `//`),
/// URL query parameters, libpq `key=value` strings, quoted values.
#[test]
fn no_connection_string_form_prints_its_password() {
    for url in [
        "postgres://u:s3cr3t@127.0.0.1:1/db",
        "postgres:u:s3cr3t@127.0.0.1:1/db",
        "postgres://u@127.0.0.1:1/db?password=s3cr3t&sslmode=disable",
        "host=127.0.0.1 port=1 user=u password=s3cr3t",
        "host=127.0.0.1 port=1 password='s3 cr3t'",
    ] {
        let o = dbq(&[
            "run",
            "scenarios/smoke.toml",
            "--db",
            "url",
            "--database-url",
            url,
            "--quiet",
            "--set",
            "database.startup_timeout=\"1s\"",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(0), "{url}");
        assert!(
            !err.contains("s3cr3t") && !err.contains("s3 cr3t"),
            "{url}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{url}: {err}");
        assert!(err.contains("***"), "{url}: {err}");
    }
}

/// A reader that goes away (`dbq-bench … | head`) does not make the command panic.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args([
            "validate",
            "scenarios/smoke.toml",
            "scenarios/baseline.toml",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

/// Mistakes in the flags are one line, with the allowed values, and exit 2.
#[test]
fn flag_mistakes_are_one_line() {
    for (args, expected) in [
        (
            vec!["run", "scenarios/smoke.toml", "--db", "bogus"],
            "'--db <PROVIDER>' [possible values: auto, container, local, url]",
        ),
        (vec!["run"], "<SCENARIO>"),
        (vec!["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (
            vec!["calibrate", "--connections", "4,x"],
            "invalid value 'x' for '--connections",
        ),
        (
            vec!["run", "scenarios/smoke.toml", "--max-regression", "10%"],
            "--baseline",
        ),
        (
            vec![
                "validate",
                "scenarios/smoke.toml",
                "--set",
                "queue.backoff.cap=\"1ms\"",
            ],
            "--set queue.backoff.cap=\"1ms\": queue.backoff.cap: must be at least the base (100ms)",
        ),
        (
            vec![
                "run",
                "scenarios/smoke.toml",
                "--db",
                "url",
                "--database-url",
                "mysql://u:pw@h/db",
            ],
            "mysql://u:***@h/db uses the scheme mysql: database.engine = \"postgres\" takes postgres:// or postgresql:// (for mysql:// set database.engine = \"mariadb\")",
        ),
    ] {
        crate::support::assert_bad_input(&dbq(&args), &args.join(" "), expected);
    }
}

/// A URL without a password takes it from `PGPASSWORD` or `~/.pgpass`, as libpq does. The
/// shared server is told to ask one role for a password (scram), so a run that finds none
/// fails, on one line, and the other two succeed.
#[test]
fn the_password_may_come_from_pgpassword_or_pgpass() {
    if std::env::var("DBQ_TEST_DATABASE_URL").is_ok() {
        eprintln!("skipped: edits the pg_hba.conf of the suite's own server");
        return;
    }
    const ROLE: &str = "dbq_password_test";
    const PASSWORD: &str = "pw-7f3a9c";
    let admin = shared_url();
    let port = admin
        .rsplit(':')
        .next()
        .and_then(|p| p.split('/').next())
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(admin).await.unwrap();
        let hba: String = sqlx::query_scalar("SHOW hba_file")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        let rule = format!("host all {ROLE} 127.0.0.1/32 scram-sha-256\n");
        let text = std::fs::read_to_string(&hba).unwrap();
        if !text.contains(&rule) {
            std::fs::write(&hba, format!("{rule}{text}")).unwrap();
        }
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "DO $$ BEGIN CREATE ROLE {ROLE} LOGIN SUPERUSER; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
             ALTER ROLE {ROLE} PASSWORD '{PASSWORD}';
             SELECT pg_reload_conf();"
        )))
        .execute(&mut conn)
        .await
        .unwrap();
    });
    let url = format!("postgres://{ROLE}@127.0.0.1:{port}/postgres");
    let home = tempfile::tempdir().unwrap();
    let run = |env: &[(&str, &str)]| {
        let out = tempfile::tempdir().unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dbq-bench"));
        cmd.args([
            "run",
            "scenarios/smoke.toml",
            "--db",
            "url",
            "--database-url",
            &url,
            "--quiet",
            "--out",
            out.path().to_str().unwrap(),
            "--set",
            "phases=[{ name = \"steady\", duration = \"1s\" }]",
        ])
        .env_remove("DATABASE_URL")
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .env("HOME", home.path());
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let none = run(&[]);
    let err = String::from_utf8_lossy(&none.stderr);
    assert_ne!(none.status.code(), Some(0), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("password"), "{err}");

    let from_env = run(&[("PGPASSWORD", PASSWORD)]);
    assert_eq!(
        from_env.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&from_env.stderr)
    );

    let pgpass = home.path().join(".pgpass");
    std::fs::write(&pgpass, format!("127.0.0.1:{port}:*:{ROLE}:{PASSWORD}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    let from_file = run(&[]);
    assert_eq!(
        from_file.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&from_file.stderr)
    );
    assert!(!String::from_utf8_lossy(&from_file.stdout).contains(PASSWORD));
}

/// The bad-input corpus: values for every section given with `--set`, results directories
/// and saved results. Each is refused with exit 2 and one line that names the flag (or
/// path) and the key, and says what is allowed.
#[test]
fn the_bad_input_corpus_is_refused_in_one_line() {
    let sets: &[(&str, &str)] = &[
        (
            "producers.count=0",
            "producers.count: must be between 1 and 1000, got 0",
        ),
        (
            "producers.count=5000",
            "producers.count: must be between 1 and 1000",
        ),
        (
            "producers.count=-3",
            "producers.count: invalid value: `-3`, expected a whole number from 1 to 1000",
        ),
        (
            "producers.payload_bytes=99999999",
            "producers.payload_bytes: must be at most 1048576",
        ),
        (
            "producers.job_types={}",
            "producers.job_types: needs at least one type with a weight above 0",
        ),
        (
            "producers.job_types={a=0}",
            "producers.job_types: needs at least one type",
        ),
        (
            "producers.job_types={a=4294967295,b=1}",
            "producers.job_types: the weights add up to 4294967296",
        ),
        (
            "producers.priorities={x=1}",
            "producers.priorities.x: a priority must be an integer",
        ),
        (
            "producers.job_types={\"a\\u0000b\"=1}",
            "producers.job_types: the type name \"a\\0b\" holds a NUL character",
        ),
        (
            "producers.priorities={\"1\"=4294967295,\"2\"=4294967295}",
            "producers.priorities: the weights add up to",
        ),
        (
            "producers.poison_fraction=1.5",
            "producers.poison_fraction: must be between 0.0 and 1.0",
        ),
        (
            "producers.prefill=9223372036854775807",
            "producers.prefill: must be at most 100000000",
        ),
        (
            "producers.rate=1e308",
            "producers.rate: must be at most 1000000 jobs/s",
        ),
        (
            "producers.rate=",
            "producers.rate: rate must be a number of jobs per second or \"max\"",
        ),
        (
            "producers.late_after=\"9999h\"",
            "producers.late_after: must be at most 1h",
        ),
        (
            "consumers.count=0",
            "consumers.count: must be between 1 and 1000, got 0",
        ),
        (
            "consumers.claim_mode=\"sometimes\"",
            "consumers.claim_mode: unknown variant `sometimes`, expected `in_transaction` or `committed`",
        ),
        (
            "consumers.poll_interval=\"9999h\"",
            "consumers.poll_interval: must be at most 1h",
        ),
        (
            "consumers.restart_after=\"9999h\"",
            "consumers.restart_after: must be at most 1h",
        ),
        (
            "consumers.handler.duration={fixed=\"2h\"}",
            "consumers.handler.duration: must be at most 1h",
        ),
        (
            "consumers.handler.duration={lognormal={median=\"1ms\",sigma=99}}",
            "consumers.handler.duration: lognormal needs a median above 0s and at most 1h, and sigma between 0 and 10",
        ),
        (
            "consumers.handler.error_rate=2",
            "consumers.handler.error_rate:",
        ),
        (
            "queue.variant=\"nope\"",
            "queue.variant: unknown variant `nope`, expected one of `seed`",
        ),
        (
            "queue.claim_batch=5",
            "queue.claim_batch: only the batch and custom variants claim in batches",
        ),
        (
            "queue.max_retries=4294967295",
            "queue.max_retries: invalid value: `4294967295`, expected a whole number from -2147483648 to 2147483647",
        ),
        (
            "queue.max_retries=5000",
            "queue.max_retries: must be between 0 and 1000",
        ),
        (
            "queue.backoff.factor=0.5",
            "queue.backoff.factor: must be between 1 and 100",
        ),
        (
            "queue.backoff.cap=\"1ms\"",
            "queue.backoff.cap: must be at least the base",
        ),
        (
            "queue.fillfactor=5",
            "queue.fillfactor: must be between 10 and 100",
        ),
        (
            "drain.timeout=\"0s\"",
            "drain.timeout: must be more than 0s",
        ),
        (
            "drain.timeout=\"9999999999h\"",
            "drain.timeout: must be at most 24h",
        ),
        (
            "reaper.stale_after=\"0s\"",
            "reaper.stale_after: must be more than 0s",
        ),
        (
            "reaper.interval=\"1ms\"",
            "reaper.interval: must be at least 10ms",
        ),
        (
            "sampler.interval=\"99h\"",
            "sampler.interval: must be at most 1h",
        ),
        (
            "database.startup_timeout=\"9999h\"",
            "database.startup_timeout: must be at most 1h",
        ),
        (
            "database.provider=\"cloud\"",
            "database.provider: unknown variant `cloud`, expected one of `auto`",
        ),
        (
            "phases=[]",
            "phases: at least one [[phases]] entry is required",
        ),
        (
            "phases=[{name=\"a\",duration=\"0s\"}]",
            "phases[0].duration: must be more than 0s and at most 24h",
        ),
        (
            "phases=[{name=\"a\",duration=\"25h\"}]",
            "phases[0].duration: must be more than 0s and at most 24h",
        ),
        (
            "phases=[{name=\"a\",duration=\"1s\",rate=1e9}]",
            "phases[0].rate: must be at most 1000000 jobs/s",
        ),
        (
            "phases=[{name=\"a\",duration=\"10s\",faults=[{kind=\"kill_backends\",every=\"20s\"}]}]",
            "phases[0].faults[0]: every must be shorter than its phase (10s)",
        ),
        (
            "phases=[{name=\"a\",duration=\"10s\",faults=[{kind=\"restart_server\",after=\"20s\"}]}]",
            "phases[0].faults[0]: after must fall inside the phase",
        ),
        (
            "phases=[{name=\"a\",duration=\"10s\",faults=[{kind=\"nope\"}]}]",
            "phases[0].faults[0].kind: unknown variant `nope`",
        ),
        (
            "phases=[{name=\"a\",duration=\"10s\",faults=[{kind=\"kill_workers\",every=\"1s\",count=1}]}]",
            "phases[0].faults[0]: kill_workers needs worker processes",
        ),
        (
            "phases=[{name=\"a\",duration=\"10s\",faults=[{kind=\"idle_in_transaction\",for=\"20s\"}]}]",
            "phases[0].faults[0]: for must be more than 0s and end with the load at the latest (10s after the phase starts)",
        ),
        (
            "thresholds={\"end_to_end.p99\"=\"<< 1s\"}",
            "thresholds[\"end_to_end.p99\"]:",
        ),
        (
            "thresholds={\"end_to_end.p98\"=\"< 1s\"}",
            "thresholds[\"end_to_end.p98\"]: unknown metric",
        ),
        (
            "seed=-1",
            "seed: invalid value: `-1`, expected a whole number from 0 up",
        ),
        ("name=\"\"", "name: must be 1 to 100 characters"),
        ("x.y=1", "x: unknown key (expected one of `name`"),
    ];
    for (set, expected) in sets {
        let o = dbq(&["validate", "scenarios/smoke.toml", "--set", set]);
        crate::support::assert_bad_input(&o, set, &format!("--set {set}: {expected}"));
    }
    // Malformed flags themselves.
    for (set, expected) in [
        ("=3", "--set =3: the key is empty"),
        (
            "producers.rate",
            "--set producers.rate: expected key.path=value",
        ),
    ] {
        let o = dbq(&["validate", "scenarios/smoke.toml", "--set", set]);
        crate::support::assert_bad_input(&o, set, expected);
    }
    // Results directories: a file, a place that cannot be created; results that are not there.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let file = file.to_str().unwrap();
    let under_file = format!("{file}/sub");
    for (args, expected) in [
        (
            vec!["run", "scenarios/smoke.toml", "--out", file],
            format!("--out {file}: is a file, not a directory"),
        ),
        (
            vec!["run", "scenarios/smoke.toml", "--out", &under_file],
            format!("--out {under_file}: cannot create it"),
        ),
        (
            vec!["capacity", "scenarios/capacity.toml", "--out", file],
            format!("--out {file}: is a file, not a directory"),
        ),
        (
            vec!["calibrate", "--out", file],
            format!("--out {file}: is a file, not a directory"),
        ),
        (
            vec!["compare", "/nonexistent/a", "/nonexistent/b"],
            "compare: /nonexistent/a holds no summary.json".to_string(),
        ),
        (
            vec!["report", "/nonexistent/run"],
            "report /nonexistent/run: holds no summary.json (a run), capacity.json".to_string(),
        ),
        (
            vec![
                "run",
                "scenarios/smoke.toml",
                "--db",
                "local",
                "--database-url",
                "postgres://u@127.0.0.1:1/x",
            ],
            "--database-url: database.url: a server's URL was given, but the local provider starts a server of its own".to_string(),
        ),
        (
            vec!["matrix", "scenarios/smoke.toml", "--out", &under_file],
            format!("--out {under_file}: cannot create it"),
        ),
        (
            vec!["matrix", "merge", "/nonexistent/m"],
            "/nonexistent/m/cells".to_string(),
        ),
        (
            vec!["validate", "/nonexistent/s.toml"],
            "/nonexistent/s.toml: cannot read the scenario".to_string(),
        ),
        (
            vec![
                "run",
                "scenarios/smoke.toml",
                "--capacity",
                "/nonexistent/c",
            ],
            "--capacity: cannot read /nonexistent/c".to_string(),
        ),
    ] {
        crate::support::assert_bad_input(&dbq(&args), &args.join(" "), &expected);
    }
}

/// A connection string that looks like a URL but is not one (no `//`) is refused at once,
/// naming the flag, never tried for ten seconds as a server, and its password is not shown.
#[test]
fn a_malformed_url_is_refused_naming_its_flag() {
    for command in ["validate", "run"] {
        let o = dbq(&[
            command,
            "scenarios/smoke.toml",
            "--db",
            "url",
            "--database-url",
            "postgres:u:secret@h/db",
        ]);
        crate::support::assert_bad_input(
            &o,
            command,
            "--database-url: database.url: postgres:u:***@h/db is malformed: a URL starts with postgres://",
        );
        assert!(!String::from_utf8_lossy(&o.stderr).contains("secret"));
    }
}

/// A bug (a panic) in a run on a server the run does not own ends with one line and exit 1,
/// and the run's schema is dropped all the same. The run uses a database of its own on the
/// shared server, so the schemas there are this test's alone.
#[test]
fn a_panic_still_drops_the_run_schema() {
    let admin = shared_url();
    let db = "dbq_panic_test";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let schemas = |url: String| async move {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'dbq\\_run\\_%'",
        )
        .fetch_one(&mut conn)
        .await
        .unwrap();
        n
    };
    rt.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(admin).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {db}")))
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}")))
            .execute(&mut conn)
            .await
            .unwrap();
    });
    let url = format!("{}/{db}", admin.rsplit_once('/').unwrap().0);
    let out = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["run", "scenarios/smoke.toml", "--db", "url", "--quiet"])
        .args(["--database-url", &url])
        .env(dbq_bench::run::PANIC_AFTER_SET_UP, "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("internal error"), "{err}");
    assert_eq!(
        rt.block_on(schemas(url)),
        0,
        "the run's schema was left behind"
    );
}
