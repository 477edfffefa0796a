//! Queue variants: every built-in design keeps every job (and its proof can still fail),
//! batch claims never hand one job to two workers, notify wakes idle workers, and a custom
//! variant runs from its own files or fails before the load, naming the file.

use crate::support::{
    DRAINED_AUDITED, SMALL, copy_of, plan, prove_again, run_plan, scenario_dir,
    smoke_on_shared_server, sql,
};
use sqlx::Connection;
use std::process::Command;

/// Where each variant keeps the evidence that a job finished, and a statement that removes
/// one job's evidence behind the harness's back.
const EVIDENCE: [(&str, &str); 9] = [
    (
        "seed",
        "DELETE FROM job_queue WHERE id = (SELECT min(id) FROM job_queue WHERE status = 'done') RETURNING id",
    ),
    (
        "batch",
        "DELETE FROM job_queue WHERE id = (SELECT min(id) FROM job_queue WHERE status = 'done') RETURNING id",
    ),
    (
        "notify",
        "DELETE FROM job_queue WHERE id = (SELECT min(id) FROM job_queue WHERE status = 'done') RETURNING id",
    ),
    (
        "plain_index",
        "DELETE FROM job_queue WHERE id = (SELECT min(id) FROM job_queue WHERE status = 'done') RETURNING id",
    ),
    (
        "delete",
        "DELETE FROM dbq_bench_completion_audit WHERE job_id = (SELECT min(job_id) FROM dbq_bench_completion_audit) RETURNING job_id",
    ),
    (
        "advisory_lock",
        "DELETE FROM dbq_bench_completion_audit WHERE job_id = (SELECT min(job_id) FROM dbq_bench_completion_audit) RETURNING job_id",
    ),
    (
        "visibility_timeout",
        "DELETE FROM dbq_bench_completion_audit WHERE job_id = (SELECT min(job_id) FROM dbq_bench_completion_audit) RETURNING job_id",
    ),
    // The audit and, where its partition was not truncated yet, the row.
    (
        "rotation",
        "WITH gone AS (DELETE FROM dbq_bench_completion_audit WHERE job_id = (SELECT min(job_id) FROM dbq_bench_completion_audit) RETURNING job_id), \
         dropped AS (DELETE FROM job_queue WHERE id IN (SELECT job_id FROM gone)) SELECT job_id FROM gone",
    ),
    (
        "archive",
        "DELETE FROM job_queue_archive WHERE id = (SELECT min(id) FROM job_queue_archive) RETURNING id",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_in_variant_keeps_every_job_and_its_proof_can_fail() {
    for (variant, remove_evidence) in EVIDENCE {
        let p = plan(
            SMALL,
            &[
                &format!("queue.variant={variant}"),
                "phases.0.duration=1s",
                "producers.rate=150",
            ],
        );
        let (outcome, _dir) = run_plan(&p, true).await;
        let s = &outcome.results.summary;
        assert_eq!(s.queue.variant, variant);
        assert!(
            s.accounting.ok && s.jobs.lost == 0 && s.jobs.completed > 0,
            "expected variant {variant} to finish every job; the proof says: {}",
            s.accounting.verdict
        );
        // The sampler read the design's table (a partitioned one through its partitions).
        let sampled = s.db_stats.per_phase.iter().map(|p| p.total_bytes_end);
        assert!(
            sampled.max().unwrap_or(0) > 0,
            "variant {variant}: the sampler saw no table: {:?}",
            s.db_stats.per_phase
        );
        // An archive's size is reported beside the hot table's.
        if variant == "archive" {
            let archive = s
                .db_stats
                .per_phase
                .iter()
                .filter_map(|p| p.server.get("job_queue_archive_bytes").map(|f| f.end));
            assert!(archive.max().unwrap_or(0) > 0, "{:?}", s.db_stats.per_phase);
        }
        let queue = outcome.kept_queue.expect("kept");
        let mut conn = sql(&*queue).await;
        let again = prove_again(&*queue, &outcome.ledger, DRAINED_AUDITED).await;
        assert!(again.ok, "variant {variant}, untouched: {}", again.verdict);

        let gone: i64 = sqlx::query_scalar(remove_evidence)
            .fetch_one(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("variant {variant}: {remove_evidence}: {e}"));
        let proof = prove_again(&*queue, &outcome.ledger, DRAINED_AUDITED).await;
        assert!(
            !proof.ok && proof.lost.iter().any(|l| l.id == gone),
            "variant {variant}: expected the proof to name job {gone} as lost after `{remove_evidence}`; it says: {}",
            proof.verdict
        );
        conn.close().await.ok();
        queue.drop_namespace().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_claims_take_several_jobs_and_never_hand_one_to_two_workers() {
    let p = plan(
        SMALL,
        &[
            "queue.variant=batch",
            "queue.claim_batch=20",
            "producers.prefill=2000",
            "phases.0.rate=0",
            "consumers.handler.duration.fixed=0ms",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert!(s.accounting.ok, "{}", s.accounting.verdict);
    assert_eq!(s.jobs.completed, 2000);
    let claimed_twice: Vec<i64> = outcome
        .ledger
        .committed()
        .filter(|(_, e)| e.claims != 1)
        .map(|(id, _)| id)
        .collect();
    assert!(
        claimed_twice.is_empty(),
        "expected every job claimed exactly once; claimed more (or never): {claimed_twice:?}"
    );
    assert_eq!(s.faults.duplicate_completions, 0);
    // Jobs claimed by one statement were completed in its transaction, so their rows share
    // that transaction's id (xmin). (Not started_at: two workers' transactions can start in
    // the same microsecond, which made this test count two claims as one.)
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    let largest_claim: i64 = sqlx::query_scalar(
        "SELECT max(n) FROM (SELECT count(*) AS n FROM job_queue GROUP BY xmin::text) AS claims",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert!(
        largest_claim > 1 && largest_claim <= 20,
        "expected claims of 2 to 20 jobs; the largest took {largest_claim}"
    );
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
}

/// With a poll interval far longer than the drain timeout, only wake-ups can finish the jobs
/// enqueued after the workers first found the queue empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_wakes_idle_workers_long_before_their_poll() {
    let p = plan(
        SMALL,
        &[
            "queue.variant=notify",
            "consumers.poll_interval=10m",
            "drain.timeout=20s",
            "producers.rate=50",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(
        s.complete && s.accounting.ok && s.jobs.completed == s.jobs.enqueued,
        "expected notifications to wake the workers for every job (poll every 10 minutes): complete {}, {} of {} completed; {}",
        s.complete,
        s.jobs.completed,
        s.jobs.enqueued,
        s.accounting.verdict
    );
}

/// A custom design's own wake-up channel (River's insert trigger notifies river_insert):
/// with a poll far longer than the drain timeout, only its notifications can finish the jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_design_s_own_channel_wakes_idle_workers() {
    let dir = format!("queue.dir=\"{}\"", scenario_dir("custom-river"));
    let sets = [
        "queue.variant=custom",
        &dir,
        "consumers.poll_interval=10m",
        "drain.timeout=20s",
        "producers.rate=50",
        "consumers.handler.error_rate=0",
    ];
    let (outcome, _dir) = run_plan(&plan(SMALL, &sets), false).await;
    let s = &outcome.results.summary;
    assert!(
        s.complete && s.accounting.ok && s.jobs.completed == s.jobs.enqueued,
        "expected river_insert to wake the workers for every job (poll every 10 minutes): {} of {} completed; {}",
        s.jobs.completed,
        s.jobs.enqueued,
        s.accounting.verdict
    );
}

/// Que's design under crashing workers and a closed-loop drain: a crashed worker's lock goes
/// with its transaction, so its job runs again at once (no reaper), and no job is ever
/// handed to two live workers; a claim committed before the work is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advisory_lock_claims_never_hand_a_job_to_two_workers() {
    let p = plan(
        SMALL,
        &[
            "queue.variant=advisory_lock",
            "producers.prefill=3000",
            "consumers.count=6",
            "consumers.handler.duration.fixed=0ms",
            "phases.0.faults=[{ kind = \"crash_workers\", every = \"300ms\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.faults.worker_crashes > 0, "{:?}", s.faults.events);
    assert!(
        s.accounting.ok && s.jobs.lost == 0,
        "{}",
        s.accounting.verdict
    );
    assert_eq!(s.faults.duplicate_completions, 0, "{:?}", s.accounting);
    assert_eq!(s.accounting.executions.unexplained_executions, 0);
    assert_eq!(s.faults.reaped, 0, "nothing for a reaper: {:?}", s.faults);

    let out = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(["validate", "scenarios/smoke.toml", "--set"])
        .args([
            "queue.variant=advisory_lock",
            "--set",
            "consumers.claim_mode=committed",
        ])
        .output()
        .unwrap();
    crate::support::assert_bad_input(&out, "advisory_lock committed", "in_transaction");
}

/// pgmq's design with claims committed before the work and crashing workers: a crashed
/// worker's job comes back when its visibility timeout runs out, and each comeback is
/// counted as the design's recovery (a reap), with no reaper running a statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visibility_timeout_redelivers_a_crashed_workers_job_and_counts_it_as_a_reap() {
    crashes_come_back_as_reaps(plan, &["queue.variant=visibility_timeout"]).await;
}

/// Committed claims, crashing workers and a 500 ms visibility timeout: every job ends, and
/// the jobs that came back after their timeout are counted as reaps. `on` builds the plan
/// for an engine's shared server.
pub(crate) async fn crashes_come_back_as_reaps(
    on: fn(&str, &[&str]) -> dbq_bench::scenario::Plan,
    design: &[&str],
) {
    let sets = [
        "queue.visibility_timeout=500ms",
        "consumers.claim_mode=committed",
        "producers.prefill=1500",
        "consumers.handler.duration.fixed=1ms",
        "phases.0.faults=[{ kind = \"crash_workers\", every = \"300ms\" }]",
        "drain.timeout=30s",
    ];
    let p = on(SMALL, &[design, &sets].concat());
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(s.faults.worker_crashes > 0, "{:?}", s.faults.events);
    assert!(
        s.accounting.ok && s.jobs.lost == 0,
        "{}",
        s.accounting.verdict
    );
    assert!(
        s.faults.reaped > 0,
        "expected the crashed workers' jobs to come back after their timeout, counted as reaps: {:?}",
        s.faults
    );
    assert_eq!(s.accounting.executions.unexplained_executions, 0);
}

/// PgQ's design with a held horizon: partitions whose jobs have all finished are
/// truncated, so the table holds fewer rows than the jobs that went through it, and the
/// proof finds a truncated job's completion in the audit (and names it lost without it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_truncates_finished_partitions_and_the_proof_still_sees_their_jobs() {
    let p = plan(
        SMALL,
        &[
            "queue.variant=rotation",
            "queue.rotation_period=1s",
            "phases.0.duration=5s",
            "producers.rate=150",
            "phases.0.faults=[{ kind = \"idle_in_transaction\" }]",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert!(
        s.accounting.ok && s.jobs.lost == 0,
        "{}",
        s.accounting.verdict
    );
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    let (rows, truncated): (i64, Option<i64>) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM job_queue), \
                (SELECT min(a.job_id) FROM dbq_bench_completion_audit a \
                 WHERE NOT EXISTS (SELECT 1 FROM job_state j WHERE j.id = a.job_id))",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let truncated = truncated.unwrap_or_else(|| {
        panic!(
            "expected truncated partitions: {rows} rows left for {} jobs completed",
            s.jobs.completed
        )
    });
    conn.close().await.ok();
    let audit = "DELETE FROM dbq_bench_completion_audit WHERE job_id = $1";
    expect_lost_without(&*queue, &outcome.ledger, audit, truncated).await;
    queue.drop_namespace().await.unwrap();
}

/// Removes job `id`'s evidence with `delete` (its `$1` the id) and checks that the proof,
/// run again, names the job lost.
async fn expect_lost_without(
    queue: &dyn dbq_bench::backend::Backend,
    ledger: &dbq_bench::metrics::Ledger,
    delete: &'static str,
    id: i64,
) {
    let mut conn = sql(queue).await;
    sqlx::query(delete)
        .bind(id)
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.ok();
    let proof = prove_again(queue, ledger, DRAINED_AUDITED).await;
    assert!(
        !proof.ok && proof.lost.iter().any(|l| l.id == id),
        "expected job {id} named lost after `{delete}`: {}",
        proof.verdict
    );
}

/// A custom design without a status column (pgmq's shape, archive on completion) runs with
/// the completion audit on (its own, audit.sql) and the reaper at its default; its proof
/// reads its own evidence and can fail; with committed claims and crashing workers, the
/// jobs that come back after their visibility timeout are counted as reaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_visibility_timeout_design_brings_its_own_audit_and_recovery() {
    let dir = format!("queue.dir=\"{}\"", scenario_dir("custom-pgmq"));
    let p = plan(SMALL, &["queue.variant=custom", &dir]);
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert!(
        s.accounting.ok && s.jobs.completed > 0,
        "{}",
        s.accounting.verdict
    );
    assert_eq!(s.faults.duplicate_completions, 0);
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    let (audited, gone): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM dbq_bench_completion_audit), \
                (SELECT id FROM job_archive ORDER BY id LIMIT 1)",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(audited as u64, s.jobs.completed, "the design's own audit");
    conn.close().await.ok();
    let archive = "DELETE FROM job_archive WHERE id = $1";
    expect_lost_without(&*queue, &outcome.ledger, archive, gone).await;
    queue.drop_namespace().await.unwrap();

    crashes_come_back_as_reaps(plan, &["queue.variant=custom", &dir]).await;
}

/// A port of a real library (River) keeps its table, its `state` enum, its state names and
/// its `attempt` column: design.toml maps them, the harness's audit attaches to `state`, and
/// the proof and the sampler read River's own words. It runs with failures in both claim
/// modes, with worker crashes in committed mode (River's rescuer brings the jobs back), and
/// a job deleted behind its back is named lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_s_own_table_and_state_names_run_without_a_mapping_view() {
    let dir = format!("queue.dir=\"{}\"", scenario_dir("custom-river"));
    let river = [
        "queue.variant=custom",
        dir.as_str(),
        "consumers.handler.error_rate=0.1",
    ];
    let p = plan(SMALL, &river);
    let (outcome, _dir) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    crate::support::assert_nothing_lost(s);
    assert!(s.jobs.failed_attempts > 0, "{:?}", s.jobs);
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    let (audited, completed, done): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM dbq_bench_completion_audit WHERE status = 'done'), \
                (SELECT count(*) FROM river_job WHERE state = 'completed'), \
                (SELECT min(id) FROM river_job WHERE state = 'completed')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        audited as u64, s.jobs.completed,
        "the audit on River's state column"
    );
    assert_eq!(
        completed as u64, s.jobs.completed,
        "River's own word for done"
    );
    conn.close().await.ok();
    expect_lost_without(
        &*queue,
        &outcome.ledger,
        "DELETE FROM river_job WHERE id = $1",
        done,
    )
    .await;
    queue.drop_namespace().await.unwrap();

    let crashes = [
        "consumers.claim_mode=committed",
        "reaper.interval=200ms",
        "reaper.stale_after=500ms",
        "phases.0.faults=[{ kind = \"crash_workers\", every = \"300ms\" }]",
    ];
    let (outcome, _dir) = run_plan(&plan(SMALL, &[&river[..], &crashes].concat()), false).await;
    let s = &outcome.results.summary;
    crate::support::assert_nothing_lost(s);
    assert!(
        s.faults.worker_crashes > 0 && s.faults.reaped > 0,
        "expected River's rescuer to bring crashed workers' jobs back: {:?}",
        s.faults
    );
    // River's completion takes `:id`: claims of five are completed one job at a time; the
    // scenario's two priorities become River's 1 (the more urgent) and 2.
    let batches = [
        &river[..],
        &[
            "queue.claim_batch=5",
            "producers.priorities={ \"0\" = 1, \"10\" = 1 }",
        ],
    ]
    .concat();
    let (batched, _dir) = run_plan(&plan(SMALL, &batches), true).await;
    crate::support::assert_nothing_lost(&batched.results.summary);
    let queue = batched.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    let used: Vec<i16> = sqlx::query_scalar("SELECT DISTINCT priority FROM river_job ORDER BY 1")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    assert_eq!(used, [1, 2], "River's own priorities");
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
}

/// A design with no status column and no audit of its own is refused before the load in
/// one line that names the two ways to give the audit a column.
#[test]
fn a_design_without_a_status_column_or_audit_is_told_how_to_declare_its_states() {
    let no_audit = broken_copy(&scenario_dir("custom-pgmq"), "audit.sql", None);
    let (code, err) = run_custom(no_audit.path(), &[]);
    assert_one_error(
        code,
        &err,
        &[
            "schema.sql",
            "new.status",
            "design.toml ([states])",
            "audit.sql",
        ],
    );
}

/// A status word that is neither the harness's nor a state design.toml declares is refused
/// before the load, by the rehearsal of one job through the design's statements, in one line
/// naming the file: never a rollback that runs the job again, never a zero.
#[test]
fn an_undeclared_state_name_is_refused_before_the_load_naming_the_file() {
    let river = scenario_dir("custom-river");
    let toml = std::fs::read_to_string(format!("{river}/design.toml"))
        .unwrap()
        .replace("retrying = [\"retryable\"]\n", "");
    let undeclared = broken_copy(&river, "design.toml", Some(&toml));
    let (code, err) = run_custom(undeclared.path(), &[]);
    assert_one_error(
        code,
        &err,
        &[
            "fail.sql",
            "rehearsal job",
            "returned the status 'retryable', which is neither the harness's nor a state design.toml declares",
        ],
    );
    // A copy: the run writes its results into the directory it is given.
    let priorities = copy_of(&river);
    let (code, err) = run_custom(
        priorities.path(),
        &["producers.priorities={ \"1\" = 1, \"2\" = 1, \"3\" = 1, \"4\" = 1, \"5\" = 1 }"],
    );
    assert_one_error(
        code,
        &err,
        &[
            "design.toml",
            "[priority] allows 4 value(s) (1 to 4), but producers.priorities uses 5",
        ],
    );
    let counts = broken_copy(
        &scenario_dir("custom-seed"),
        "status_counts.sql",
        Some("SELECT 'queued' AS status, count(*) FROM job_queue GROUP BY 1"),
    );
    let (code, err) = run_custom(counts.path(), &[]);
    assert_one_error(
        code,
        &err,
        &["status_counts.sql", "returned the status 'queued'"],
    );
}

/// A design's own audit that records nothing (its trigger never fires) fails the proof,
/// naming it: without it, its duplicate count of 0 would read like a working audit's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_that_records_nothing_fails_the_proof() {
    let pgmq = scenario_dir("custom-pgmq");
    let audit = std::fs::read_to_string(format!("{pgmq}/audit.sql"))
        .unwrap()
        .replace("FOR EACH ROW\n", "FOR EACH ROW WHEN (false)\n");
    assert!(audit.contains("WHEN (false)"));
    let silent = broken_copy(&pgmq, "audit.sql", Some(&audit));
    let dir = format!("queue.dir=\"{}\"", silent.path().display());
    let (outcome, _dir) = run_plan(&plan(SMALL, &["queue.variant=custom", &dir]), false).await;
    let s = &outcome.results.summary;
    let a = &s.accounting;
    assert!(
        !a.ok && a.audit_missed_count == s.jobs.completed && s.jobs.completed > 0,
        "expected every completion missed by the audit; {} missed: {}",
        a.audit_missed_count,
        a.verdict
    );
    assert!(
        a.verdict
            .contains("the completion audit recorded no completion for"),
        "{}",
        a.verdict
    );
}

/// A claim's named parameters: a name the harness does not bind, a scenario value the claim
/// never takes and a batch size with no `:batch` are each refused in one line before any
/// load.
#[test]
fn named_parameters_unknown_or_unused_are_refused_before_the_load() {
    let unknown = broken_custom(
        "claim.sql",
        Some("SELECT id, type, payload FROM job_queue LIMIT :limit"),
    );
    let (code, err) = run_custom(unknown.path(), &[]);
    assert_one_error(
        code,
        &err,
        &["claim.sql", ":limit", ":batch, :visibility_timeout"],
    );

    let seed = broken_custom("reap_counting.sql", None);
    let (code, err) = run_custom(seed.path(), &["queue.visibility_timeout=5s"]);
    assert_one_error(code, &err, &["claim.sql", "takes no :visibility_timeout"]);
    let (code, err) = run_custom(seed.path(), &["queue.claim_batch=5"]);
    assert_one_error(
        code,
        &err,
        &["claim.sql", "takes no :batch", "claim_batch = 5"],
    );

    // The failure update's names: it must say which job, and take each back-off value set.
    let fail = "UPDATE job_queue SET retry_count = retry_count + 1, error_msg = :error, \
                status = CASE WHEN retry_count + 1 >= max_retries THEN 'dead_letter' ELSE 'pending' END, \
                next_run_at = NOW() + :backoff_base::interval * POWER(:backoff_factor::float8, retry_count) \
                WHERE id = :id RETURNING status";
    let no_id = broken_custom(
        "fail.sql",
        Some(&fail.replace("WHERE id = :id", "WHERE id = 0")),
    );
    let (code, err) = run_custom(no_id.path(), &[]);
    assert_one_error(code, &err, &["fail.sql", "takes no :id"]);
    let named_fail = broken_custom("fail.sql", Some(fail));
    let (code, err) = run_custom(named_fail.path(), &["queue.backoff.cap=10s"]);
    assert_one_error(
        code,
        &err,
        &["fail.sql", "takes no :backoff_cap", "queue.backoff.cap"],
    );
    let (code, err) = run_custom(named_fail.path(), &["queue.backoff.jitter=full"]);
    assert_one_error(code, &err, &["fail.sql", "takes no :backoff_jitter"]);
    let named_status = broken_custom(
        "job_status.sql",
        Some("SELECT id, status, retry_count FROM job_queue WHERE id = :id"),
    );
    let (code, err) = run_custom(named_status.path(), &[]);
    assert_one_error(
        code,
        &err,
        &[
            "job_status.sql",
            "unknown parameter :id",
            "its parameters are :ids",
        ],
    );

    // The completion's `$1` is checked as the harness binds it: ids[] for batch claims.
    let pgmq = copy_of(&scenario_dir("custom-pgmq"));
    let (code, err) = run_custom(pgmq.path(), &["queue.claim_batch=5"]);
    assert_one_error(
        code,
        &err,
        &["complete.sql", "does not prepare", "bigint[]"],
    );
}

/// A UUID-keyed queue runs through a bigint handle, every job accounted for; a claim that
/// hands the harness the uuid as its id is refused, pointing at the handle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uuid_keyed_design_runs_through_a_bigint_handle() {
    let p = plan(
        SMALL,
        &[
            "queue.variant=custom",
            &format!("queue.dir=\"{}\"", scenario_dir("custom-uuid")),
            "producers.poison_fraction=0.05",
        ],
    );
    let (outcome, _out) = run_plan(&p, true).await;
    let s = &outcome.results.summary;
    assert!(
        s.accounting.ok && s.jobs.completed > 0 && s.jobs.dead_lettered > 0,
        "{}",
        s.accounting.verdict
    );
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    let key_type: String = sqlx::query_scalar(
        "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_index i \
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
         WHERE i.indrelid = 'job_queue'::regclass AND i.indisprimary",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(key_type, "uuid", "the table is keyed by uuid");
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();

    let uuid_id = broken_copy(
        &scenario_dir("custom-uuid"),
        "claim.sql",
        Some(
            &std::fs::read_to_string(format!("{}/claim.sql", scenario_dir("custom-uuid")))
                .unwrap()
                .replace("RETURNING id,", "RETURNING key AS id,"),
        ),
    );
    let (code, err) = run_custom(uuid_id.path(), &[]);
    assert_one_error(
        code,
        &err,
        &["claim.sql: returns id as UUID", "scenarios/custom-uuid/"],
    );
}

/// A design whose payload column is `text` holding JSON runs, its jobs' stamps read (every
/// job's latency is measured), and its failures take the back-off by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_payload_holding_json_and_a_named_failure_update_run() {
    let dir = broken_custom(
        "schema.sql",
        Some(
            &std::fs::read_to_string(format!("{}/schema.sql", scenario_dir("custom-seed")))
                .unwrap()
                .replace(
                    "payload       JSONB NOT NULL",
                    "payload       TEXT NOT NULL",
                ),
        ),
    );
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write(
        "enqueue.sql",
        "INSERT INTO job_queue (type, payload, priority, max_retries) VALUES ($1, $2, $3, $4) RETURNING id",
    );
    write(
        "prefill.sql",
        "INSERT INTO job_queue (type, payload, priority, max_retries) \
         SELECT t, p, pr, $4 FROM unnest($1::text[], $2::text[], $3::int[]) AS u(t, p, pr) RETURNING id",
    );
    write(
        "jobs_by_key.sql",
        "SELECT id, payload::jsonb->>'k' AS key FROM job_queue WHERE payload::jsonb->>'k' = ANY($1::text[])",
    );
    write(
        "fail.sql",
        include_str!("../../src/backend/postgres/seed/fail.sql"),
    );
    let p = plan(
        SMALL,
        &[
            "queue.variant=custom",
            &format!("queue.dir=\"{}\"", dir.path().display()),
            "producers.poison_fraction=0.05",
            "queue.backoff.base=\"10ms\"",
            "queue.backoff.cap=\"50ms\"",
            "queue.backoff.jitter=\"equal\"",
        ],
    );
    let (outcome, _out) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(
        s.accounting.ok && s.jobs.completed > 0 && s.jobs.dead_lettered > 0,
        "expected every job finished, poison ones dead-lettered after their retries: {} ({} done, {} dead)",
        s.accounting.verdict,
        s.jobs.completed,
        s.jobs.dead_lettered
    );
    // The poison flag was read (dead letters above); so were the stamps: a defaulted stamp
    // would put end-to-end latency decades long.
    let e2e = &s.latency_ms.end_to_end;
    assert!(
        e2e.count > 0 && e2e.max < 3_600_000.0,
        "expected the jobs' stamps read from the text payload: {e2e:?}"
    );
}

pub(crate) fn assert_one_error(code: Option<i32>, err: &str, needles: &[&str]) {
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(code, Some(2), "expected exit 2; stderr: {err}");
    assert!(
        errors.len() == 1 && needles.iter().all(|n| errors[0].contains(n)),
        "expected one error line with {needles:?}; stderr: {err}"
    );
    assert!(!err.contains("load started"), "no load may start: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_variant_made_of_the_seeds_files_runs_like_the_seed() {
    let p = plan(
        SMALL,
        &[
            "queue.variant=custom",
            &format!("queue.dir=\"{}\"", scenario_dir("custom-seed")),
        ],
    );
    let (outcome, _dir) = run_plan(&p, false).await;
    let s = &outcome.results.summary;
    assert!(
        s.queue.variant.starts_with("custom:"),
        "{}",
        s.queue.variant
    );
    assert!(
        s.accounting.ok && s.jobs.completed > 0,
        "expected the custom copy of the seed to finish every job: {}",
        s.accounting.verdict
    );
    let seed_claim = include_str!("../../src/backend/postgres/seed/claim.sql");
    assert_eq!(
        s.queue.claim_sql,
        seed_claim.trim(),
        "expected the claim read from the custom directory"
    );
}

/// A copy of the custom seed with `file` replaced by `text` (or removed when `None`).
fn broken_custom(file: &str, text: Option<&str>) -> tempfile::TempDir {
    broken_copy(&scenario_dir("custom-seed"), file, text)
}

/// A copy of the custom directory `src` with `file` replaced by `text` (or removed when
/// `None`).
pub(crate) fn broken_copy(src: &str, file: &str, text: Option<&str>) -> tempfile::TempDir {
    let dir = copy_of(src);
    match text {
        Some(t) => std::fs::write(dir.path().join(file), t).unwrap(),
        None => std::fs::remove_file(dir.path().join(file)).unwrap(),
    }
    dir
}

fn run_custom(dir: &std::path::Path, sets: &[&str]) -> (Option<i32>, String) {
    run_custom_on(&smoke_on_shared_server(), dir, sets)
}

/// Runs the smoke scenario on `server` (the arguments naming it) with the custom design in
/// `dir`: the exit code and stderr.
pub(crate) fn run_custom_on(
    server: &[&str],
    dir: &std::path::Path,
    sets: &[&str],
) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(server)
        .args(sets.iter().flat_map(|s| ["--set", s]))
        .args(["--set", "queue.variant=custom", "--set"])
        .arg(format!("queue.dir=\"{}\"", dir.display()))
        .args(["--out"])
        .arg(dir.join("results"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// A proof statement returning a column of another type than the proof decodes is refused
/// before the load, naming the file, the column and the cast (a smallint retry count used to
/// run the whole load, wait out the drain and fail after it, with no summary written).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proof_statement_of_the_wrong_column_type_is_refused_before_the_load() {
    let smallint = broken_custom(
        "job_status.sql",
        Some(
            "SELECT id, status, retry_count::smallint AS retry_count FROM job_queue WHERE id = ANY($1)",
        ),
    );
    let (code, err) = run_custom(smallint.path(), &[]);
    assert_one_error(
        code,
        &err,
        &[
            "job_status.sql: returns retry_count as INT2",
            "retry_count::int",
        ],
    );
    assert!(!err.contains("load started"), "no load may start: {err}");
}

/// A design that keeps its library's table name (every statement consistent with it) is
/// refused right after its schema, naming schema.sql and the name the harness reads; it used
/// to prepare every statement, prefill, and only then fail ANALYZE with exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_design_whose_queue_table_has_another_name_is_refused_after_its_schema() {
    let dir = copy_of(&scenario_dir("custom-seed"));
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("job_queue", "river_job")).unwrap();
    }
    let (code, err) = run_custom(dir.path(), &[]);
    assert_one_error(code, &err, &["schema.sql: creates no table job_queue"]);
    assert!(
        !err.contains("prefilling"),
        "refused before the prefill: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_custom_directory_fails_before_any_load_naming_the_file() {
    let missing = broken_custom("claim.sql", None);
    let (code, err) = run_custom(missing.path(), &[]);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(code, Some(2), "expected exit 2; stderr: {err}");
    assert!(
        errors.len() == 1 && errors[0].contains("claim.sql: is missing"),
        "expected one error line naming claim.sql; stderr: {err}"
    );
    assert!(!err.contains("load started"), "no load may start: {err}");

    let wrong = broken_custom("claim.sql", Some("SELECT id FROM job_queue LIMIT 1"));
    let (code, err) = run_custom(wrong.path(), &[]);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(code, Some(2), "expected exit 2; stderr: {err}");
    assert!(
        errors.len() == 1
            && errors[0].contains("claim.sql: must return the columns id, type, payload"),
        "expected one error line naming claim.sql and its columns; stderr: {err}"
    );
    assert!(!err.contains("load started"), "no load may start: {err}");

    // A payload that cannot hold JSON would lose the job's stamps: refused, with the fix.
    let int_payload = broken_custom(
        "claim.sql",
        Some(
            "UPDATE job_queue SET status = 'processing' WHERE id = (SELECT id FROM job_queue \
             WHERE status = 'pending' LIMIT 1 FOR UPDATE SKIP LOCKED) \
             RETURNING id, type, length(payload::text) AS payload",
        ),
    );
    let (code, err) = run_custom(int_payload.path(), &[]);
    assert_one_error(
        code,
        &err,
        &["claim.sql: returns payload as INT4", "text holding JSON"],
    );

    // Without reap.sql the design has no reaper: committed claims are refused.
    let no_reaper = broken_custom("reap.sql", None);
    let out = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args([
            "validate",
            "scenarios/smoke.toml",
            "--set",
            "queue.variant=custom",
        ])
        .args(["--set", "consumers.claim_mode=committed", "--set"])
        .arg(format!("queue.dir=\"{}\"", no_reaper.path().display()))
        .output()
        .unwrap();
    crate::support::assert_bad_input(&out, "no reap.sql", "has no reap.sql");

    let bad_sql = broken_custom(
        "fail.sql",
        Some("UPDATE no_such_table SET x = 1 RETURNING status"),
    );
    let (code, err) = run_custom(bad_sql.path(), &[]);
    assert_eq!(code, Some(2), "expected exit 2; stderr: {err}");
    assert!(
        err.contains("fail.sql: does not prepare: relation \"no_such_table\" does not exist"),
        "expected the error to name fail.sql and the server's reason; stderr: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_knobs_reach_the_queue_table() {
    let p = plan(
        SMALL,
        &[
            "queue.variant=delete",
            "queue.fillfactor=70",
            "queue.unlogged=true",
            "phases.0.duration=1s",
        ],
    );
    let (outcome, _dir) = run_plan(&p, true).await;
    assert!(
        outcome.results.summary.accounting.ok,
        "{}",
        outcome.results.summary.accounting.verdict
    );
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;
    let (options, persistence): (Option<Vec<String>>, String) = sqlx::query_as(
        "SELECT reloptions::text[], relpersistence::text FROM pg_class WHERE oid = 'job_queue'::regclass",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        options,
        Some(vec!["fillfactor=70".to_string()]),
        "expected queue.fillfactor on the table"
    );
    assert_eq!(
        persistence, "u",
        "expected queue.unlogged to make the table UNLOGGED"
    );
    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
}

/// A permanent database error during the load (here every insert breaks a CHECK the custom
/// schema adds, which lets the rehearsal's job through) is not retried forever: the run
/// stops, exits 1, and says in one line who met it and what the server said; partial
/// results are written. A CHECK the rehearsal meets stops the run before the load.
#[test]
fn a_permanent_insert_error_stops_the_run() {
    let schema =
        std::fs::read_to_string(format!("{}/schema.sql", scenario_dir("custom-seed"))).unwrap();
    let check = |allowed: &str| {
        format!(
            "{schema}\nALTER TABLE job_queue ADD CONSTRAINT no_jobs_today CHECK (type = '{allowed}');\n"
        )
    };
    let before = broken_custom("schema.sql", Some(&check("none")));
    let (code, err) = run_custom(before.path(), &[]);
    assert_one_error(
        code,
        &err,
        &["enqueue.sql", "rehearsal job", "no_jobs_today"],
    );
    let dir = broken_custom("schema.sql", Some(&check("rehearsal")));
    let out = Command::new(env!("CARGO_BIN_EXE_dbq-bench"))
        .args(smoke_on_shared_server())
        .args([
            "--quiet",
            "--set",
            "producers.prefill=0",
            "--set",
            "phases=[{ name = \"steady\", duration = \"60s\", rate = 50 }]",
            "--set",
            "queue.variant=custom",
            "--set",
        ])
        .arg(format!("queue.dir=\"{}\"", dir.path().display()))
        .arg("--out")
        .arg(dir.path().join("results"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(
        lines[0].contains("stopped by a permanent error")
            && lines[0].contains("producer-")
            && lines[0].contains("no_jobs_today")
            && lines[0].contains("23514"),
        "{err}"
    );
    let s: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("results/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(s["complete"], false);
    // Stopped within seconds of its 60 s phase's start: well under one retry per second.
    let steady = s["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "steady")
        .unwrap();
    assert!(steady["duration_s"].as_f64().unwrap() < 30.0, "{steady}");
    assert_eq!(s["jobs"]["lost"], 0);
}
