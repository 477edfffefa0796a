//! The second engine: the same scenarios, load, faults and proof on a real MariaDB (a shared
//! local server; the provider tests start their own).

use crate::support::{
    SMALL, assert_nothing_lost, maria_sql, mariadb_plan, prove_again, run_plan, shared_mariadb_url,
};
use dbq_bench::backend;
use dbq_bench::provider::provision;
use dbq_bench::scenario::{DatabasePlan, Engine, ProviderKind};
use sqlx::Connection;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_runs_on_mariadb_with_every_job_accounted_for() {
    let p = mariadb_plan(
        SMALL,
        &[
            "producers.prefill=300",
            "consumers.handler.error_rate=0.1",
            "producers.poison_fraction=0.02",
            "sampler.interval=200ms",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    assert!(
        s.database.server_version.starts_with("MariaDB"),
        "{:?}",
        s.database
    );
    assert!(s.jobs.failed_attempts > 0, "{:?}", s.jobs);
    // Poison jobs fail every attempt and end in dead_letter after max_retries.
    assert!(s.jobs.dead_lettered > 0, "{:?}", s.jobs);
    assert_eq!(
        s.accounting.table.duplicate_completions,
        Some(0),
        "the audit trigger ran"
    );
    // The sampler read MariaDB's figures: commits and the redo log moved during the load
    // phase (by name: a slow drain gets samples of its own, and one sample shows no change).
    let steady = s
        .db_stats
        .per_phase
        .iter()
        .find(|p| p.phase == "steady")
        .expect("the load phase was sampled");
    assert!(steady.commits > 0 && steady.wal_bytes > 0, "{steady:?}");

    // The table agrees job by job: every failure is a retry_count, every job finished.
    let queue = outcome.kept_queue.as_ref().expect("kept");
    let mut conn = maria_sql(&**queue).await;
    let (done, dead, retries): (i64, i64, i64) = sqlx::query_as(
        "SELECT CAST(SUM(status = 'done') AS SIGNED), CAST(SUM(status = 'dead_letter') AS SIGNED), \
         CAST(COALESCE(SUM(retry_count), 0) AS SIGNED) FROM job_queue",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(done as u64, s.jobs.completed);
    assert_eq!(dead as u64, s.jobs.dead_lettered);
    assert_eq!(retries as u64, s.jobs.failed_attempts);

    // The proof catches a job the table lost.
    sqlx::query("DELETE FROM job_queue ORDER BY id LIMIT 1")
        .execute(&mut conn)
        .await
        .unwrap();
    let proof = prove_again(&**queue, &outcome.ledger, crate::support::DRAINED_AUDITED).await;
    assert!(!proof.ok);
    assert_eq!(proof.table.lost, 1, "{}", proof.verdict);
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
}

/// The bystander on MariaDB: its InnoDB table in the run's database, measured alone and
/// beside the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bystander_runs_on_mariadb() {
    let p = mariadb_plan(
        SMALL,
        &["bystander={ enabled = true, rate = 100, rows = 5000, quiet = \"1s\" }"],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    crate::support::assert_bystander(s, 100.0, 1.0);
    let queue = outcome.kept_queue.as_ref().expect("kept");
    let mut conn = maria_sql(&**queue).await;
    let (rows, updates): (i64, i64) =
        sqlx::query_as("SELECT COUNT(*), CAST(SUM(counter) AS SIGNED) FROM bystander")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
    // More rows than MariaDB's default max_recursive_iterations (1,000).
    assert_eq!(rows, 5000);
    assert!(updates > 0, "{updates} updates");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_claims_on_mariadb_take_several_jobs_per_statement() {
    let p = mariadb_plan(
        SMALL,
        &[
            "queue.variant=\"batch\"",
            "queue.claim_batch=20",
            "producers.prefill=2000",
            "consumers.handler.duration.fixed=0ms",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    // A batch is completed by one statement, so its jobs share one completed_at: far fewer
    // distinct times than jobs shows the batches were real.
    let queue = outcome.kept_queue.as_ref().expect("kept");
    let mut conn = maria_sql(&**queue).await;
    let (statements, jobs): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(DISTINCT completed_at), COUNT(*) FROM job_queue WHERE status = 'done'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(jobs as u64, s.jobs.completed);
    assert!(
        statements * 4 < jobs,
        "{statements} completions for {jobs} jobs"
    );
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
}

/// Runs the design `variant` on the shared MariaDB with poison jobs, keeping its database:
/// every job accounted for, some dead-lettered.
async fn run_design_with_poison(variant: &str) -> (dbq_bench::run::RunOutcome, tempfile::TempDir) {
    let variant = format!("queue.variant=\"{variant}\"");
    let p = mariadb_plan(
        SMALL,
        &[
            &variant,
            "producers.prefill=300",
            "producers.poison_fraction=0.02",
        ],
    );
    let (outcome, dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    assert!(s.jobs.dead_lettered > 0, "{:?}", s.jobs);
    (outcome, dir)
}

/// Removes job `id`'s evidence with `delete` (its `?` the id), checks that the proof, run
/// again, names the job lost, and drops the run's database.
async fn expect_lost_without(
    queue: &dyn backend::Backend,
    ledger: &dbq_bench::metrics::Ledger,
    mut conn: sqlx::MySqlConnection,
    delete: &'static str,
    id: i64,
) {
    sqlx::query(delete)
        .bind(id)
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.ok();
    let proof = prove_again(queue, ledger, crate::support::DRAINED_AUDITED).await;
    assert!(
        !proof.ok && proof.lost.iter().any(|l| l.id == id),
        "expected job {id} named lost after `{delete}`: {}",
        proof.verdict
    );
    queue.drop_namespace().await.unwrap();
}

/// Delete on completion on MariaDB: the rows go, the audit's deletion records are what the
/// proof finds them by (and without one, the job is named lost).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_on_mariadb_keeps_every_job_in_its_audit() {
    let (outcome, _dir) = run_design_with_poison("delete").await;
    let s = &outcome.results.summary;
    let queue = outcome.kept_queue.as_ref().expect("kept");
    let mut conn = maria_sql(&**queue).await;
    let (rows, gone): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM job_queue), \
                (SELECT MIN(job_id) FROM dbq_bench_completion_audit WHERE status = 'done')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        rows as u64, s.jobs.dead_lettered,
        "only dead letters keep a row"
    );
    expect_lost_without(
        &**queue,
        &outcome.ledger,
        conn,
        "DELETE FROM dbq_bench_completion_audit WHERE job_id = ?",
        gone,
    )
    .await;
}

/// Move-to-archive on MariaDB: finished jobs leave the queue for the archive (by the
/// design's procedure), the proof reads them there, and names one lost without its row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_on_mariadb_moves_finished_jobs_and_the_proof_reads_the_archive() {
    let (outcome, _dir) = run_design_with_poison("archive").await;
    let s = &outcome.results.summary;
    let queue = outcome.kept_queue.as_ref().expect("kept");
    let mut conn = maria_sql(&**queue).await;
    let (rows, archived, first): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM job_queue), (SELECT COUNT(*) FROM job_queue_archive), \
                (SELECT MIN(id) FROM job_queue_archive)",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows as u64, s.jobs.dead_lettered, "only dead letters stay");
    assert_eq!(
        archived as u64, s.jobs.completed,
        "every completed job archived"
    );
    expect_lost_without(
        &**queue,
        &outcome.ledger,
        conn,
        "DELETE FROM job_queue_archive WHERE id = ?",
        first,
    )
    .await;
}

/// pgmq's shape on MariaDB: no status column, completion deletes the row, dead letters are
/// marked; the proof reads the design's own audit and view, and names a job lost without
/// its audit row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visibility_timeout_on_mariadb_keeps_every_job_in_its_audit() {
    let (outcome, _dir) = run_design_with_poison("visibility_timeout").await;
    let s = &outcome.results.summary;
    let queue = outcome.kept_queue.as_ref().expect("kept");
    let mut conn = maria_sql(&**queue).await;
    let (rows, dead, gone): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM job_queue), \
                (SELECT COUNT(*) FROM job_queue WHERE dead_at IS NOT NULL), \
                (SELECT MIN(job_id) FROM dbq_bench_completion_audit WHERE status = 'done')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        (rows as u64, dead as u64),
        (s.jobs.dead_lettered, s.jobs.dead_lettered),
        "only dead letters keep a row"
    );
    expect_lost_without(
        &**queue,
        &outcome.ledger,
        conn,
        "DELETE FROM dbq_bench_completion_audit WHERE job_id = ?",
        gone,
    )
    .await;
}

/// Crashed workers' jobs come back when their visibility timeout runs out on MariaDB too,
/// counted as reaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visibility_timeout_on_mariadb_redelivers_a_crashed_workers_job_as_a_reap() {
    crate::variants::crashes_come_back_as_reaps(
        mariadb_plan,
        &["queue.variant=\"visibility_timeout\""],
    )
    .await;
}

/// A custom directory in MariaDB's dialect, the MariaDB seed's own statements, runs like the
/// seed: its claim read from the directory, every job accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_directory_runs_on_mariadb_like_the_seed() {
    let dir = format!(
        "queue.dir=\"{}\"",
        crate::support::scenario_dir("custom-seed-mariadb")
    );
    let p = mariadb_plan(
        SMALL,
        &[
            "queue.variant=\"custom\"",
            &dir,
            "producers.prefill=300",
            "consumers.handler.error_rate=0.1",
            "producers.poison_fraction=0.02",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    assert!(
        s.jobs.dead_lettered > 0 && s.jobs.failed_attempts > 0,
        "{:?}",
        s.jobs
    );
    let seed_claim = include_str!("../../src/backend/mariadb/seed/claim.sql");
    assert_eq!(
        s.queue.claim_sql,
        seed_claim.trim(),
        "the directory's claim"
    );
}

/// A custom directory on MariaDB is checked against the server before any load, and a file
/// that does not fit is named in one line.
#[test]
fn a_custom_directory_that_does_not_fit_mariadb_is_refused_naming_the_file() {
    use crate::variants::{assert_one_error, broken_copy, run_custom_on};
    let server = [
        "run",
        "scenarios/smoke.toml",
        "--db",
        "url",
        "--database-url",
        shared_mariadb_url(),
        "--set",
        "database.engine=\"mariadb\"",
    ];
    let src = crate::support::scenario_dir("custom-seed-mariadb");
    let no_mark = broken_copy(&src, "mark_claimed.sql", None);
    let (code, err) = run_custom_on(&server, no_mark.path(), &[]);
    assert_one_error(code, &err, &["mark_claimed.sql: is missing", "UPDATE"]);

    let int_payload = broken_copy(
        &src,
        "claim.sql",
        Some(
            "SELECT id, type, LENGTH(payload) AS payload FROM job_queue LIMIT 1 FOR UPDATE SKIP LOCKED",
        ),
    );
    let (code, err) = run_custom_on(&server, int_payload.path(), &[]);
    assert_one_error(code, &err, &["claim.sql: returns payload as", "JSON"]);

    let bad_column = broken_copy(
        &src,
        "complete.sql",
        Some("UPDATE job_queue SET state = 'done' WHERE id = ?"),
    );
    let (code, err) = run_custom_on(&server, bad_column.path(), &[]);
    assert_one_error(code, &err, &["complete.sql: does not prepare", "state"]);

    // An unsigned retry count would decode nowhere: refused before the load, with the cast.
    let unsigned = broken_copy(
        &src,
        "job_status.sql",
        Some(
            "SELECT j.id, j.status, CAST(j.retry_count AS UNSIGNED) AS retry_count \
             FROM JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$')) AS ids \
             JOIN job_queue j ON j.id = ids.id",
        ),
    );
    let (code, err) = run_custom_on(&server, unsigned.path(), &[]);
    assert_one_error(
        code,
        &err,
        &[
            "job_status.sql: returns retry_count as",
            "CAST(retry_count AS SIGNED)",
        ],
    );

    // PostgreSQL is given the MariaDB directory: its two-statement claim is refused.
    let copy = crate::support::copy_of(&src);
    let (code, err) = run_custom_on(&crate::support::smoke_on_shared_server(), copy.path(), &[]);
    assert_one_error(code, &err, &["mark_claimed.sql: is MariaDB's"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_processes_and_backends_on_mariadb_lose_nothing() {
    // chaos-crash, shortened: worker processes SIGKILLed, claims committed before the work,
    // the reaper (counting reaps as attempts) rescuing their jobs; and KILL CONNECTION on
    // the workers' sessions.
    let p = mariadb_plan(
        SMALL,
        &[
            "phases.0.duration=4s",
            "consumers.processes=true",
            "consumers.claim_mode=\"committed\"",
            "producers.rate=80",
            "consumers.handler.duration.fixed=40ms",
            "consumers.restart_after=\"200ms\"",
            "reaper.interval=\"200ms\"",
            "reaper.stale_after=\"500ms\"",
            "phases.0.faults=[{ kind = \"kill_workers\", every = \"700ms\" }, { kind = \"kill_backends\", target = \"workers\", every = \"900ms\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.faults.worker_crashes > 0, "{:?}", s.faults.events);
    assert!(s.faults.backends_killed > 0, "{:?}", s.faults.events);
    assert!(s.faults.reaped > 0, "{:?}", s.faults);
    assert_nothing_lost(s);
    assert!(
        s.faults.duplicates_within_claim_mode,
        "{:?}",
        s.accounting.executions
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_mariadb_is_reconnected_to_without_losing_jobs() {
    crate::support::require_mariadb_binaries();
    let p = crate::support::local_plan(
        SMALL,
        &[
            "database.engine=\"mariadb\"",
            "phases.0.duration=\"6s\"",
            "phases.0.faults=[{ kind = \"restart_server\", after = \"2s\", down_for = \"1s\", mode = \"immediate\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    crate::support::assert_restart_survived(&outcome);
    assert_nothing_lost(&outcome.results.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_snapshot_keeps_innodb_from_purging_undo() {
    crate::support::require_mariadb_binaries();
    // A server of its own: the history list length is server-wide, and other tests' work
    // on the shared server would blur it.
    let p = crate::support::local_plan(
        SMALL,
        &[
            "database.engine=\"mariadb\"",
            "producers.rate=300",
            "consumers.handler.duration.fixed=0ms",
            "phases.0.faults=[{ kind = \"idle_in_transaction\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    let hold = s
        .faults
        .events
        .iter()
        .find(|e| e.kind == "idle_in_transaction")
        .expect("the hold ran");
    assert_eq!(hold.count, 1, "{}", hold.detail);
    let undo = |label: &str| {
        s.faults
            .table_probes
            .iter()
            .find(|p| p.label.starts_with(label))
            .unwrap_or_else(|| panic!("no probe {label}: {:?}", s.faults.table_probes))
            .dead_tuples
    };
    // Two seconds of claims and completions under a held snapshot: their undo stays.
    let (before, during) = (undo("before"), undo("during"));
    let after = undo("after");
    assert!(
        during > before + 500 && after < during,
        "history list length before {before}, during the hold {during}, after it {after}"
    );
    assert_nothing_lost(s);
}

/// `validate` of the smoke scenario on MariaDB with `set` on top.
fn validate_on_mariadb(set: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["validate", "scenarios/smoke.toml", "--set"])
        .args(["database.engine=\"mariadb\"", "--set", set])
        .output()
        .unwrap()
}

#[test]
fn mariadb_refuses_what_only_postgres_has_in_one_line() {
    let out = validate_on_mariadb("queue.variant=\"notify\"");
    crate::support::assert_bad_input(&out, "notify on mariadb", "queue.variant");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("LISTEN/NOTIFY")
            && err.contains("seed, batch, delete, archive, visibility_timeout or custom"),
        "{err}"
    );
    // Vacuum settings are PostgreSQL's: refused before a server would refuse to start.
    let out = validate_on_mariadb("database.settings.autovacuum_naptime=\"1s\"");
    crate::support::assert_bad_input(
        &out,
        "autovacuum_naptime on mariadb",
        "database.settings.autovacuum_naptime: a PostgreSQL vacuum setting; MariaDB has no vacuum",
    );
    let out = validate_on_mariadb("phases.0.faults=[{ kind = \"delay_vacuum\" }]");
    crate::support::assert_bad_input(&out, "delay_vacuum on mariadb", "delay_vacuum");
    // A capacity answer cannot hold autovacuum back on MariaDB: refused before a server starts.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["capacity", "scenarios/smoke.toml", "--first-vacuum", "late"])
        .args(["--set", "database.engine=\"mariadb\""])
        .output()
        .unwrap();
    crate::support::assert_bad_input(
        &out,
        "--first-vacuum late on mariadb",
        "--first-vacuum late: \"late\" keeps autovacuum off the queue table, which MariaDB has not",
    );
}

fn mariadb_db_plan(provider: ProviderKind, image: String) -> DatabasePlan {
    DatabasePlan {
        engine: Engine::Mariadb,
        provider,
        image,
        version: None,
        url: None,
        startup_timeout: Duration::from_secs(90),
        settings: vec![("innodb-buffer-pool-size".into(), "64M".into())],
    }
}

/// Starts, serves a queue (in a database of its own) and tears down.
async fn serves_and_tears_down(plan: DatabasePlan) {
    let server = provision(&plan).await.expect("provider");
    assert!(server.version.starts_with("MariaDB"), "{}", server.version);
    let p = mariadb_plan(SMALL, &[]);
    let queue = backend::install(&*server.endpoint(), "dbq_test", &p.queue, false)
        .await
        .unwrap();
    let mut conn = maria_sql(&*queue).await;
    let pool: u64 = sqlx::query_scalar("SELECT @@innodb_buffer_pool_size")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(pool, 64 << 20, "settings reach the server");
    sqlx::Connection::close(conn).await.ok();
    queue.drop_namespace().await.unwrap();
    backend::release(&*queue);
    let endpoint = server.endpoint();
    server.teardown().await.unwrap();
    assert!(endpoint.ping().await.is_err(), "the server still answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_mariadb_provider_starts_serves_and_tears_down() {
    crate::support::require_mariadb_binaries();
    serves_and_tears_down(mariadb_db_plan(ProviderKind::Local, String::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mariadb_container_provider_starts_serves_and_tears_down() {
    let image = crate::support::require_mariadb_image();
    serves_and_tears_down(mariadb_db_plan(ProviderKind::Container, image)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_url_is_read_with_either_scheme() {
    let url = shared_mariadb_url();
    for scheme in ["mysql", "mariadb"] {
        let url = url.replacen("mysql", scheme, 1);
        let endpoint = backend::driver(Engine::Mariadb)
            .endpoint(&url, &[])
            .unwrap();
        endpoint.ping().await.unwrap();
        assert!(
            endpoint
                .describe()
                .await
                .unwrap()
                .version
                .starts_with("MariaDB")
        );
    }
}
