//! One test per fault kind: the fault really happened (its counter and its effect are
//! visible) and no job was lost. Runs are short; nothing is asserted about speed.

use crate::support::{
    SMALL, assert_counts_add_up, fresh_queue, local_plan, maria_sql, plan, prove_again,
    rabbitmq_plan, redis_plan, run_plan, shared_url, sql,
};
use dbq_bench::backend::BackendError;
use dbq_bench::error::Failure;
use dbq_bench::report::Summary;
use dbq_bench::run::{RunOptions, RunOutcome, run};
use dbq_bench::scenario::Engine;
use sqlx::{AssertSqlSafe, Connection};
use tokio_util::sync::CancellationToken;

/// Every failure update that committed is counted, those whose commit reply was lost
/// included: the failed attempts (no reaps count as attempts here) are the table's
/// `sum(retry_count)`. Drops the kept schema.
async fn assert_failures_match_retry_counts(outcome: &RunOutcome) {
    let s = &outcome.results.summary;
    let queue = outcome.kept_queue.as_ref().expect("kept");
    let mut conn = sql(&**queue).await;
    let retries: i64 = sqlx::query_scalar("SELECT COALESCE(sum(retry_count), 0) FROM job_queue")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.ok();
    assert!(s.jobs.failed_attempts > 0, "{:?}", s.jobs);
    assert_eq!(retries as u64, s.jobs.failed_attempts, "{:?}", s.jobs);
    queue.drop_namespace().await.unwrap();
}

fn assert_nothing_lost(s: &Summary) {
    assert_counts_add_up(s);
    assert_eq!(
        s.jobs.lost, 0,
        "expected no lost job; the proof says: {}",
        s.accounting.verdict
    );
    assert!(
        s.accounting.ok,
        "expected the proof to pass; it says: {}",
        s.accounting.verdict
    );
    assert!(
        s.faults.duplicates_within_claim_mode,
        "expected every repeated run to be explained by a crash, rollback or reap; executions: {:?}",
        s.accounting.executions
    );
}

fn events<'a>(s: &'a Summary, kind: &str) -> Vec<&'a dbq_bench::report::faults::FaultEvent> {
    s.faults.events.iter().filter(|e| e.kind == kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_worker_tasks_roll_back_in_transaction_mode_and_need_no_reaper() {
    let p = plan(
        SMALL,
        &[
            "phases.0.duration=3s",
            "consumers.handler.duration.fixed=10ms",
            "consumers.restart_after=100ms",
            "reaper.interval=100ms",
            "reaper.stale_after=1ms",
            "phases.0.faults=[{ kind = \"crash_workers\", every = \"200ms\", at = \"mid_handler\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.faults.worker_crashes > 0, "{:?}", s.faults);
    assert!(!events(s, "crash_workers").is_empty());
    // A crash rolls the claim back by itself: the reaper, eager as it is, finds nothing.
    assert_eq!(s.faults.reaped, 0);
    assert!(s.faults.duplicate_executions > 0, "crashed jobs ran again");
    assert_nothing_lost(s);
}

/// Crashing workers in both claim modes, on the built-in designs that guard their completion
/// and on the custom examples (River's port, pgmq's): nothing is lost or completed twice; in
/// transaction mode a crash rolls the claim back, so nothing is ever reaped or redelivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_in_both_claim_modes_lose_nothing_on_guarded_and_custom_designs() {
    let river = format!(
        "queue.dir=\"{}\"",
        crate::support::scenario_dir("custom-river")
    );
    let pgmq = format!(
        "queue.dir=\"{}\"",
        crate::support::scenario_dir("custom-pgmq")
    );
    let vt = "queue.visibility_timeout=\"500ms\"";
    let designs: [&[&str]; 5] = [
        &["queue.variant=\"delete\""],
        &["queue.variant=\"archive\""],
        &["queue.variant=\"visibility_timeout\"", vt],
        &["queue.variant=\"custom\"", &river],
        &["queue.variant=\"custom\"", &pgmq, vt],
    ];
    for design in designs {
        for mode in ["in_transaction", "committed"] {
            let claim_mode = format!("consumers.claim_mode=\"{mode}\"");
            let sets = [
                "phases.0.duration=2s",
                "consumers.handler.duration.fixed=10ms",
                "consumers.restart_after=100ms",
                "reaper.interval=100ms",
                "reaper.stale_after=500ms",
                "phases.0.faults=[{ kind = \"crash_workers\", every = \"200ms\", at = \"mid_handler\" }]",
                &claim_mode,
            ];
            let (outcome, _dir) = run_plan(&plan(SMALL, &[design, &sets].concat()), false).await;
            let s = &outcome.results.summary;
            let case = format!("{design:?} {mode}");
            assert!(s.faults.worker_crashes > 0, "{case}: {:?}", s.faults);
            assert_nothing_lost(s);
            assert_eq!(
                s.jobs.duplicate_completions, 0,
                "{case}: {}",
                s.accounting.verdict
            );
            if mode == "in_transaction" {
                assert_eq!(s.faults.reaped, 0, "{case}: a crash rolls its claim back");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_worker_tasks_in_committed_mode_are_rescued_by_the_reaper() {
    let p = plan(
        SMALL,
        &[
            "phases.0.duration=3s",
            "consumers.claim_mode=committed",
            "consumers.handler.duration.fixed=10ms",
            "consumers.restart_after=100ms",
            "reaper.interval=100ms",
            "reaper.stale_after=300ms",
            "phases.0.faults=[{ kind = \"crash_workers\", every = \"250ms\", at = \"after_handler\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.faults.worker_crashes > 0);
    assert!(
        s.faults.reaped > 0,
        "committed claims of crashed workers wait for the reaper"
    );
    assert_nothing_lost(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_processes_are_really_killed_and_replaced() {
    let p = plan(
        SMALL,
        &[
            "phases.0.duration=4s",
            "consumers.processes=true",
            "consumers.claim_mode=committed",
            // Workers are busy about 80% of the time, so a kill almost always finds one
            // holding a job (busy workers are chosen first).
            "producers.rate=80",
            "consumers.handler.duration.fixed=40ms",
            "consumers.restart_after=200ms",
            "reaper.interval=200ms",
            "reaper.stale_after=500ms",
            "phases.0.faults=[{ kind = \"kill_workers\", every = \"700ms\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    let kills = events(s, "kill_workers");
    assert!(
        !kills.is_empty() && s.faults.worker_crashes > 0,
        "{:?}",
        s.faults
    );
    // Every pid the fault killed is gone.
    let pids: Vec<i32> = kills
        .iter()
        .flat_map(|e| {
            e.detail
                .split("pid ")
                .skip(1)
                .filter_map(|p| p.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        })
        .collect();
    assert!(!pids.is_empty(), "{kills:?}");
    for pid in pids {
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
        assert!(!alive, "killed worker process {pid} still exists");
    }
    assert!(s.faults.reaped > 0);
    assert_nothing_lost(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_worker_holds_its_job_until_thawed_or_until_the_server_times_it_out() {
    let frozen = |timeout: &str| {
        let sets = [
            "phases.0.duration=5s".to_string(),
            // Busy about 87% of the time: the freeze almost always catches a job in hand.
            "producers.rate=35".into(),
            "consumers.processes=true".into(),
            "consumers.count=4".into(),
            "consumers.handler.duration.fixed=100ms".into(),
            format!("database.settings.idle_in_transaction_session_timeout={timeout}"),
            "phases.0.faults=[{ kind = \"freeze_workers\", after = \"1s\", for = \"3s\" }]".into(),
        ];
        plan(SMALL, &sets.iter().map(String::as_str).collect::<Vec<_>>())
    };
    // Without a server timeout, the frozen worker's transaction keeps its job locked.
    let (outcome, _dir) = run_plan(&frozen("0"), false).await;
    let s = &outcome.results.summary;
    let freeze = events(s, "freeze_workers")[0];
    assert_eq!(freeze.count, 1, "expected one frozen worker: {freeze:?}");
    let job = &s.faults.frozen_jobs[0];
    assert!(
        job.unavailable_for_s.is_some(),
        "expected the freeze ({}) to catch a job and the report to say how long it was unavailable; got {job:?}",
        freeze.detail
    );
    assert!(
        !s.errors.keys().any(|e| e.contains("idle-in-transaction")),
        "expected no idle-in-transaction timeout without a server timeout; errors: {:?}",
        s.errors
    );
    assert_nothing_lost(s);
    // With idle_in_transaction_session_timeout the server ends the frozen session: its
    // transaction rolls back and another worker takes the job.
    let (outcome, _dir) = run_plan(&frozen("500ms"), false).await;
    let s = &outcome.results.summary;
    let freeze = events(s, "freeze_workers")[0];
    assert!(
        s.errors
            .keys()
            .any(|e| e.contains("idle-in-transaction timeout")),
        "expected the frozen worker ({}) to see an idle-in-transaction timeout; errors: {:?}",
        freeze.detail,
        s.errors
    );
    assert!(
        s.faults.duplicate_executions > 0,
        "expected the job of the frozen worker ({}) to run again elsewhere; faults: {:?}",
        freeze.detail,
        s.faults.frozen_jobs
    );
    assert_nothing_lost(s);
}

/// A worker frozen past the stale threshold in committed mode: its job is taken back (the
/// reaper, or the visibility timeout) and finished by another worker, and when it thaws its
/// completion comes late. A design that guards its completion (delete, visibility_timeout)
/// finishes nothing: the run passes with the stale completion counted. The seed writes
/// `done` a second time: its audit catches the double completion and the proof fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thawed_workers_late_completion_is_stale_where_guarded_and_a_duplicate_on_the_seed() {
    let frozen = |sets: &[&str]| {
        let mut all = vec![
            "phases.0.duration=5s",
            // Busy about 87% of the time; the freeze looks for a worker with a job in hand.
            "producers.rate=35",
            "consumers.processes=true",
            "consumers.count=4",
            "consumers.handler.duration.fixed=100ms",
            "consumers.claim_mode=\"committed\"",
            "reaper.interval=\"200ms\"",
            "reaper.stale_after=\"1s\"",
            "phases.0.faults=[{ kind = \"freeze_workers\", after = \"1s\", for = \"3s\" }]",
        ];
        all.extend(sets);
        plan(SMALL, &all)
    };
    let river = format!(
        "queue.dir=\"{}\"",
        crate::support::scenario_dir("custom-river")
    );
    let guarded: [&[&str]; 3] = [
        &["queue.variant=\"custom\"", &river],
        &["queue.variant=\"delete\""],
        &[
            "queue.variant=\"visibility_timeout\"",
            "queue.visibility_timeout=\"1s\"",
        ],
    ];
    for sets in guarded {
        let (outcome, _dir) = run_plan(&frozen(sets), false).await;
        let s = &outcome.results.summary;
        let held = &s.faults.frozen_jobs[0];
        assert!(held.unavailable_for_s.is_some(), "{sets:?}: {held:?}");
        assert_nothing_lost(s);
        assert!(
            s.faults.stale_outcomes >= 1 && s.jobs.duplicate_completions == 0,
            "{sets:?}: expected the thawed worker's completion to be stale; faults: {:?}; proof: {}",
            s.faults,
            s.accounting.verdict
        );
        assert!(
            s.accounting.verdict.contains("stale completion"),
            "{}",
            s.accounting.verdict
        );
    }
    // In transaction mode the frozen worker keeps its claim locked: nothing is taken back,
    // its completion takes effect when it thaws.
    let held = [
        "queue.variant=\"custom\"",
        &river,
        "consumers.claim_mode=\"in_transaction\"",
    ];
    let (outcome, _dir) = run_plan(&frozen(&held), false).await;
    let s = &outcome.results.summary;
    assert_nothing_lost(s);
    assert_eq!(
        (
            s.faults.reaped,
            s.faults.stale_outcomes,
            s.jobs.duplicate_completions
        ),
        (0, 0, 0),
        "{:?}",
        s.faults
    );
    let (outcome, _dir) = run_plan(&frozen(&[]), false).await;
    let s = &outcome.results.summary;
    assert!(
        !s.accounting.ok && s.accounting.table.duplicate_completions >= Some(1),
        "expected the seed's second `done` to be caught by its audit; proof: {}; frozen: {:?}; faults: {:?}",
        s.accounting.verdict,
        s.faults.frozen_jobs,
        s.faults.events
    );
    assert_eq!(
        s.faults.stale_outcomes, 0,
        "the seed's completion is never stale"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_backends_are_counted_and_their_work_is_redone() {
    let p = plan(
        SMALL,
        &[
            "phases.0.duration=3s",
            "consumers.handler.error_rate=0.3",
            "phases.0.faults=[{ kind = \"kill_backends\", target = \"all\", every = \"300ms\", count = 2 }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert_failures_match_retry_counts(&outcome).await;
    assert!(s.faults.backends_killed > 0, "{:?}", s.faults.events);
    assert!(
        s.errors.keys().any(|e| e.contains("administrator command")),
        "{:?}",
        s.errors
    );
    assert_nothing_lost(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_xmin_hold_keeps_vacuum_from_removing_dead_tuples() {
    // A database of its own: the other tests' open transactions on the shared server (frozen
    // workers, readers) would hold the horizon back too, and the "after" VACUUM would find
    // nothing it may remove.
    let url = crate::support::database_of_its_own("dbq_test_xmin_hold").await;
    // The reader's snapshot, taken while the XID was held, outlives the hold by up to its
    // 100 ms scan interval: as any statement that started before the release does, it keeps
    // the horizon where the hold left it. The "after" VACUUM must wait for it.
    let p = crate::support::plan_on(
        &url,
        SMALL,
        &[
            "producers.rate=300",
            "consumers.handler.duration.fixed=0ms",
            "phases.0.faults=[{ kind = \"idle_in_transaction\" }, { kind = \"active_readers\", count = 1 }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert_eq!(events(s, "idle_in_transaction")[0].count, 1);
    let probe = |label: &str| {
        s.faults
            .table_probes
            .iter()
            .find(|p| p.label.starts_with(label))
            .unwrap()
            .clone()
    };
    let (during, after) = (probe("during"), probe("after"));
    // Every claim and completion left a dead row version that VACUUM could not remove while
    // the XID was held; once released, VACUUM removes them.
    assert!(during.dead_tuples > 100, "{during:?}");
    assert!(
        after.dead_tuples < during.dead_tuples / 10,
        "{during:?} then {after:?}"
    );
    assert_nothing_lost(s);
    crate::support::drop_database("dbq_test_xmin_hold").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_and_held_connections_run_for_the_phase() {
    let p = plan(
        SMALL,
        &[
            "phases.0.faults=[{ kind = \"active_readers\", count = 2 }, { kind = \"pool_exhaustion\", connections = 10 }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    let readers = events(s, "active_readers")[0];
    assert_eq!(readers.count, 2);
    let scans: u64 = readers
        .detail
        .split(", ")
        .nth(1)
        .and_then(|d| d.split(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(scans > 0, "{}", readers.detail);
    assert_eq!(events(s, "pool_exhaustion")[0].count, 10);
    assert_nothing_lost(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_is_reconnected_to_without_losing_jobs() {
    let p = local_plan(
        SMALL,
        &[
            "phases.0.duration=6s",
            "database.settings.fsync=off",
            "phases.0.faults=[{ kind = \"restart_server\", after = \"2s\", down_for = \"1s\", mode = \"immediate\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    crate::support::assert_restart_survived(&outcome);
    assert_nothing_lost(&outcome.results.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_server_is_refused_on_a_server_the_run_does_not_own() {
    let p = plan(
        SMALL,
        &["phases.0.faults=[{ kind = \"restart_server\", after = \"1s\" }]"],
    );
    let dir = tempfile::tempdir().unwrap();
    let opts = RunOptions {
        out_dir: Some(dir.path().into()),
        ..Default::default()
    };
    match run(&p, &opts, CancellationToken::new()).await {
        Err(Failure::Input(e)) => {
            assert_eq!(e.key.as_deref(), Some("phases[0].faults[0]"));
            assert!(e.reason.contains("container or local"), "{e}");
        }
        Err(other) => panic!("unexpected: {other}"),
        Ok(_) => panic!("a url server was restarted"),
    }
    let _ = shared_url();
}

/// Poison jobs (always failing) and crashing jobs (always crashing their worker), at most
/// two attempts each, lost runs counted as attempts (`fix`) or not.
fn crash_loop_sets(fix: bool) -> Vec<String> {
    vec![
        "phases.0.duration=2s".to_string(),
        "producers.rate=100".into(),
        "producers.poison_fraction=0.05".into(),
        "producers.crash_fraction=0.03".into(),
        "queue.max_retries=2".into(),
        "consumers.restart_after=50ms".into(),
        "reaper.interval=100ms".into(),
        "reaper.stale_after=300ms".into(),
        format!("reaper.count_as_attempt={fix}"),
        "drain.timeout=4s".into(),
    ]
}

/// With lost runs counted as attempts, poison and crashing jobs both end in the dead
/// letters after at most max_retries runs, and every count adds up.
fn assert_crash_loops_dead_lettered(s: &Summary) {
    assert!(
        s.faults.poison > 0 && s.faults.crashing_jobs > 0,
        "{:?}",
        s.faults
    );
    assert!(
        s.faults.worker_crashes > 0 && s.faults.reaped > 0,
        "{:?}",
        s.faults
    );
    assert_eq!(
        s.faults.dead_lettered,
        s.faults.poison + s.faults.crashing_jobs,
        "{}",
        s.accounting.verdict
    );
    assert_eq!(s.jobs.dead_lettered, s.faults.dead_lettered, "{:?}", s.jobs);
    assert_eq!(
        s.faults.attempts.keys().max(),
        Some(&2),
        "at most max_retries attempts: {:?}",
        s.faults.attempts
    );
    assert_nothing_lost(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_jobs_dead_letter_and_crashing_jobs_need_the_reaper_fix() {
    let with = |fix: bool| {
        let mut sets = crash_loop_sets(fix);
        sets.push("consumers.claim_mode=committed".into());
        plan(SMALL, &sets.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (outcome, _dir) = run_plan(&with(true), false).await;
    assert_crash_loops_dead_lettered(&outcome.results.summary);
    // The seed's reaper does not count attempts: a crashing job is retried until the drain
    // gives up, and it is reported unfinished (not lost).
    let (outcome, _dir) = run_plan(&with(false), false).await;
    let s = &outcome.results.summary;
    assert!(s.run.drain_timed_out);
    assert!(s.jobs.unfinished > 0 && s.jobs.lost == 0, "{:?}", s.jobs);
    assert!(
        s.faults.attempts.keys().max() > Some(&2),
        "{:?}",
        s.faults.attempts
    );
}

/// The brokers rescue a crashed worker's jobs by themselves (Redis through the harness's
/// XAUTOCLAIM reaper, RabbitMQ by redelivering): with lost runs counted as attempts, a job
/// that crashes its worker every time reaches the dead letters there too (RabbitMQ reads
/// its quorum queue's delivery count).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashing_jobs_reach_the_dead_letters_on_the_brokers_too() {
    let sets = crash_loop_sets(true);
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    for p in [redis_plan(SMALL, &sets), rabbitmq_plan(SMALL, &sets)] {
        let (outcome, _dir) = run_plan(&p, false).await;
        assert_crash_loops_dead_lettered(&outcome.results.summary);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backoff_respects_its_cap_and_jitter_spreads_retries() {
    let p = plan(
        SMALL,
        &[
            "queue.backoff={ base = \"1s\", factor = 100.0, cap = \"2s\", jitter = \"full\" }",
            "queue.max_retries=100",
        ],
    );
    let queue = fresh_queue(Engine::Postgres, &p, false).await;
    let mut conn = sql(&*queue).await;
    let ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO job_queue (type, payload) SELECT 'email', '{}' FROM generate_series(1, 40) RETURNING id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    // Two failures each: the second backoff, 1 s · 100¹ = 100 s, is capped at 2 s, then full
    // jitter draws a delay in [0, 2 s).
    let mut link = queue.connect("test").await.unwrap();
    for _ in 0..2 {
        for id in &ids {
            link.fail(*id, "test").await.unwrap();
        }
    }
    link.close().await;
    let delays: Vec<f64> =
        sqlx::query_scalar("SELECT extract(epoch FROM next_run_at - now())::float8 FROM job_queue")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert!(delays.iter().all(|d| *d <= 2.0), "{delays:?}");
    let distinct: std::collections::BTreeSet<i64> =
        delays.iter().map(|d| (d * 1000.0) as i64).collect();
    assert!(
        distinct.len() > 20,
        "full jitter spreads the delays: {delays:?}"
    );
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_never_runs_a_rolled_back_job_and_pays_each_order_once() {
    let p = plan(
        SMALL,
        &["producers.outbox={ enabled = true, rollback_rate = 0.2 }"],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    let o = s.accounting.outbox.clone().expect("outbox proof");
    assert!(o.ok, "{o:?}");
    assert!(o.rolled_back > 0 && o.rolled_back_jobs_found.is_empty());
    assert_eq!(o.paid_orders as u64, s.jobs.enqueued);
    assert_eq!(s.faults.rolled_back_enqueues, o.rolled_back);
    assert_nothing_lost(s);

    // The proof can fail: a job inserted for an unpaid order breaks the outbox promise.
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    sqlx::query("INSERT INTO job_queue (type, payload) VALUES ('email', '{\"k\":\"forged\",\"order\":\"999999\"}')")
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("INSERT INTO orders (id, status) VALUES (999999, 'new')")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.ok();
    let opts = dbq_bench::accounting::ProofOptions {
        audit: true,
        drained: true,
        outbox: true,
        reported_by_library: false,
        at_least_once: false,
    };
    let proof = prove_again(&*queue, &outcome.ledger, opts).await;
    let o = proof.outbox.unwrap();
    assert!(
        !o.ok && o.bad_orders.iter().any(|(id, _, _)| *id == 999_999),
        "{o:?}"
    );
    queue.drop_namespace().await.unwrap();
}

/// A test's own connection to a queue's namespace, on either engine.
enum Raw {
    Pg(sqlx::postgres::PgConnection),
    Maria(sqlx::mysql::MySqlConnection),
}

impl Raw {
    async fn to(engine: Engine, queue: &dyn dbq_bench::backend::Backend) -> Raw {
        match engine {
            Engine::Postgres => Raw::Pg(sql(queue).await),
            Engine::Mariadb => Raw::Maria(maria_sql(queue).await),
            other => unreachable!("{} has no SQL", other.label()),
        }
    }

    /// Statements without results, as one simple query; the error as the harness sees it.
    async fn execute(&mut self, text: &str) -> Result<(), BackendError> {
        let text = AssertSqlSafe(text.to_string());
        match self {
            Raw::Pg(c) => sqlx::raw_sql(text).execute(c).await.map(drop),
            Raw::Maria(c) => sqlx::raw_sql(text).execute(c).await.map(drop),
        }
        .map_err(BackendError::from)
    }

    async fn count(&mut self, query: &str, session: Option<i64>) -> i64 {
        match self {
            Raw::Pg(c) => {
                let q = sqlx::query_scalar(AssertSqlSafe(query.to_string()));
                let q = if let Some(s) = session { q.bind(s) } else { q };
                q.fetch_one(c).await.unwrap()
            }
            Raw::Maria(c) => {
                let q = sqlx::query_scalar(AssertSqlSafe(query.replace("$1", "?")));
                let q = if let Some(s) = session { q.bind(s) } else { q };
                q.fetch_one(c).await.unwrap()
            }
        }
    }

    async fn close(self) {
        match self {
            Raw::Pg(c) => c.close().await.ok(),
            Raw::Maria(c) => c.close().await.ok(),
        };
    }
}

/// A session killed just after its `COMMIT` ran, in the same message (as the worker's
/// `COMMIT; BEGIN`): the row holds, and the error the client gets is an unknown outcome for
/// the table to settle, never a rollback. Both engines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_right_after_its_commit_leaves_the_outcome_in_doubt() {
    let servers = [
        (
            Engine::Postgres,
            "SELECT pg_terminate_backend(pg_backend_pid())",
        ),
        (Engine::Mariadb, "KILL CONNECTION CONNECTION_ID()"),
    ];
    for (engine, kill) in servers {
        let queue = fresh_queue(engine, &plan(SMALL, &[]), false).await;
        let mut conn = Raw::to(engine, &*queue).await;
        conn.execute("CREATE TABLE probe (id INT)").await.unwrap();
        let message = format!("BEGIN; INSERT INTO probe VALUES (1); COMMIT; {kill}");
        let error = conn
            .execute(&message)
            .await
            .expect_err("the session was killed");
        assert!(error.outcome_unknown(), "{engine:?}: {error}");
        let mut check = Raw::to(engine, &*queue).await;
        let rows = check.count("SELECT count(*) FROM probe", None).await;
        assert_eq!(rows, 1, "{engine:?}: the commit before the kill holds");
        check.close().await;
        queue.drop_namespace().await.unwrap();
    }
}

/// A session the server ends for idling in a transaction (PostgreSQL's 25P03 FATAL,
/// MariaDB's `idle_transaction_timeout`) is a lost connection: the worker replaces it at
/// once instead of sending a ROLLBACK down a closed socket. Both engines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ended_by_the_idle_in_transaction_timeout_is_a_lost_connection() {
    let servers = [
        (
            Engine::Postgres,
            "SET idle_in_transaction_session_timeout = '100ms'",
            "SELECT pg_backend_pid()::bigint",
            "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
        ),
        (
            Engine::Mariadb,
            "SET SESSION idle_transaction_timeout = 1",
            "SELECT CAST(CONNECTION_ID() AS SIGNED)",
            "SELECT count(*) FROM information_schema.processlist WHERE id = $1",
        ),
    ];
    for (engine, timeout, own_id, alive) in servers {
        let queue = fresh_queue(engine, &plan(SMALL, &[]), false).await;
        let mut conn = Raw::to(engine, &*queue).await;
        let session = conn.count(own_id, None).await;
        conn.execute(timeout).await.unwrap();
        conn.execute("BEGIN").await.unwrap();
        // Wait until the server has ended the session, seen from another one.
        let mut watch = Raw::to(engine, &*queue).await;
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while watch.count(alive, Some(session)).await > 0 {
            assert!(
                std::time::Instant::now() < give_up,
                "{engine:?}: the server never ended the idle session ({timeout})"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let error = conn
            .execute("SELECT 1")
            .await
            .expect_err("the server ended the session");
        assert!(error.is_connection(), "{engine:?}: {error}");
        watch.close().await;
        queue.drop_namespace().await.unwrap();
    }
}

/// `for` holds the horizon past the end of the phase it starts in, through the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_horizon_held_for_a_time_outlasts_its_phase() {
    let p = plan(
        SMALL,
        &[
            "phases=[{ name = \"a\", duration = \"1s\", faults = [{ kind = \"idle_in_transaction\", for = \"2500ms\" }] }, { name = \"b\", duration = \"2s\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    let held = events(s, "idle_in_transaction");
    assert_eq!((held.len(), held[0].phase.as_str()), (1, "a"), "{held:?}");
    let length = held[0].until_s - held[0].at_s;
    assert!((2.4..3.0).contains(&length), "held {length} s: {held:?}");
    assert_nothing_lost(s);
}

/// `delay_vacuum` keeps autovacuum off the queue table (its reloptions say so while it
/// holds, as another session sees them), then runs one VACUUM and lets autovacuum back on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_vacuum_keeps_autovacuum_off_then_vacuums_once() {
    let p = plan(
        SMALL,
        &[
            "phases=[{ name = \"a\", duration = \"1s\", faults = [{ kind = \"delay_vacuum\", for = \"2s\" }] }, { name = \"b\", duration = \"2s\" }]",
        ],
    );
    // Every queue table of the shared server with autovacuum off, by schema, while it runs.
    let stop = CancellationToken::new();
    let watch = tokio::spawn({
        let stop = stop.clone();
        async move {
            let mut conn = sqlx::PgConnection::connect(shared_url()).await.unwrap();
            let mut seen = std::collections::BTreeSet::new();
            while !stop.is_cancelled() {
                let off: Vec<String> = sqlx::query_scalar(
                    "SELECT relnamespace::regnamespace::text FROM pg_class
                     WHERE relname = 'job_queue' AND 'autovacuum_enabled=off' = ANY(reloptions)",
                )
                .fetch_all(&mut conn)
                .await
                .unwrap();
                seen.extend(off);
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            seen
        }
    });
    let (outcome, _dir) = run_plan(&p, false).await;
    stop.cancel();
    let seen = watch.await.unwrap();
    let s = &outcome.results.summary;
    let schema = s.database.schema.clone();
    assert!(
        seen.contains(&schema),
        "{schema} not seen with autovacuum off: {seen:?}"
    );
    let delayed = events(s, "delay_vacuum");
    assert_eq!(
        (delayed.len(), delayed[0].phase.as_str()),
        (1, "a"),
        "{delayed:?}"
    );
    let detail = &delayed[0].detail;
    assert!(
        detail.starts_with("autovacuum kept off job_queue for 2 s; then one VACUUM (ANALYZE)")
            && detail.ends_with("; autovacuum back on"),
        "{detail}"
    );
    let length = delayed[0].until_s - delayed[0].at_s;
    assert!(
        (1.9..2.6).contains(&length),
        "kept off {length} s: {delayed:?}"
    );
    assert_nothing_lost(s);
}
