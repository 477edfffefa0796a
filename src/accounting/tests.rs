//! The proof's edge cases, on the in-memory queue: each test plays a worker's steps on the
//! queue and writes into a ledger what the harness would have seen, then proves.

use super::*;
use crate::backend::memory::{MemoryQueue, Mishaps};
use crate::backend::{Backend, FailOutcome, NewJob};
use crate::scenario::load::{Overrides, parse};
use crate::scenario::{ClaimMode, EnvDefaults, Plan, QueuePlan};
use std::sync::Arc;

fn queue_plan(max_retries: i32) -> QueuePlan {
    let text = format!(
        "[queue]\nmax_retries = {max_retries}\nbackoff = {{ base = \"0s\" }}\n[producers]\nrate = 1\n[[phases]]\nname = \"a\"\nduration = \"1s\"\n"
    );
    let s = parse("t.toml", &text, &Overrides::default()).unwrap();
    Plan::build(s, "t.toml", "t", &EnvDefaults::default())
        .unwrap()
        .queue
}

fn job(key: &str) -> NewJob {
    NewJob {
        job_type: "job".into(),
        payload: format!("{{\"k\":\"{key}\",\"t\":0}}"),
        priority: 0,
    }
}

const OPTIONS: ProofOptions = ProofOptions {
    audit: true,
    drained: true,
    outbox: false,
    reported_by_library: false,
    at_least_once: false,
};

async fn prove_on(
    queue: &Arc<MemoryQueue>,
    ledger: &mut Ledger,
    opts: ProofOptions,
) -> AccountingProof {
    let mut link = queue.connect("proof").await.unwrap();
    prove(&mut *link, ledger, opts, &EarlierSteps::default())
        .await
        .unwrap()
}

/// Enqueues `n` jobs, each in the ledger as committed.
async fn enqueued(queue: &Arc<MemoryQueue>, ledger: &mut Ledger, n: usize) -> Vec<JobId> {
    let mut link = queue.connect("producer").await.unwrap();
    let mut ids = Vec::new();
    for i in 0..n {
        let id = link.enqueue(&job(&format!("k{i}"))).await.unwrap();
        ledger.enqueued(id);
        ids.push(id);
    }
    ids
}

#[tokio::test]
async fn a_commit_whose_reply_was_lost_is_settled_from_the_queue() {
    let queue = MemoryQueue::new(&queue_plan(3));
    let mut ledger = Ledger::default();
    let id = enqueued(&queue, &mut ledger, 1).await[0];
    let mut worker = queue.connect("worker-0").await.unwrap();
    let claimed = worker.claim(ClaimMode::InTransaction).await.unwrap();
    ledger.claimed(claimed[0].id, None);
    queue.set_mishaps(Mishaps {
        lost_replies: 1,
        ..Mishaps::default()
    });
    let e = worker
        .finish(ClaimMode::InTransaction, &[id])
        .await
        .unwrap_err();
    assert!(e.outcome_unknown());
    // What the worker reports: its commit broke, the outcome unknown.
    ledger.rolled_back(id, true);
    let proof = prove_on(&queue, &mut ledger, OPTIONS).await;
    assert!(proof.ok, "{}", proof.verdict);
    assert_eq!(proof.finished_without_report, 1);
    assert_eq!(ledger.get(id).unwrap().completions, 1);
}

#[tokio::test]
async fn a_failure_update_whose_reply_was_lost_counts_as_a_failure_not_a_repeat() {
    let queue = MemoryQueue::new(&queue_plan(3));
    let mut ledger = Ledger::default();
    let id = enqueued(&queue, &mut ledger, 1).await[0];
    let mut worker = queue.connect("worker-0").await.unwrap();
    let opts = ProofOptions { ..OPTIONS };
    worker.claim(ClaimMode::Committed).await.unwrap();
    ledger.claimed(id, None);
    queue.set_mishaps(Mishaps {
        lost_replies: 1,
        ..Mishaps::default()
    });
    assert!(worker.fail(id, "boom").await.unwrap_err().outcome_unknown());
    ledger.rolled_back(id, true);
    // It runs again (the retry the failure scheduled) and completes.
    assert_eq!(worker.claim(ClaimMode::Committed).await.unwrap()[0].id, id);
    ledger.claimed(id, None);
    worker.finish(ClaimMode::Committed, &[id]).await.unwrap();
    ledger.completed(id);
    let proof = prove_on(&queue, &mut ledger, opts).await;
    assert!(proof.ok, "{}", proof.verdict);
    assert_eq!(ledger.failures_found_in_table, 1, "the retry_count told");
    assert_eq!(
        proof.executions.extra_executions, 0,
        "{:?}",
        proof.executions
    );
}

#[tokio::test]
async fn a_crash_before_the_dead_letter_is_one_repeat_explained_by_the_crash() {
    let queue = MemoryQueue::new(&queue_plan(2));
    let mut ledger = Ledger::default();
    let id = enqueued(&queue, &mut ledger, 1).await[0];
    // The first worker dies holding the job: its transaction goes with it.
    let mut first = queue.connect("worker-0").await.unwrap();
    first.claim(ClaimMode::InTransaction).await.unwrap();
    ledger.claimed(id, None);
    drop(first);
    ledger.crashed(id);
    // Then two failures dead-letter it.
    let mut worker = queue.connect("worker-1").await.unwrap();
    for dead in [false, true] {
        assert_eq!(
            worker.claim(ClaimMode::InTransaction).await.unwrap()[0].id,
            id
        );
        ledger.claimed(id, None);
        let outcome = worker.fail(id, "boom").await.unwrap();
        assert_eq!(outcome == FailOutcome::DeadLettered, dead);
        worker.finish(ClaimMode::InTransaction, &[]).await.unwrap();
        ledger.failed(id, dead);
    }
    let proof = prove_on(&queue, &mut ledger, OPTIONS).await;
    assert!(proof.ok, "{}", proof.verdict);
    assert_eq!(proof.executions.extra_executions, 1);
    assert_eq!(proof.executions.unexplained_executions, 0);
    assert!(
        proof.verdict.contains("1 job run(s) repeated"),
        "{}",
        proof.verdict
    );
}

#[tokio::test]
async fn a_job_the_queue_really_lost_is_named_and_a_stranger_is_counted() {
    let queue = MemoryQueue::new(&queue_plan(3));
    let mut ledger = Ledger::default();
    let ids = enqueued(&queue, &mut ledger, 3).await;
    let mut worker = queue.connect("worker-0").await.unwrap();
    for _ in &ids {
        let job = worker.claim(ClaimMode::InTransaction).await.unwrap()[0].id;
        ledger.claimed(job, None);
        worker
            .finish(ClaimMode::InTransaction, &[job])
            .await
            .unwrap();
        ledger.completed(job);
    }
    assert!(prove_on(&queue, &mut ledger, OPTIONS).await.ok);
    queue.lose(ids[1]);
    let stranger = queue.smuggle(&job("stranger"));
    let proof = prove_on(&queue, &mut ledger, OPTIONS).await;
    assert!(!proof.ok);
    assert_eq!((proof.ledger.lost, proof.table.lost), (0, 1));
    assert!(!proof.views_agree);
    assert_eq!(proof.lost[0].id, ids[1]);
    assert_eq!(proof.lost[0].table, "missing");
    assert_eq!(proof.untracked_count, 1);
    assert_eq!(proof.untracked[0].id, stranger);
    assert!(
        proof.verdict.contains(&format!("id {}", ids[1])),
        "{}",
        proof.verdict
    );
}

/// A job reaped from a worker that is only slow, and run by another: what the first
/// worker's late completion does decides the verdict, the same way in both claim modes.
async fn reaped_and_run_again(
    queue: &Arc<MemoryQueue>,
    ledger: &mut Ledger,
) -> (JobId, Box<dyn Link>) {
    let id = enqueued(queue, ledger, 1).await[0];
    let mut slow = queue.connect("worker-0").await.unwrap();
    slow.claim(ClaimMode::Committed).await.unwrap();
    ledger.claimed(id, None);
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let mut reaper = queue.connect("reaper").await.unwrap();
    let reaped = reaper
        .reap(std::time::Duration::from_millis(1), false)
        .await
        .unwrap();
    assert_eq!(reaped, vec![(id, false)]);
    ledger.reaped(id, false, false);
    let mut fast = queue.connect("worker-1").await.unwrap();
    fast.claim(ClaimMode::Committed).await.unwrap();
    ledger.claimed(id, None);
    let stale = fast.finish(ClaimMode::Committed, &[id]).await.unwrap();
    assert!(stale.is_empty());
    ledger.completed(id);
    (id, slow)
}

#[tokio::test]
async fn a_second_completion_that_took_effect_is_a_duplicate_even_after_a_reap() {
    let queue = MemoryQueue::new(&queue_plan(3));
    let mut ledger = Ledger::default();
    let (id, mut slow) = reaped_and_run_again(&queue, &mut ledger).await;
    // The in-memory queue completes as the seed does, unguarded: the late one takes effect.
    let stale = slow.finish(ClaimMode::Committed, &[id]).await.unwrap();
    assert!(stale.is_empty());
    ledger.completed(id);
    let proof = prove_on(&queue, &mut ledger, OPTIONS).await;
    assert!(!proof.ok, "a double completion fails: {}", proof.verdict);
    assert_eq!(proof.executions.completions, 1);
    assert_eq!(
        proof.executions.unexplained_executions, 0,
        "the reap explains the second run"
    );
    assert_eq!(
        proof.table.duplicate_completions,
        Some(1),
        "the audit saw both"
    );
    assert!(
        proof
            .verdict
            .contains(&format!("id {id} (ledger done x2, table done x2)")),
        "{}",
        proof.verdict
    );
}

#[tokio::test]
async fn a_stale_completion_is_counted_and_is_not_a_duplicate() {
    let queue = MemoryQueue::new(&queue_plan(3));
    let mut ledger = Ledger::default();
    let (id, _slow) = reaped_and_run_again(&queue, &mut ledger).await;
    // A guarded design's late completion finishes nothing: the worker reports it stale.
    ledger.stale(id);
    let proof = prove_on(&queue, &mut ledger, OPTIONS).await;
    assert!(proof.ok, "{}", proof.verdict);
    assert_eq!(proof.executions.stale_outcomes, 1);
    assert_eq!(proof.executions.completions, 0);
    assert!(
        proof.verdict.contains("1 stale completion(s)"),
        "{}",
        proof.verdict
    );
}

/// A job handed to a second worker while the first still ran it, both completing it (a
/// Kafka rebalance): a duplicate completion and an unexplained run fail the proof, unless
/// the queue promises at least once for completions — then both are counted and allowed.
#[tokio::test]
async fn a_job_completed_twice_fails_the_proof_unless_the_queue_promises_at_least_once() {
    let queue = MemoryQueue::new(&queue_plan(3));
    let mut ledger = Ledger::default();
    let id = enqueued(&queue, &mut ledger, 1).await[0];
    let mut worker = queue.connect("worker-0").await.unwrap();
    worker.claim(ClaimMode::InTransaction).await.unwrap();
    worker
        .finish(ClaimMode::InTransaction, &[id])
        .await
        .unwrap();
    for _ in 0..2 {
        ledger.claimed(id, None);
        ledger.completed(id);
    }
    // Kafka keeps no record of completions: the ledger alone counts them.
    let strict_options = ProofOptions {
        audit: false,
        ..OPTIONS
    };
    let strict = prove_on(&queue, &mut ledger.clone(), strict_options).await;
    assert!(!strict.ok, "{}", strict.verdict);
    assert_eq!(strict.duplicate_total, 1);
    let at_least_once = ProofOptions {
        at_least_once: true,
        ..strict_options
    };
    let proof = prove_on(&queue, &mut ledger, at_least_once).await;
    assert!(proof.ok, "{}", proof.verdict);
    assert_eq!(proof.duplicate_total, 1, "still counted");
    assert_eq!(proof.executions.completions, 1);
    assert!(
        proof.verdict.contains("at-least-once delivery"),
        "{}",
        proof.verdict
    );
    assert_eq!(proof.done + proof.dead_lettered, proof.committed);
}
