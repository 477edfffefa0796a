//! The accounting proof can fail: rows changed behind the harness's back are named.

use crate::support::{DRAINED_AUDITED, SMALL, plan, prove_again, run_plan, sql};
use sqlx::Connection;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proof_names_jobs_deleted_corrupted_or_completed_twice_behind_its_back() {
    let p = plan(SMALL, &["phases.0.duration=1s", "producers.rate=100"]);
    let (outcome, _dir) = run_plan(&p, true).await;
    assert!(
        outcome.results.summary.accounting.ok,
        "{}",
        outcome.results.summary.accounting.verdict
    );
    let queue = outcome.kept_queue.expect("kept");
    let mut conn = sql(&*queue).await;

    // Untouched, the proof still holds.
    let again = prove_again(&*queue, &outcome.ledger, DRAINED_AUDITED).await;
    assert!(again.ok, "{}", again.verdict);

    let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM job_queue ORDER BY id LIMIT 3")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    let (deleted, reset, doubled) = (ids[0], ids[1], ids[2]);
    sqlx::query("DELETE FROM job_queue WHERE id = $1")
        .bind(deleted)
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("UPDATE job_queue SET status = 'pending' WHERE id = $1")
        .bind(reset)
        .execute(&mut conn)
        .await
        .unwrap();
    // A second transition to done, as a duplicate execution would leave it (the audit
    // trigger records it).
    sqlx::query("UPDATE job_queue SET status = 'processing' WHERE id = $1")
        .bind(doubled)
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("UPDATE job_queue SET status = 'done' WHERE id = $1")
        .bind(doubled)
        .execute(&mut conn)
        .await
        .unwrap();

    let proof = prove_again(&*queue, &outcome.ledger, DRAINED_AUDITED).await;
    assert!(!proof.ok);
    assert!(!proof.views_agree);
    // The ledger saw every job finish; the table lost two of them.
    assert_eq!(proof.ledger.lost, 0);
    assert_eq!(proof.table.lost, 2);
    let lost: Vec<(i64, &str)> = proof
        .lost
        .iter()
        .map(|p| (p.id, p.table.as_str()))
        .collect();
    assert_eq!(lost, vec![(deleted, "missing"), (reset, "pending")]);
    assert_eq!(proof.table.duplicate_completions, Some(1));
    assert_eq!(proof.duplicates[0].id, doubled);
    assert_eq!(proof.duplicates[0].table, "done x2");
    assert!(
        proof.verdict.contains(&format!("id {deleted}")),
        "{}",
        proof.verdict
    );

    // A row nobody enqueued through the harness is reported as untracked.
    sqlx::query("INSERT INTO job_queue (type, payload) VALUES ('email', '{}')")
        .execute(&mut conn)
        .await
        .unwrap();
    let proof = prove_again(&*queue, &outcome.ledger, DRAINED_AUDITED).await;
    assert_eq!(proof.untracked_count, 1);

    conn.close().await.ok();
    queue.drop_namespace().await.unwrap();
}
