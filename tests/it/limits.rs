//! What limited a run, named from what was measured on real servers: busy workers, a server
//! with the machine to itself, a load generator stopped on purpose (named, and its window
//! measured again rather than blamed on the queue), and another process burning a core.

use crate::support::{SMALL, plan, run_plan, shared_url};
use dbq_bench::report::limit::LimitKind;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn dbq() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// Two workers whose handler takes 20 ms can finish about 95 jobs/s; 150 are offered.
#[tokio::test(flavor = "multi_thread")]
async fn busy_workers_are_named_the_limit() {
    let p = plan(
        SMALL,
        &[
            "consumers.count=2",
            "consumers.handler={ duration = { fixed = \"20ms\" } }",
            "phases=[{ name = \"steady\", duration = \"4s\", rate = 150 }]",
        ],
    );
    let (outcome, dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    let limit = s.limit.as_ref().expect("a run names its limit");
    assert_eq!(limit.kind, LimitKind::Workers, "{}", limit.line());
    assert!(
        limit.evidence.contains("the 2 workers were busy"),
        "{}",
        limit.evidence
    );
    assert!(limit.action.contains("--consumers-for"), "{}", limit.action);
    let busy = limit.figures.workers_busy_pct.unwrap();
    assert!((90.0..=110.0).contains(&busy), "{busy}");
    assert!(limit.figures.handler_pct_of_busy.unwrap() >= 50.0);
    let phase = s.phases.iter().find(|p| p.name == "steady").unwrap();
    assert_eq!(phase.limit.as_ref().unwrap().kind, LimitKind::Workers);
    // Every format says it.
    let terminal = dbq_bench::report::terminal::render(s);
    assert!(terminal.contains("limit      the workers:"), "{terminal}");
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("**What limited it: the workers.**"), "{md}");
    assert!(md.contains("## What limited it"), "{md}");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(
        html.contains("What limited it: the workers."),
        "report.html"
    );
    let saved = json(&dir.path().join("summary.json"));
    assert_eq!(saved["limit"]["kind"], "workers", "{}", saved["limit"]);
}

/// Sixteen workers with nothing to do in their handler, offered more than the server can
/// take, on a server the run started (its processes' CPU measured): the server's.
#[test]
fn a_server_bound_run_names_the_server() {
    // A window in which the harness itself stalled is the load machine's, whatever else
    // limited it (a loaded test machine stalls now and then): measured again, as the answer
    // says to, at most three times.
    let dir = tempfile::tempdir().unwrap();
    let (mut s, mut o) = server_bound_run(&dir.path().join("run-1"));
    for again in 2..=3 {
        if s["limit"]["kind"] != "load_machine" {
            break;
        }
        (s, o) = server_bound_run(&dir.path().join(format!("run-{again}")));
    }
    let limit = &s["limit"];
    let kind = limit["kind"].as_str().unwrap_or_default();
    // On a test machine busy with other tests, those tests are another process: named so
    // only when the figures say they took that much of the machine.
    let others = limit["figures"]["machine"]["others_cores"].as_f64();
    assert!(
        ["server_cpu", "io", "lock_waits", "vacuum"].contains(&kind)
            || (kind == "other_process" && others.is_some_and(|o| o >= 0.5)),
        "expected the server's limit, got {limit}; stderr: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let server = limit["figures"]["machine"]["server_cores"].as_f64();
    assert!(
        server.is_some_and(|c| c > 0.3),
        "the server's processes are measured: {limit}"
    );
    // The workers were busy on their statements, not in a handler.
    let handler = limit["figures"]["handler_pct_of_busy"].as_f64().unwrap();
    assert!(handler < 50.0, "{limit}");
}

/// One 5 s run at 5,000 jobs/s on 16 workers without a handler, on a local server.
fn server_bound_run(out: &Path) -> (Value, std::process::Output) {
    let o = dbq()
        .args([
            "run",
            "scenarios/capacity.toml",
            "--db",
            "local",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
            "--set",
            "consumers.count=16",
            "--set",
            "consumers.handler={ duration = { fixed = \"0ms\" } }",
            "--set",
            "phases=[{ name = \"load\", duration = \"5s\", rate = 5000 }]",
            "--set",
            "drain.timeout=\"60s\"",
        ])
        .output()
        .unwrap();
    (json(&out.join("summary.json")), o)
}

/// A confirmation whose window breaks because the harness was stopped for 1.5 s: that
/// window is named the load machine's, measured again on a fresh queue, and not held
/// against the rate.
#[test]
fn a_stalled_load_generator_is_named_and_its_window_measured_again() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capacity");
    let mut child = dbq()
        .args([
            "capacity",
            "scenarios/capacity.toml",
            "--db",
            "url",
            "--database-url",
            shared_url(),
            "--at",
            "100",
            "--runs",
            "1",
            "--confirm",
            "12s",
            "--first-vacuum",
            "whenever",
            "--out",
            out.to_str().unwrap(),
            "--set",
            "capacity.warmup=\"1s\"",
            "--set",
            "capacity.upset.kind=\"none\"",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = Vec::new();
    let mut line = String::new();
    while !line.contains("load started") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "{lines:?}");
        lines.push(line.clone());
    }
    // Into the measured window (after the 1 s warm-up), away from its ends.
    std::thread::sleep(Duration::from_secs(5));
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    let rest: Vec<String> = stderr.lines().map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let c = json(&out.join("capacity.json"));
    let tries = c["confirmation"]["tries"].as_array().unwrap();
    let first = &tries[0];
    assert_eq!(first["disturbed"], true, "{first}\n{rest:?}");
    let window = &first["windows"][0];
    assert_eq!(window["limit"]["kind"], "load_machine", "{window}");
    let lag = window["limit"]["figures"]["machine"]["stalls"][0]["lag_ms"]
        .as_f64()
        .unwrap();
    assert!(lag >= 1000.0, "{window}");
    assert!(
        c["confirmation"]["remeasured"].as_u64().unwrap() >= 1,
        "{c}"
    );
    // Measured again on a fresh queue; the stall is not the queue's failure.
    assert!(tries.len() >= 2, "{c}");
    let summary = c["summary"].as_str().unwrap();
    if c["load_machine_limited"] == true {
        // This machine stalled again each time: said so, and nothing held against the rate.
        assert!(summary.contains("The load machine limited"), "{summary}");
    } else {
        assert_eq!(status.code(), Some(0), "{summary}\n{rest:?}");
        assert_eq!(c["max_sustainable_per_s"], 100.0, "{summary}");
        assert!(summary.contains("measured again, not judged"), "{summary}");
    }
}

/// A process of someone else's spinning on the CPU (a shell named `dbqhog`, not the
/// harness's child), during a run: its share is measured and named.
#[tokio::test(flavor = "multi_thread")]
async fn another_process_burning_a_core_is_named_with_its_share() {
    let hog = Hog::start();
    let p = plan(
        SMALL,
        &["phases=[{ name = \"steady\", duration = \"4s\", rate = 100 }]"],
    );
    let (outcome, dir) = run_plan(&p, false).await;
    drop(hog);
    let s = &outcome.results.summary;
    let limit = s.limit.as_ref().unwrap();
    let machine = limit.figures.machine.as_ref().unwrap();
    // Among the busiest others (a loaded test machine may have a busier one: a compiler).
    let (_, cores) = machine
        .busiest_others
        .iter()
        .find(|(name, _)| name == "dbqhog")
        .unwrap_or_else(|| panic!("dbqhog named among the others: {machine:?}"));
    assert!(*cores >= 0.15, "{machine:?}");
    assert!(machine.others_cores.unwrap() >= cores * 0.9, "{machine:?}");
    if machine
        .busiest_other()
        .is_some_and(|(name, c)| name == "dbqhog" && *c >= 0.25)
    {
        let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
        assert!(md.contains("(dbqhog "), "{md}");
        assert!(limit.evidence.contains("dbqhog"), "{}", limit.evidence);
    }
}

/// A busy loop in a shell named `dbqhog`, started so that its parent exits at once (it is
/// nobody's child here); killed when dropped.
struct Hog {
    pid: i32,
    _dir: tempfile::TempDir,
}

impl Hog {
    fn start() -> Hog {
        let dir = tempfile::tempdir().unwrap();
        let hog = dir.path().join("dbqhog");
        std::os::unix::fs::symlink("/bin/sh", &hog).unwrap();
        let script = format!(
            "{} -c 'while :; do :; done' >/dev/null 2>&1 & echo $!",
            hog.display()
        );
        let o = Command::new("sh").args(["-c", &script]).output().unwrap();
        let pid = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
        Hog { pid, _dir: dir }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}
