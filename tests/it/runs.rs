//! Whole runs against the shared server: concurrency, open-loop measurement, retries.

use crate::support::{SMALL, fresh_queue, plan, run_plan, shared_url, sql};
use dbq_bench::scenario::{ClaimMode, Engine};
use sqlx::Connection;
use sqlx::postgres::PgConnection;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_workers_never_complete_a_job_twice() {
    // A prefilled backlog plus a steady stream, 16 workers racing on the claim.
    let p = plan(
        SMALL,
        &[
            "consumers.count=16",
            "producers.prefill=3000",
            "producers.rate=400",
            "consumers.handler.duration.fixed=0ms",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    let a = &s.accounting;
    assert!(a.ok, "{}", a.verdict);
    assert!(s.jobs.enqueued >= 3000 + 700, "{:?}", s.jobs);
    assert_eq!(
        s.jobs.completed, s.jobs.enqueued,
        "every job completed exactly once"
    );
    assert_eq!(a.ledger.duplicate_completions, Some(0));
    // The database's own audit saw no job finish twice either.
    assert_eq!(a.table.duplicate_completions, Some(0));
    assert_eq!(s.jobs.lost, 0);
    assert_eq!(s.jobs.duplicate_completions, 0);
    // 16 workers really ran concurrently: more than one claim per job is impossible here,
    // and the claim histogram saw every job.
    assert_eq!(
        s.phases.iter().map(|p| p.jobs.claims).sum::<u64>(),
        s.jobs.enqueued
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_latency_counts_from_the_intended_time() {
    // One worker at 20 ms a job can finish at most 50 jobs/s; 100 jobs/s are offered for 2 s.
    // Job k is scheduled at k·10 ms but cannot be claimed before the k jobs ahead of it took
    // k·20 ms, so it waits at least k·10 ms: the median job (k≈100) ≥ 1 s, the last ≥ 1.99 s.
    // These are lower bounds set by the schedule, not speed expectations.
    let p = plan(
        SMALL,
        &[
            "producers.count=1",
            "producers.rate=100",
            "consumers.count=1",
            "consumers.poll_interval=5ms",
            "consumers.handler.duration.fixed=20ms",
        ],
    );
    let (outcome, dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.accounting.ok, "{}", s.accounting.verdict);
    let wait = &s.latency_ms.queue_wait;
    // Every scheduled job was sent, or counted as never sent when a loaded machine reached
    // the phase's end first.
    assert_eq!(wait.count + s.jobs.dropped, 200, "{:?}", s.jobs);
    assert!(wait.p50 >= 900.0, "queue_wait p50 {} ms", wait.p50);
    assert!(wait.max >= 1900.0, "queue_wait max {} ms", wait.max);
    assert!(s.latency_ms.end_to_end.max >= wait.max);
    // Consumers fell behind (at most 100 of the 200 jobs can finish inside the phase), and
    // the verdict says so.
    assert!(!s.verdict.consumers_kept_up, "{}", s.verdict.text);
    assert!(!s.verdict.kept_up);
    // Every job's schedule lag was recorded (open loop).
    assert_eq!(s.latency_ms.schedule_lag.count, 200);
    assert!(dir.path().join("latency.hlog").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_retry_with_backoff_and_dead_letter_as_the_table_says() {
    let p = plan(
        SMALL,
        &[
            "consumers.handler.error_rate=0.5",
            "queue.max_retries=2",
            "producers.rate=100",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert!(s.accounting.ok, "{}", s.accounting.verdict);
    assert!(
        s.jobs.failed_attempts > 0 && s.jobs.dead_lettered > 0,
        "{:?}",
        s.jobs
    );
    assert_eq!(s.jobs.completed + s.jobs.dead_lettered, s.jobs.enqueued);

    // The table agrees job by job: retry counts and final states.
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    let (done, dead, retries): (i64, i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE status = 'done'), count(*) FILTER (WHERE status = 'dead_letter'), \
         COALESCE(sum(retry_count), 0) FROM job_queue",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(done as u64, s.jobs.completed);
    assert_eq!(dead as u64, s.jobs.dead_lettered);
    assert_eq!(retries as u64, s.jobs.failed_attempts);
    // With max_retries = 2 a dead letter took exactly two failures.
    let bad: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM job_queue WHERE status = 'dead_letter' AND retry_count <> 2",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(bad, 0);
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_server_is_left_as_it_was() {
    let schemas = || async {
        let mut c = PgConnection::connect(shared_url()).await.unwrap();
        let v: Vec<String> = sqlx::query_scalar(
            "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'dbq_run_%'",
        )
        .fetch_all(&mut c)
        .await
        .unwrap();
        v
    };
    let p = plan(SMALL, &["phases.0.duration=1s"]);
    let (outcome, _dir) = run_plan(&p, false).await;
    let schema = outcome.results.summary.database.schema.clone();
    assert!(schema.starts_with("dbq_run_"));
    assert!(
        !schemas().await.contains(&schema),
        "schema {schema} was not dropped"
    );
    assert!(outcome.kept_queue.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_enqueues_as_fast_as_inserts_commit() {
    let p = plan(
        SMALL,
        &[
            "producers.rate=max",
            "phases.0.duration=1s",
            "consumers.count=8",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.accounting.ok, "{}", s.accounting.verdict);
    assert!(s.jobs.enqueued > 0);
    assert_eq!(
        s.throughput.offered_per_s, None,
        "closed loop has no offered rate"
    );
    // Closed loop has no schedule, so no schedule lag and no late jobs.
    assert_eq!(s.latency_ms.schedule_lag.count, 0);
    assert_eq!(s.jobs.sent_late, 0);
    assert_eq!(s.latency_ms.enqueue.count, s.jobs.enqueued);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_timeout_leaves_jobs_unfinished_not_lost() {
    // 200 jobs of 50 ms each for one worker: about 10 s of work, with 1 s to drain after the
    // 2 s phase. The queue cannot be empty when the drain gives up.
    let p = plan(
        SMALL,
        &[
            "producers.rate=100",
            "consumers.count=1",
            "consumers.handler.duration.fixed=50ms",
            "drain.timeout=1s",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(!s.complete);
    assert!(s.run.drain_timed_out);
    assert!(!s.accounting.ok);
    assert!(s.jobs.unfinished > 0, "{:?}", s.jobs);
    assert_eq!(s.jobs.lost, 0, "{}", s.accounting.verdict);
    assert_eq!(s.jobs.completed + s.jobs.unfinished, s.jobs.enqueued);
    assert!(
        s.accounting.verdict.starts_with("queue not drained"),
        "{}",
        s.accounting.verdict
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_worker_never_needs_the_reaper() {
    // The reaper runs every 50 ms and takes anything processing for more than 1 ms, while
    // each job holds its claim for 20 ms. The claim is not committed until the job is done,
    // so the reaper never sees a job in `processing`.
    let p = plan(
        SMALL,
        &[
            "reaper.interval=50ms",
            "reaper.stale_after=1ms",
            "consumers.handler.duration.fixed=20ms",
            "phases.0.duration=1s",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.accounting.ok, "{}", s.accounting.verdict);
    assert_eq!(s.jobs.reaped, 0);
    assert_eq!(s.jobs.worker_errors, 0, "{:?}", s.errors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reaper_returns_only_stale_processing_jobs_to_pending() {
    let p = plan(SMALL, &[]);
    let queue = fresh_queue(Engine::Postgres, &p, false).await;
    let mut conn = sql(&*queue).await;
    let ids: Vec<i64> = sqlx::query_scalar("INSERT INTO job_queue (type, payload) SELECT 'email', '{}' FROM generate_series(1, 4) RETURNING id")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    // ids[0]: processing for 20 minutes (stale); ids[1]: processing for 1 minute;
    // ids[2]: done long ago; ids[3]: pending.
    sqlx::query("UPDATE job_queue SET status = 'processing', started_at = now() - interval '20 minutes' WHERE id = $1").bind(ids[0]).execute(&mut conn).await.unwrap();
    sqlx::query("UPDATE job_queue SET status = 'processing', started_at = now() - interval '1 minute' WHERE id = $1").bind(ids[1]).execute(&mut conn).await.unwrap();
    sqlx::query("UPDATE job_queue SET status = 'done', started_at = now() - interval '1 hour' WHERE id = $1").bind(ids[2]).execute(&mut conn).await.unwrap();

    let mut link = queue.connect("reaper").await.unwrap();
    let reaped = link
        .reap(std::time::Duration::from_secs(600), false)
        .await
        .unwrap();
    assert_eq!(reaped, vec![(ids[0], false)]);
    let (status, started, error): (String, Option<String>, Option<String>) =
        sqlx::query_as("SELECT status, started_at::text, error_msg FROM job_queue WHERE id = $1")
            .bind(ids[0])
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), started, error.as_deref()),
        ("pending", None, Some("Worker timeout"))
    );
    // The rescued job can be claimed again.
    let claimed = link
        .claim(ClaimMode::Committed)
        .await
        .unwrap()
        .pop()
        .expect("a job");
    assert!(claimed.id == ids[0] || claimed.id == ids[3]);
    link.close().await;
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
}

/// A rate far beyond what the producers can send: they stop at the end of the phase
/// instead of sending the rest of the schedule for a minute more, and every scheduled job is
/// accounted for as sent or never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phase_ends_on_time_and_counts_the_jobs_it_could_not_send() {
    let p = plan(
        SMALL,
        &[
            "producers.count=1",
            "producers.max_count=2",
            "producers.arrival=\"constant\"",
            "consumers.handler.duration={ fixed = \"0ms\" }",
            "phases=[{ name = \"steady\", duration = \"1s\", rate = 50000 }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.accounting.ok, "{}", s.accounting.verdict);
    let j = &s.jobs;
    assert!(j.dropped > 0, "{j:?}");
    let scheduled = j.enqueued + j.dropped;
    assert!(
        (49_990..=50_010).contains(&scheduled),
        "sent + never sent = the schedule (1 s × 50,000/s): {j:?}"
    );
    // At most the inserts under way when the phase ended (one per connection) commit
    // after it; the fleet grew to its limit trying to keep up.
    assert_eq!(
        s.producers.connections, s.producers.max_count,
        "{:?}",
        s.producers
    );
    let after: u64 = outcome
        .results
        .timeline
        .iter()
        .filter(|r| r.phase == "drain")
        .map(|r| r.enqueued)
        .sum();
    assert!(
        after <= s.producers.max_count,
        "{after} inserts after the phase ended"
    );
    assert!(
        s.verdict
            .text
            .contains("never sent before their phase ended"),
        "{}",
        s.verdict.text
    );
}

/// The completion, the `COMMIT` and the next `BEGIN` in one message: each variant's own
/// success update (per job and per batch) is done and committed when the worker's finish
/// returns, with the next transaction open once the session has rested; and when the
/// completion fails, nothing after it runs (no `COMMIT`: the claim and a failure update made
/// in the same transaction stay invisible).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_completion_travels_with_the_commit_and_stops_at_its_error() {
    for variant in ["seed", "batch"] {
        let p = plan(
            SMALL,
            &[
                &format!("queue.variant=\"{variant}\""),
                "queue.max_retries=5",
            ],
        );
        let queue = fresh_queue(Engine::Postgres, &p, false).await;
        let mut other = sql(&*queue).await;
        sqlx::query(
            "INSERT INTO job_queue (type, payload) SELECT 'email', '{}' FROM generate_series(1, 6)",
        )
        .execute(&mut other)
        .await
        .unwrap();
        // A completion that the server rejects for job 1.
        sqlx::raw_sql(
            "CREATE FUNCTION refuse_job_1() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN IF NEW.id = 1 AND NEW.status = 'done' THEN RAISE EXCEPTION 'refused'; END IF; \
             RETURN NEW; END $$; \
             CREATE TRIGGER refuse BEFORE UPDATE ON job_queue FOR EACH ROW EXECUTE FUNCTION refuse_job_1()",
        )
        .execute(&mut other)
        .await
        .unwrap();
        let mut worker = queue.connect("worker-0").await.unwrap();
        let first = worker.claim(ClaimMode::InTransaction).await.unwrap();
        let ids: Vec<i64> = first.iter().map(|j| j.id).collect();
        assert!(ids.contains(&1), "{variant}: the oldest job first: {ids:?}");
        if let Some(last) = ids.iter().copied().find(|id| *id != 1) {
            worker.fail(last, "test").await.unwrap();
        }
        let error = worker
            .finish(ClaimMode::InTransaction, &[1])
            .await
            .expect_err("refused");
        assert!(error.to_string().contains("refused"), "{variant}: {error}");
        assert!(worker.recover(ClaimMode::InTransaction).await);
        let touched: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM job_queue WHERE status <> 'pending' OR retry_count > 0",
        )
        .fetch_one(&mut other)
        .await
        .unwrap();
        assert_eq!(
            touched, 0,
            "{variant}: nothing of that transaction committed"
        );

        // Two clean finishes: committed when each returns; after the second (the session
        // rested after the first) the next transaction is already open.
        for _ in 0..2 {
            let jobs = worker.claim(ClaimMode::InTransaction).await.unwrap();
            let done: Vec<i64> = jobs.iter().map(|j| j.id).filter(|id| *id != 1).collect();
            worker
                .finish(ClaimMode::InTransaction, &done)
                .await
                .unwrap();
            let committed: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM job_queue WHERE id = ANY($1) AND status = 'done'",
            )
            .bind(&done)
            .fetch_one(&mut other)
            .await
            .unwrap();
            assert_eq!(
                committed as usize,
                done.len(),
                "{variant}: committed on return"
            );
        }
        let state: String =
            sqlx::query_scalar("SELECT state FROM pg_stat_activity WHERE application_name = $1")
                .bind(format!("dbq-bench/{}/worker-0", queue.namespace()))
                .fetch_one(&mut other)
                .await
                .unwrap();
        assert_eq!(
            state, "idle in transaction",
            "{variant}: the next BEGIN came with the COMMIT"
        );
        worker.close().await;
        other.close().await.ok();
        queue.drop_namespace().await.unwrap();
    }
}

/// A bystander reads and updates a table of its own in the run's schema at its rate, alone
/// before the load and then beside it; summary.json compares the two, per phase too, and
/// the table shows its updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bystander_is_measured_alone_and_beside_the_queue() {
    let p = plan(
        SMALL,
        &[
            "bystander={ enabled = true, rate = 100, rows = 500, quiet = \"1s\" }",
            "phases=[{ name = \"steady\", duration = \"2s\" }]",
        ],
    );
    let (outcome, dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    crate::support::assert_bystander(s, 100.0, 1.0);
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(
        html.contains("aria-label=\"Bystander p99"),
        "no bystander chart"
    );
    assert!(
        s.cost.wal_bytes_per_job.is_some_and(|w| w > 0.0),
        "{:?}",
        s.cost
    );
    let seconds = outcome
        .results
        .timeline
        .iter()
        .filter(|r| r.bystander_p99_ms.is_some())
        .count();
    assert!(seconds >= 2, "{:?}", outcome.results.timeline);
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    let (rows, updates): (i64, i64) =
        sqlx::query_as("SELECT count(*), sum(counter)::bigint FROM bystander")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
    assert_eq!(rows, 500);
    // Every other statement was an update, alone (1 s) and beside the load (2 s).
    assert!((100..=160).contains(&updates), "{updates} updates");
}

/// At a low rate the last arrival comes well before the phase's end (at 1 job/s, about a
/// second before it): the phase still lasts its planned 2 s, and the measured window is that,
/// not the time until the last arrival (it was cut there: 8.3 s of a 10 s drain measured).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phase_lasts_its_duration_however_few_its_arrivals() {
    let p = plan(
        SMALL,
        &["producers.rate=1", "producers.arrival=\"constant\""],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.accounting.ok, "{}", s.accounting.verdict);
    assert!(
        (s.throughput.window_s - 2.0).abs() < 1e-6,
        "measured window {} s of a 2 s phase",
        s.throughput.window_s
    );
}
