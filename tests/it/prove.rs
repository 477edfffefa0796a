//! A harness that dies mid-run (SIGKILL) leaves its journal behind: `prove DIR` states every
//! job the journal saw committed against the queue still on its server, names a job the
//! server really lost, and refuses a directory without a journal in one line.

use crate::support::{Background, shared_kafka_url, shared_url, smoke_on_shared_server};
use std::path::Path;
use std::process::{Command, Output};

/// Runs `dbq-bench run … --out DIR` and SIGKILLs it once its journal holds `lines` lines (the
/// load well under way); returns the journal's text.
fn killed_mid_run(args: &[&str], out: &Path, lines: usize) -> String {
    let mut args = args.to_vec();
    args.extend(["--set", "phases.1.duration=\"120s\""]);
    let mut run = Background::start(&args, out);
    run.journal_of(lines);
    run.child.kill().unwrap();
    run.child.wait().unwrap();
    std::fs::read_to_string(out.join("journal.jsonl")).unwrap()
}

fn prove(dir: &Path, url: &str, more: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .arg("prove")
        .arg(dir)
        .args(["--database-url", url])
        .args(more)
        .env_remove("DATABASE_URL")
        .output()
        .unwrap()
}

/// The ids the journal saw committed: enqueued one by one, or prefilled in runs of ids.
fn enqueued(journal: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    for e in journal
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    {
        ids.extend(e["Enqueued"]["job"].as_i64());
        for run in e["Prefilled"]["runs"].as_array().into_iter().flatten() {
            let (first, n) = (run[0].as_i64().unwrap(), run[1].as_i64().unwrap());
            ids.extend(first..first + n);
        }
    }
    ids
}

/// The proof's line for a sound queue: "none lost" while jobs are still queued, "lost 0" once
/// every job finished before the kill (a fast machine drains the smoke load's early jobs).
fn says_none_lost(said: &str) -> bool {
    said.contains("none lost") || said.contains("ledger and table agree: lost 0,")
}

fn proof_of(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("proof.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_harness_is_proved_from_its_journal_and_a_job_the_server_lost_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let journal = killed_mid_run(&smoke_on_shared_server(), dir.path(), 1500);
    let seen = enqueued(&journal);
    assert!(seen.len() > 300, "{} jobs in the journal", seen.len());
    let out = prove(dir.path(), shared_url(), &[]);
    let said = crate::support::stdout_of(&out, 0);
    assert!(says_none_lost(&said), "{said}");
    let p = proof_of(dir.path());
    assert_eq!(p["proof"]["lost_total"].as_u64(), Some(0), "{p}");
    let committed = p["proof"]["committed"].as_u64().unwrap();
    assert!(committed >= seen.len() as u64, "{p}");
    // Every job the journal saw committed is in one place.
    let pr = &p["proof"];
    let placed = ["done", "dead_lettered", "unfinished", "lost_total"]
        .iter()
        .map(|k| pr[k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(placed, committed, "{pr}");
    // The server loses a job the journal saw committed: the proof names it.
    let victim = seen[seen.len() - 100];
    let namespace = journal.lines().next().unwrap();
    let ns: serde_json::Value = serde_json::from_str(namespace).unwrap();
    let ns = ns["namespace"].as_str().unwrap();
    let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(shared_url())
        .await
        .unwrap();
    let deleted = sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM {ns}.job_queue WHERE id = $1"
    )))
    .bind(victim)
    .execute(&mut c)
    .await
    .unwrap();
    assert_eq!(deleted.rows_affected(), 1);
    let out = prove(dir.path(), shared_url(), &["--drop"]);
    let said = crate::support::stdout_of(&out, 1);
    assert!(
        said.contains(&format!("id {victim} (ledger")) && said.contains("table missing"),
        "{said}"
    );
    assert!(
        said.contains(&format!("dropped: the run's queue {ns}")),
        "{said}"
    );
}

#[test]
fn a_killed_harness_on_kafka_is_proved_from_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "scenarios/smoke.toml",
        "--db",
        "url",
        "--database-url",
        shared_kafka_url(),
        "--set",
        "database.engine=\"kafka\"",
    ];
    let journal = killed_mid_run(&args, dir.path(), 1500);
    let seen = enqueued(&journal);
    let out = prove(dir.path(), shared_kafka_url(), &["--drop"]);
    let said = crate::support::stdout_of(&out, 0);
    assert!(says_none_lost(&said), "{said}");
    let p = &proof_of(dir.path())["proof"];
    assert!(p["committed"].as_u64().unwrap() >= seen.len() as u64, "{p}");
    assert_eq!(p["lost_total"].as_u64(), Some(0), "{p}");
}

#[test]
fn prove_refuses_a_directory_without_a_journal_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("summary.json"), "{}").unwrap();
    let out = prove(dir.path(), "postgres://nobody@127.0.0.1:1/x", &[]);
    crate::support::assert_bad_input(&out, "a finished run", "summary.json");
    let empty = tempfile::tempdir().unwrap();
    let out = prove(empty.path(), "postgres://nobody@127.0.0.1:1/x", &[]);
    crate::support::assert_bad_input(&out, "no run", "journal.jsonl");
}
