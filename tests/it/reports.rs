//! Reports: exporters round-trip, the HTML page stands alone, thresholds decide the exit
//! code, and the database sampler sees what the queue does to its table.

use crate::support::{SMALL, plan, run_plan, shared_url};
use dbq_bench::report::RunResults;
use dbq_bench::thresholds::{
    FAULTS, LATENCY_METRICS, LATENCY_STATS, PHASE_JOBS, RUN_JOBS, THROUGHPUT,
};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_format_round_trips_and_renders_again_from_saved_data() {
    let (outcome, dir) = run_plan(&plan(SMALL, &[]), false).await;
    let loaded = RunResults::load(dir.path()).unwrap();
    assert_eq!(
        loaded.summary, outcome.results.summary,
        "summary.json reads back as written"
    );
    assert_eq!(loaded.timeline, outcome.results.timeline);
    assert_eq!(loaded.db_stats.len(), outcome.results.db_stats.len());
    assert_eq!(
        loaded.db_stats[0].sample.versions,
        outcome.results.db_stats[0].sample.versions
    );
    assert_eq!(loaded.hlog, outcome.results.hlog);

    // The interval log reads back with the hdrhistogram crate, with one sample per job.
    let mut e2e = 0;
    for entry in IntervalLogIterator::new(&loaded.hlog) {
        if let LogEntry::Interval(h) = entry.unwrap()
            && h.tag().map(|t| t.as_str()) == Some("end_to_end")
        {
            let bytes = base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                h.encoded_histogram(),
            )
            .unwrap();
            let hist: hdrhistogram::Histogram<u64> = Deserializer::new()
                .deserialize(&mut bytes.as_slice())
                .unwrap();
            e2e += hist.len();
        }
    }
    assert_eq!(e2e, outcome.results.summary.jobs.completed);

    // An independent reader (HdrHistogram's Python implementation) decodes every interval,
    // and its merged counts and percentiles match summary.json.
    let python = crate::support::require_python_hdrh();
    let out = Command::new(python)
        .arg("scripts/check-hlog.py")
        .arg(dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scripts/check-hlog.py rejected latency.hlog: {}{said}",
        String::from_utf8_lossy(&out.stderr)
    );
    for metric in ["end_to_end", "queue_wait", "enqueue"] {
        assert!(
            said.lines()
                .any(|l| l.starts_with(&format!("{metric}:")) && l.ends_with("(= summary.json)")),
            "expected the Python reader to match summary.json's {metric}; it said: {said}"
        );
    }

    // `dbq-bench report DIR` writes every format again from those files.
    // (summary.json, timeline.csv, db_stats.csv and latency.hlog are the saved data.)
    for f in ["report.html", "report.md"] {
        std::fs::remove_file(dir.path().join(f)).unwrap();
    }
    render_again(dir.path());
    // summary.json and timeline.csv were rewritten from what was read: identical.
    let again = RunResults::load(dir.path()).unwrap();
    assert_eq!(again.summary, loaded.summary);
    assert_eq!(again.timeline, loaded.timeline);
    assert!(dir.path().join("report.html").exists() && dir.path().join("report.md").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_html_report_has_its_charts_and_links_to_nothing() {
    let p = plan(
        SMALL,
        &["phases.0.faults=[{ kind = \"kill_backends\", every = \"1s\" }]"],
    );
    let (_, dir) = run_plan(&p, false).await;
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    for title in [
        "Jobs enqueued and completed per second",
        "Jobs waiting (pending)",
        "End-to-end latency of the jobs completed in each second",
        "Latency by percentile",
        "Row versions in the queue table",
        "Size of the queue table",
        "Log written per second",
        "What the run&#39;s busy sessions were waiting on",
    ] {
        let title = title.replace("&#39;", "'");
        assert!(
            html.contains(&format!("aria-label=\"{title}")),
            "no chart \"{title}\""
        );
    }
    assert_eq!(html.matches("<svg").count(), 8);
    // Fault markers are drawn on the time charts.
    assert!(html.contains(">kill_backends</text>"));
    for external in ["http:", "https:", "<script", "src=", "<link", "@import"] {
        assert!(!html.contains(external), "report.html contains {external}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sampler_sees_dead_tuples_rise_and_the_claim_probed_per_phase() {
    let text = format!("{SMALL}\n[[phases]]\nname = \"second\"\nduration = \"1s\"\n");
    let (outcome, _dir) = run_plan(&plan(&text, &["sampler.interval=200ms"]), false).await;
    let r = &outcome.results;
    let dead: Vec<i64> = r
        .db_stats
        .iter()
        .map(|row| row.sample.versions.unwrap().dead)
        .collect();
    assert!(dead.len() >= 5, "{dead:?}");
    // Every claim and completion updates a row: dead row versions pile up until VACUUM.
    assert!(dead.iter().max() > dead.first(), "{dead:?}");
    assert!(r.db_stats.iter().any(|row| row.sample.done > Some(0)
        && row.sample.xact_commit > 0
        && row.sample.wal_bytes > 0));
    // Full samples (every status counted) open the run and follow each phase boundary;
    // the others count only the waiting jobs.
    let full: Vec<bool> = r
        .db_stats
        .iter()
        .map(|row| row.sample.done.is_some())
        .collect();
    assert!(full[0] && full.iter().any(|f| !f), "{full:?}");
    assert!(r.db_stats.iter().all(|row| row.sample.sample_ms > 0.0));
    let labels: Vec<&str> = r
        .summary
        .claim_probes
        .iter()
        .map(|c| c.label.as_str())
        .collect();
    assert!(
        labels.contains(&"start of steady")
            && labels.contains(&"start of second")
            && labels.contains(&"after the drain"),
        "{labels:?}"
    );
    // Each probe ran the claim for real (on a table still empty at the start the planner may
    // well choose a sequential scan: that is what the probes are there to show).
    for c in &r.summary.claim_probes {
        assert!(
            c.probe
                .plan
                .iter()
                .any(|n| n.contains("Scan") && n.contains("job_queue")),
            "{c:?}"
        );
        assert!(c.probe.execution_ms > 0.0, "{c:?}");
    }
    let phases: Vec<&str> = r
        .summary
        .db_stats
        .per_phase
        .iter()
        .map(|p| p.phase.as_str())
        .collect();
    assert!(
        phases.contains(&"steady") && phases.contains(&"second"),
        "{phases:?}"
    );
    let settings = &r.summary.meta.server_settings;
    assert!(
        settings.contains_key("shared_buffers") && settings.contains_key("autovacuum"),
        "{settings:?}"
    );
    assert_eq!(r.summary.meta.scenario_sha256.len(), 64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_threshold_metric_name_is_found_in_a_real_summary() {
    let (outcome, _dir) = run_plan(&plan(SMALL, &[]), false).await;
    let json = serde_json::to_value(&outcome.results.summary).unwrap();
    let number = |v: &serde_json::Value, path: &[&str]| {
        path.iter()
            .try_fold(v, |v, k| v.get(k))
            .is_some_and(|v| v.is_number())
    };
    for m in LATENCY_METRICS {
        for s in LATENCY_STATS {
            assert!(number(&json, &["latency_ms", m, s]), "{m}.{s}");
            assert!(
                number(&json["phases"][0], &["latency_ms", m, s]),
                "phase {m}.{s}"
            );
        }
    }
    for f in THROUGHPUT {
        assert!(
            number(&json, &["throughput", f]) && number(&json["phases"][0], &["throughput", f]),
            "throughput.{f}"
        );
    }
    for f in RUN_JOBS {
        assert!(number(&json, &["jobs", f]), "jobs.{f}");
    }
    for f in PHASE_JOBS {
        assert!(number(&json["phases"][0], &["jobs", f]), "phase jobs.{f}");
    }
    for f in FAULTS {
        assert!(number(&json, &["faults", f]), "faults.{f}");
    }
}

fn scenario_file(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let path = dir.join("t.toml");
    std::fs::write(&path, format!("{SMALL}\n{extra}")).unwrap();
    path
}

fn run_cli(
    scenario: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args([
            "run",
            "--db",
            "url",
            "--database-url",
            shared_url(),
            "--out",
        ])
        .arg(out)
        .arg(scenario)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn failed_thresholds_exit_99_and_easy_ones_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let easy = scenario_file(
        dir.path(),
        "[thresholds]\n\"jobs.lost\" = \"== 0\"\n\"end_to_end.max\" = \"< 1h\"\n\"throughput.completed_per_s\" = \"> 0\"",
    );
    let step_summary = dir.path().join("step-summary.md");
    let out = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args([
            "run",
            "--db",
            "url",
            "--database-url",
            shared_url(),
            "--json",
            "--out",
        ])
        .arg(dir.path().join("easy"))
        .arg(&easy)
        .env("GITHUB_STEP_SUMMARY", &step_summary)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --json prints summary.json on stdout, with every threshold's result.
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["thresholds_passed"], true);
    assert_eq!(s["thresholds"].as_array().unwrap().len(), 3);
    // In GitHub Actions the report is appended to the job summary.
    assert!(
        std::fs::read_to_string(&step_summary)
            .unwrap()
            .starts_with("# dbq-bench")
    );

    let impossible = scenario_file(dir.path(), "[thresholds]\n\"claim.p50\" = \"< 0\"");
    let out = run_cli(&impossible, &dir.path().join("impossible"), &[]);
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("thresholds 1 of 1 FAILED: claim.p50 < 0"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(dir.path().join("impossible/report.md")).unwrap();
    assert!(report.contains("**FAILED**"));
}

#[test]
fn abort_on_fail_stops_the_load_at_the_first_failed_phase() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = scenario_file(
        dir.path(),
        "[[phases]]\nname = \"long\"\nduration = \"60s\"\n[phases.thresholds]\n\"throughput.completed_per_s\" = \">= 1\"\n",
    );
    // The first phase ("steady") carries an impossible threshold.
    let out = run_cli(
        &scenario,
        &dir.path().join("out"),
        &[
            "--abort-on-fail",
            "--set",
            "phases.0.thresholds={ \"claim.max\" = \"< 0\" }",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(s["complete"], false);
    assert!(
        s["aborted_by_threshold"]
            .as_str()
            .unwrap()
            .contains("claim.max"),
        "{}",
        s["aborted_by_threshold"]
    );
    let long = s["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "long")
        .unwrap();
    assert!(long["duration_s"].as_f64().unwrap() < 30.0, "{long}");
    assert_eq!(s["jobs"]["lost"], 0);
    // Every format gives the same reason for the incomplete run.
    let said = "stopped early by --abort-on-fail: claim.max";
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(
        terminal.contains(&format!("INCOMPLETE: {said}")),
        "{terminal}"
    );
    for file in ["report.md", "report.html"] {
        let text = std::fs::read_to_string(dir.path().join("out").join(file)).unwrap();
        assert!(
            text.contains(said),
            "{file} does not say why the run is incomplete"
        );
    }
}

/// A results directory of the previous schema (1; a PostgreSQL smoke run written at commit
/// 52ec0b1) renders again: `dbq-bench report` reads it, names its server's
/// version and settings under schema 2's names, and writes it back as schema 2.
#[test]
fn a_saved_run_of_the_previous_schema_renders_again() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::copy_files(std::path::Path::new("tests/fixtures/v1-run"), dir.path());
    let before: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(before["schema_version"], 1);
    render_again(dir.path());
    let again = RunResults::load(dir.path()).unwrap();
    assert_eq!(again.summary.schema_version, 2);
    assert_eq!(
        again.summary.meta.server_version,
        before["meta"]["postgres_version"].as_str().unwrap()
    );
    assert!(
        again
            .summary
            .meta
            .server_settings
            .contains_key("autovacuum")
    );
    assert_eq!(
        again.summary.jobs.enqueued,
        before["jobs"]["enqueued"].as_u64().unwrap()
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("lost 0") || md.contains("lost: 0"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(
        html.contains("PostgreSQL 15"),
        "the server's version is shown"
    );
}

/// `dbq-bench report DIR`: every format written again from the saved data.
fn render_again(dir: &std::path::Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["report", "--quiet"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
