//! A queue library's own worker processes as the consumers (a design's `[worker]`): the
//! examples under examples/ run on the shared server, are killed mid-job, lose a row behind
//! their back, and the proof says what became of every job; a worker command that never
//! connects, speaks garbage or exits at once stops the run in one line, leaving nothing
//! running.

use crate::support::{
    SMALL, assert_nothing_lost, copy_files, database_of_its_own, drop_database, local_plan, plan,
    plan_on, run_plan, shared_url,
};
use sqlx::{Connection, PgConnection};
use std::path::Path;
use std::time::Duration;

/// The interpreter that has the example libraries installed (scripts/test sets it up from
/// each example's pinned requirements.txt).
fn library_python() -> String {
    let python = std::env::var("DBQ_LIBRARIES_PYTHON").unwrap_or_else(|_| {
        panic!(
            "missing prerequisite: DBQ_LIBRARIES_PYTHON, an interpreter with the example queue \
             libraries (python3 -m venv target/examples-python && target/examples-python/bin/pip \
             install -r examples/procrastinate/requirements.txt); scripts/test sets it up"
        )
    });
    assert!(
        Path::new(&python).exists(),
        "DBQ_LIBRARIES_PYTHON={python} does not exist"
    );
    python
}

/// A copy of examples/`name` beside examples/python (which its glue imports), its
/// `[worker]` command's program replaced by `program`; returns the copy and the design's
/// directory in it.
fn example_copy(name: &str, program: &[&str]) -> (tempfile::TempDir, String) {
    let root = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for dir in [name, "python"] {
        copy_files(&examples.join(dir), &root.path().join(dir));
    }
    let design = root.path().join(name).join("design.toml");
    let text = std::fs::read_to_string(&design).unwrap();
    let command = format!(
        "command = [{}]",
        program
            .iter()
            .map(|p| format!("{p:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let original = text
        .lines()
        .find(|l| l.starts_with("command = ["))
        .unwrap_or_else(|| panic!("{name}'s design.toml has no [worker] command"));
    std::fs::write(&design, text.replace(original, &command)).unwrap();
    let dir = root.path().join(name).display().to_string();
    (root, dir)
}

/// The graphile_worker example's worker binary (scripts/test builds it).
fn graphile_worker_binary() -> String {
    let binary = std::env::var("DBQ_GRAPHILE_WORKER").unwrap_or_else(|_| {
        panic!(
            "missing prerequisite: DBQ_GRAPHILE_WORKER, the graphile_worker example's worker \
             (cargo build --release --manifest-path examples/graphile-worker/Cargo.toml); \
             scripts/test builds it"
        )
    });
    assert!(
        Path::new(&binary).exists(),
        "DBQ_GRAPHILE_WORKER={binary} does not exist"
    );
    binary
}

/// The example `name` with its own worker: the libraries' interpreter running its
/// worker.py, or the Rust example's binary.
fn example(name: &str) -> (tempfile::TempDir, String) {
    if name == GRAPHILE_WORKER.name {
        return example_copy(name, &[&graphile_worker_binary()]);
    }
    let python = library_python();
    example_copy(name, &[&python, "worker.py"])
}

fn custom(dir: &str) -> [String; 2] {
    [
        "queue.variant=\"custom\"".into(),
        format!("queue.dir=\"{dir}\""),
    ]
}

fn sets<'a>(design: &'a [String; 2], more: &[&'a str]) -> Vec<&'a str> {
    design
        .iter()
        .map(String::as_str)
        .chain(more.iter().copied())
        .collect()
}

/// A shipped example library: what the tests need to know of it.
struct Library {
    /// Its directory under examples/.
    name: &'static str,
    /// Its queue table.
    table: &'static str,
    /// Deletes the newest waiting job behind the library's back, returning its id.
    delete_waiting: &'static str,
    /// What prints the installed library's schema, which schema.sql carries verbatim: the
    /// interpreter's arguments, run in the example's directory with the shared server in
    /// libpq's variables.
    installed_schema: &'static [&'static str],
}

const PROCRASTINATE: Library = Library {
    name: "procrastinate",
    table: "procrastinate_jobs",
    delete_waiting: "DELETE FROM procrastinate_jobs WHERE id = (SELECT max(id) FROM procrastinate_jobs WHERE status = 'todo') RETURNING id",
    installed_schema: &[
        "-c",
        "import procrastinate, os, sys; sys.stdout.write(open(os.path.join(os.path.dirname(procrastinate.__file__), 'sql', 'schema.sql')).read())",
    ],
};

const PGQUEUER: Library = Library {
    name: "pgqueuer",
    table: "pgqueuer",
    delete_waiting: "DELETE FROM pgqueuer WHERE id = (SELECT max(id) FROM pgqueuer WHERE status = 'queued') RETURNING id",
    installed_schema: &[
        "-c",
        "import sys; from typer.testing import CliRunner; from pgqueuer.adapters.cli.cli import app; sys.stdout.write(CliRunner().invoke(app, ['sql', 'install']).stdout)",
    ],
};

const CHANCY: Library = Library {
    name: "chancy",
    table: "chancy_jobs",
    delete_waiting: "DELETE FROM chancy_jobs WHERE id = (SELECT id FROM chancy_jobs WHERE state = 'pending' ORDER BY id DESC LIMIT 1) RETURNING (kwargs->>'dbq_job')::bigint",
    // chancy ships no SQL: its migrations run in a scratch schema and pg_dump prints it.
    installed_schema: &["print_schema.py"],
};

const GRAPHILE_WORKER: Library = Library {
    name: "graphile-worker",
    table: "_private_jobs",
    delete_waiting: "DELETE FROM _private_jobs WHERE id = (SELECT max(id) FROM _private_jobs WHERE locked_at IS NULL AND attempts = 0) RETURNING id",
    // Printed by the example's own binary from graphile_worker's migrations.
    installed_schema: &["--print-schema"],
};

const DRAMATIQ_PG: Library = Library {
    name: "dramatiq-pg",
    table: "dramatiq_queue",
    delete_waiting: "DELETE FROM dramatiq_queue WHERE message_id = (SELECT message_id FROM dramatiq_queue WHERE state = 'queued' AND queue_name = 'default' ORDER BY (message->'kwargs'->>'dbq_job')::bigint DESC LIMIT 1) RETURNING (message->'kwargs'->>'dbq_job')::bigint",
    // dramatiq-pg's schema.sql is a psql script; print_schema.py reads it as dramatiq-pg's
    // own generate_init_sql does.
    installed_schema: &["print_schema.py"],
};

/// The library works the queue open loop, retries the handler's failures its own way, and
/// nothing is lost.
async fn works_the_queue_and_nothing_is_lost(library: &Library) {
    let (_copy, dir) = example(library.name);
    let design = custom(&dir);
    let p = plan(
        SMALL,
        &sets(
            &design,
            &[
                "producers.prefill=50",
                "consumers.handler.error_rate=0.05",
                "queue.backoff.base=\"100ms\"",
            ],
        ),
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    assert!(s.accounting.ok, "{}", s.accounting.verdict);
    assert_eq!(s.jobs.completed + s.jobs.dead_lettered, s.jobs.enqueued);
    assert!(s.jobs.enqueued > 300, "{:?}", s.jobs);
    // The handler's failures went through the library's own retries.
    assert!(s.faults.handler_errors > 0, "{:?}", s.faults);
    assert_eq!(s.accounting.executions.repeated_successes, 0);
    // The library's claims are its own: the harness times from the intended time to the
    // handler's start and end, never a claim it did not make.
    assert!(s.latency_ms.end_to_end.count > 0);
    assert_eq!(s.latency_ms.claim.count, 0);
}

/// A killed worker's job, with the library's stalled-job rescue at the scenario's
/// reaper.stale_after: every one runs again and finishes; with the reaper off (the library's
/// default rescue, or none), each is still in flight when a short drain ends, and the proof
/// names it stuck.
async fn a_killed_workers_job_is_rescued_or_named_stuck(library: &Library) {
    let (_copy, dir) = example(library.name);
    let design = custom(&dir);
    // The kill comes 2 s into the load, once: a library that polls in whole seconds
    // (chancy) may not have fetched its first job 1 s after its hello on a loaded machine,
    // and a worker killed with nothing in hand orphans nothing (seen once, with chancy).
    let busy = [
        &BUSY[..],
        &[
            "phases.0.duration=\"3s\"",
            "phases.0.faults=[{ kind = \"kill_workers\", every = \"2s\", count = 1 }]",
        ],
    ]
    .concat();
    let rescued = [
        &busy[..],
        &["reaper.stale_after=\"1s\"", "drain.timeout=\"60s\""],
    ]
    .concat();
    let (outcome, _dir) = run_plan(&plan(SMALL, &sets(&design, &rescued)), false).await;
    let s = &outcome.results.summary;
    let o = &s.faults.orphaned_jobs;
    assert!(o.count >= 1, "{o:?}");
    assert_eq!((o.ran_again, o.done), (o.count, o.count), "{}", o.line());
    // When is the library's own: procrastinate's stalled-job retry takes a job whose worker
    // has not beaten for stale_after; pgqueuer re-picks one whose heartbeat (every
    // stale_after / 2) is older than that, so from half a second after the kill.
    assert!(
        o.ran_again_after_s_p50.is_some_and(|s| s > 0.0),
        "{}",
        o.line()
    );
    assert_nothing_lost(s);
    assert!(s.accounting.ok, "{}", s.accounting.verdict);

    let stranded = [&busy[..], &["reaper.enabled=false", "drain.timeout=\"3s\""]].concat();
    let (outcome, _dir) = run_plan(&plan(SMALL, &sets(&design, &stranded)), false).await;
    let s = &outcome.results.summary;
    let o = &s.faults.orphaned_jobs;
    assert!(o.count >= 1 && o.ran_again == 0, "{}", o.line());
    assert_eq!(o.jobs[0].ended, "stuck in flight", "{}", o.line());
    let proof = &s.accounting;
    assert!(!proof.ok);
    assert!(proof.stuck_count >= 1, "{}", proof.verdict);
    assert!(
        proof.verdict.contains(&format!("{}", o.jobs[0].job)) && proof.verdict.contains("stuck"),
        "{}",
        proof.verdict
    );
}

/// Workers always busy (a backlog of 200 ms jobs), so that a fault on one catches jobs in
/// hand.
const BUSY: [&str; 5] = [
    "producers.rate=25",
    "producers.prefill=20",
    "consumers.count=2",
    "consumers.handler.duration.fixed=\"200ms\"",
    "consumers.restart_after=\"200ms\"",
];

/// A worker stopped (SIGSTOP) for 3 s with jobs in hand: the library, its heartbeat silent,
/// runs them again after reaper.stale_after (1 s); thawed, the first worker finishes its
/// copies too. The proof holds (the library's rescue explains each second run), and each
/// frozen job was out of reach for less than the freeze.
async fn a_frozen_workers_jobs_run_again_and_twice(library: &Library) {
    let (_copy, dir) = example(library.name);
    let design = custom(&dir);
    let frozen = [
        &BUSY[..],
        &[
            "phases.0.duration=\"5s\"",
            "phases.0.faults=[{ kind = \"freeze_workers\", after = \"1s\", for = \"3s\" }]",
            "reaper.stale_after=\"1s\"",
        ],
    ]
    .concat();
    let (outcome, _dir) = run_plan(&plan(SMALL, &sets(&design, &frozen)), false).await;
    let s = &outcome.results.summary;
    let jobs = &s.faults.frozen_jobs;
    assert!(!jobs.is_empty(), "{:?}", s.faults.events);
    for job in jobs {
        assert!(
            job.unavailable_for_s.is_some_and(|t| t < 3.0),
            "{job:?} was not run again during the freeze"
        );
    }
    assert_nothing_lost(s);
    let x = &s.accounting.executions;
    assert!(x.repeated_successes >= 1, "{x:?}");
    assert_eq!(x.unexplained_executions, 0, "{x:?}");
}

/// The run's own server restarted mid-load: the library's workers reconnect or die and are
/// started again, and every job still ends done.
async fn a_server_restart_loses_nothing(library: &Library) {
    let (_copy, dir) = example(library.name);
    let design = custom(&dir);
    let restarted = [
        &BUSY[..],
        &[
            "phases.0.duration=\"6s\"",
            "database.settings.fsync=off",
            "phases.0.faults=[{ kind = \"restart_server\", after = \"2s\", down_for = \"1s\", mode = \"immediate\" }]",
            "reaper.stale_after=\"1s\"",
        ],
    ]
    .concat();
    let (outcome, _dir) = run_plan(&local_plan(SMALL, &sets(&design, &restarted)), false).await;
    let s = &outcome.results.summary;
    assert_eq!(s.faults.server_restarts, 1, "{:?}", s.faults.events);
    assert!(
        outcome
            .results
            .timeline
            .iter()
            .any(|r| r.second > 4 && r.completed > 0),
        "no job completed after the restart"
    );
    assert_nothing_lost(s);
}

/// A waiting job deleted from the library's table during the run is named lost.
async fn a_job_deleted_behind_its_back_is_named_lost(library: &'static Library) {
    let (_copy, dir) = example(library.name);
    let design = custom(&dir);
    let database = format!("dbq_library_lost_{}", library.name.replace('-', "_"));
    let url = database_of_its_own(&database).await;
    // One worker and a prefill: a backlog waits while the load starts.
    let p = plan_on(
        &url,
        SMALL,
        &sets(
            &design,
            &[
                "producers.rate=20",
                "producers.prefill=100",
                "consumers.count=1",
                "consumers.handler.duration.fixed=\"20ms\"",
                "phases.0.duration=\"3s\"",
            ],
        ),
    );
    let deleter = tokio::spawn(delete_one_waiting_job(url, library));
    let (outcome, _dir) = run_plan(&p, false).await;
    let deleted = deleter.await.unwrap();
    let proof = &outcome.results.summary.accounting;
    assert!(!proof.ok);
    assert_eq!(proof.lost_total, 1, "{}", proof.verdict);
    assert_eq!(proof.lost[0].id, deleted);
    assert_eq!(proof.lost[0].table, "missing");
    assert!(
        proof.verdict.contains(&format!("id {deleted}")),
        "{}",
        proof.verdict
    );
    drop_database(&database).await;
}

/// Deletes one of the library's waiting jobs in the run's schema (once the run made it).
async fn delete_one_waiting_job(url: String, library: &'static Library) -> i64 {
    let mut conn = PgConnection::connect(&url).await.unwrap();
    let mut last_error = String::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        match sqlx::query_scalar::<_, i64>(library.delete_waiting)
            .fetch_optional(&mut conn)
            .await
        {
            Ok(Some(id)) => return id,
            Ok(None) => {}
            Err(e) => last_error = e.to_string(),
        }
        let schema: Option<String> = sqlx::query_scalar(
            "SELECT table_schema::text FROM information_schema.tables WHERE table_name = $1",
        )
        .bind(library.table)
        .fetch_optional(&mut conn)
        .await
        .unwrap();
        if let Some(schema) = schema {
            sqlx::query(sqlx::AssertSqlSafe(format!("SET search_path = {schema}")))
                .execute(&mut conn)
                .await
                .unwrap();
        }
    }
    panic!("found no waiting job to delete within 10 s: {last_error}");
}

/// examples/<library>/schema.sql is the pinned library's own schema, verbatim: after its
/// header (up to the first blank line), and before dbq-bench's own reading of it, if any.
fn carries_the_installed_librarys_schema(library: &Library) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let server: sqlx::postgres::PgConnectOptions = shared_url().parse().unwrap();
    let program = match library.name == GRAPHILE_WORKER.name {
        true => graphile_worker_binary(),
        false => library_python(),
    };
    let out = std::process::Command::new(program)
        .args(library.installed_schema)
        .current_dir(examples.join(library.name))
        .env("PGHOST", server.get_host())
        .env("PGPORT", server.get_port().to_string())
        .env("PGUSER", server.get_username())
        .env("PGDATABASE", server.get_database().unwrap_or("postgres"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let installed = String::from_utf8_lossy(&out.stdout);
    let example = std::fs::read_to_string(examples.join(library.name).join("schema.sql")).unwrap();
    let (_header, rest) = example.split_once("\n\n").unwrap();
    let verbatim = rest
        .split_once("\n-- dbq-bench: below this line")
        .map_or(rest, |(verbatim, _)| verbatim);
    assert_eq!(
        verbatim, installed,
        "{}/schema.sql is not the installed library's",
        library.name
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn procrastinate_works_the_queue_open_loop_and_nothing_is_lost() {
    works_the_queue_and_nothing_is_lost(&PROCRASTINATE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_procrastinate_workers_job_is_rescued_or_named_stuck() {
    a_killed_workers_job_is_rescued_or_named_stuck(&PROCRASTINATE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_deleted_behind_procrastinates_back_is_named_lost() {
    a_job_deleted_behind_its_back_is_named_lost(&PROCRASTINATE).await;
}

#[test]
fn the_procrastinate_example_carries_the_installed_librarys_schema() {
    carries_the_installed_librarys_schema(&PROCRASTINATE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgqueuer_works_the_queue_open_loop_and_nothing_is_lost() {
    works_the_queue_and_nothing_is_lost(&PGQUEUER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_pgqueuer_workers_job_is_rescued_or_named_stuck() {
    a_killed_workers_job_is_rescued_or_named_stuck(&PGQUEUER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_deleted_behind_pgqueuers_back_is_named_lost() {
    a_job_deleted_behind_its_back_is_named_lost(&PGQUEUER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_procrastinate_workers_jobs_run_again_and_twice() {
    a_frozen_workers_jobs_run_again_and_twice(&PROCRASTINATE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_pgqueuer_workers_jobs_run_again_and_twice() {
    a_frozen_workers_jobs_run_again_and_twice(&PGQUEUER).await;
}

/// pgqueuer's workers die with their connection; procrastinate's reconnect (seen by hand:
/// one library is enough to exercise the restart path on library workers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgqueuer_loses_nothing_to_a_server_restart() {
    a_server_restart_loses_nothing(&PGQUEUER).await;
}

#[test]
fn the_pgqueuer_example_carries_the_installed_librarys_schema() {
    carries_the_installed_librarys_schema(&PGQUEUER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chancy_works_the_queue_open_loop_and_nothing_is_lost() {
    works_the_queue_and_nothing_is_lost(&CHANCY).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_chancy_workers_job_is_rescued_or_named_stuck() {
    a_killed_workers_job_is_rescued_or_named_stuck(&CHANCY).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_deleted_behind_chancys_back_is_named_lost() {
    a_job_deleted_behind_its_back_is_named_lost(&CHANCY).await;
}

#[test]
fn the_chancy_example_carries_the_schema_its_migrations_make() {
    carries_the_installed_librarys_schema(&CHANCY);
}

/// dramatiq-pg (threaded: the blocking client) works the queue with a prefetch of 100, and
/// nothing is lost; what it runs twice by itself, with no fault (its lock released before
/// its acknowledgement commits), is named job by job, and its hello is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dramatiq_pg_works_the_queue_and_every_repeat_is_named() {
    let python = library_python();
    let (_copy, dir) = example_copy(
        DRAMATIQ_PG.name,
        &["env", "DRAMATIQ_PG_PREFETCH=100", &python, "worker.py"],
    );
    let design = custom(&dir);
    let p = plan(
        SMALL,
        &sets(
            &design,
            &[
                "producers.rate=100",
                "producers.prefill=20",
                "consumers.handler.error_rate=0.05",
                "queue.backoff.base=\"100ms\"",
            ],
        ),
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    let a = &s.accounting;
    assert_eq!(a.lost_total, 0, "{}", a.verdict);
    assert!(s.jobs.enqueued > 150, "{:?}", s.jobs);
    assert!(s.faults.handler_errors > 0, "{:?}", s.faults);
    let x = &a.executions;
    assert_eq!(
        x.unexplained_executions == 0,
        x.unexplained_jobs.is_empty(),
        "{x:?}"
    );
    for job in x.unexplained_jobs.iter().take(5) {
        assert!(a.verdict.contains(&job.to_string()), "{}", a.verdict);
    }
    let said = &s.library_workers;
    assert!(
        said.iter().all(|w| w
            .library
            .as_deref()
            .is_some_and(|l| l.starts_with("dramatiq-pg 0.12.0"))
            && w.settings["prefetch"] == "100"),
        "{said:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphile_worker_works_the_queue_open_loop_and_nothing_is_lost() {
    works_the_queue_and_nothing_is_lost(&GRAPHILE_WORKER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_graphile_worker_workers_job_is_rescued_or_named_stuck() {
    a_killed_workers_job_is_rescued_or_named_stuck(&GRAPHILE_WORKER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_deleted_behind_graphile_workers_back_is_named_lost() {
    a_job_deleted_behind_its_back_is_named_lost(&GRAPHILE_WORKER).await;
}

#[test]
fn the_graphile_worker_example_carries_the_installed_librarys_schema() {
    carries_the_installed_librarys_schema(&GRAPHILE_WORKER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_deleted_behind_dramatiq_pgs_back_is_named_lost() {
    a_job_deleted_behind_its_back_is_named_lost(&DRAMATIQ_PG).await;
}

#[test]
fn the_dramatiq_pg_example_carries_the_installed_librarys_schema() {
    carries_the_installed_librarys_schema(&DRAMATIQ_PG);
}

/// `dbq-bench run` with a design whose worker command is `program`: its exit code and
/// stderr.
fn run_with_worker(program: &[&str]) -> (i32, String) {
    let (copy, dir) = example_copy("procrastinate", program);
    let design = std::path::Path::new(&dir).join("design.toml");
    let text = std::fs::read_to_string(&design).unwrap();
    std::fs::write(&design, format!("{text}connect_timeout = \"2s\"\n")).unwrap();
    run_design(&copy, &dir)
}

/// `dbq-bench run` of smoke.toml on the shared server with the design in `dir` (in `copy`):
/// its exit code and stderr.
fn run_design(copy: &tempfile::TempDir, dir: &str) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args([
            "run",
            "scenarios/smoke.toml",
            "--db",
            "url",
            "--database-url",
            shared_url(),
            "--set",
            "queue.variant=custom",
            "--set",
            &format!("queue.dir={dir}"),
            "--out",
        ])
        .arg(copy.path().join("results"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// No process whose command line holds `marker` is running.
fn none_running(marker: &str) -> bool {
    let out = std::process::Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .unwrap();
    out.stdout.is_empty()
}

#[test]
fn a_worker_that_never_connects_speaks_garbage_or_exits_stops_the_run_in_one_line() {
    let silent = "import time; time.sleep(60)  # dbq-silent-worker";
    let garbage = "import os, socket, time  # dbq-garbage-worker\n\
                   s = socket.socket(socket.AF_UNIX); s.connect(os.environ['DBQ_BENCH_SOCKET'])\n\
                   s.sendall(b'hello there\\n'); time.sleep(60)";
    let exits = "import sys; print('ModuleNotFoundError: no module named procrastinate', file=sys.stderr); sys.exit(1)";
    // A helper process of its own (as Python's multiprocessing starts) goes with it.
    let leaves_a_child = "import subprocess, sys  # dbq-parent-worker\n\
                          subprocess.Popen(['python3', '-c', 'import time; time.sleep(60)  # dbq-orphaned-helper'])\n\
                          sys.exit(3)";
    let cases = [
        (
            silent,
            "dbq-silent-worker",
            "did not connect to $DBQ_BENCH_SOCKET within 2s",
        ),
        (
            garbage,
            "dbq-garbage-worker",
            "sent a line that is not protocol 1",
        ),
        (
            exits,
            "no module named procrastinate",
            "exited (exit status 1) before it connected to $DBQ_BENCH_SOCKET (its last line: ModuleNotFoundError: no module named procrastinate)",
        ),
        (
            leaves_a_child,
            "dbq-orphaned-helper",
            "exited (exit status 3) before it connected to $DBQ_BENCH_SOCKET",
        ),
    ];
    for (program, marker, expected) in cases {
        let (code, stderr) = run_with_worker(&["python3", "-c", program]);
        assert_ne!(code, 0, "{stderr}");
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("error") || l.contains(expected))
            .collect();
        assert_eq!(lines.len(), 1, "{expected}: {stderr}");
        assert!(lines[0].contains(expected), "{stderr}");
        assert!(lines[0].contains("worker [python3 -c"), "{stderr}");
        assert!(none_running(marker), "a worker was left running: {marker}");
    }
}

/// A statement of the harness's own workers beside `[worker]` is refused before the load, in
/// one line naming the file.
#[test]
fn a_claim_statement_beside_a_library_s_workers_is_refused_in_one_line() {
    let (copy, dir) = example("procrastinate");
    let claim = Path::new(&dir).join("claim.sql");
    std::fs::write(
        &claim,
        "SELECT id, 'x' AS type, args AS payload FROM procrastinate_jobs",
    )
    .unwrap();
    let (code, stderr) = run_design(&copy, &dir);
    assert_eq!(code, 2, "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(
        errors[0].contains(&format!(
            "{}: is a statement of the harness's own workers, but design.toml declares [worker]",
            claim.display()
        )),
        "{stderr}"
    );
}

/// A copy of tests/it/toyqueue (a queue library of a few lines, threaded: the protocol's
/// blocking client) whose slot 0 misbehaves as `misbehaves` says, with examples/python where
/// its glue looks for it; returns the copy and the design's directory in it.
fn toyqueue(misbehaves: &str) -> (tempfile::TempDir, String) {
    let root = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = root.path().join("tests/it/toyqueue");
    copy_files(&source.join("tests/it/toyqueue"), &design);
    copy_files(
        &source.join("examples/python"),
        &root.path().join("examples/python"),
    );
    let toml = design.join("design.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    let told = format!("command = [\"env\", \"TOYQUEUE_MISBEHAVES={misbehaves}\", ");
    std::fs::write(&toml, text.replace("command = [", &told)).unwrap();
    (root, design.display().to_string())
}

/// A library that runs one job twice, the same attempt, with no fault (as dramatiq-pg was
/// seen to): the job is named among the repeated runs no crash, rollback or reap explains,
/// and the proof fails; the hello's library and settings are in the results.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_a_library_runs_twice_with_no_fault_is_named() {
    library_python();
    let (_copy, dir) = toyqueue("twice");
    let p = plan(
        SMALL,
        &sets(&custom(&dir), &["consumers.handler.error_rate=0"]),
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    let x = &s.accounting.executions;
    assert_eq!(x.unexplained_jobs.len(), 1, "{}", s.accounting.verdict);
    let job = x.unexplained_jobs[0];
    assert_eq!(x.repeated_jobs, [job], "{x:?}");
    assert_eq!(x.repeated_successes, 1, "{x:?}");
    assert!(!s.accounting.ok);
    assert!(
        s.accounting.verdict.contains(&format!(
            "that no crash, rollback or reap explains (jobs {job})"
        )),
        "{}",
        s.accounting.verdict
    );
    assert_eq!(s.accounting.lost_total, 0, "{}", s.accounting.verdict);
    let slot0 = s
        .library_workers
        .iter()
        .find(|w| w.slots.contains(&0))
        .expect("slot 0 said hello");
    assert_eq!(slot0.library.as_deref(), Some("toyqueue 0"));
    assert_eq!(slot0.settings["misbehaves"], "twice", "{slot0:?}");
    assert_eq!(
        slot0.settings["DBQ_BENCH_POLL_INTERVAL_S"], "0.02",
        "{slot0:?}"
    );
}

/// A library that leaves a success unrecorded (the handler returned, the job went back to
/// its queue): "unrecorded success", not lost, and the proof fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_success_a_library_never_recorded_is_an_unrecorded_success_not_a_loss() {
    library_python();
    let (_copy, dir) = toyqueue("unrecorded");
    let p = plan(
        SMALL,
        &sets(
            &custom(&dir),
            &["consumers.handler.error_rate=0", "drain.timeout=\"3s\""],
        ),
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    let a = &s.accounting;
    assert_eq!(a.unrecorded_success_count, 1, "{}", a.verdict);
    assert_eq!(a.lost_total, 0, "{}", a.verdict);
    assert_eq!(
        a.unrecorded_successes[0].table, "pending",
        "{:?}",
        a.unrecorded_successes
    );
    assert!(!a.ok && !a.sound, "{}", a.verdict);
    assert!(
        a.verdict.contains("1 unrecorded success(es)")
            && a.verdict.contains("back in the queue and will run again"),
        "{}",
        a.verdict
    );
    assert_eq!(s.jobs.unrecorded_successes, 1, "{:?}", s.jobs);
}
