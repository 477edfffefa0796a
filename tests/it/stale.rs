//! Late completions on every engine and built-in design: a worker whose job was reaped (or
//! whose visibility timeout ran out) and then run and completed by another worker completes
//! it too. A design that guards its completion finishes nothing and the link reports the
//! completion stale; one that does not (the seed) writes `done` a second time, which its
//! completion audit records as a second completion.

use crate::support::{SMALL, fresh_queue, plan_on, shared_server};
use dbq_bench::backend::{self, JobId, Link, NewJob};
use dbq_bench::scenario::{ClaimMode, Engine};
use std::time::Duration;

/// What the slow worker's late completion does.
#[derive(Debug, PartialEq)]
enum Late {
    /// It finished nothing: reported stale, one completion in the audit.
    Stale,
    /// It took effect: the audit counts two completions.
    Twice,
}

/// Claims the one job on `link`, polling a little while it is not visible yet.
async fn claim_one(link: &mut Box<dyn Link>, name: &str) -> JobId {
    for _ in 0..100 {
        let jobs = link.claim(ClaimMode::Committed).await.unwrap();
        if let [job] = jobs.as_slice() {
            return job.id;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{name}: the job was never claimed again");
}

/// The job is claimed by a slow worker, taken back (the reaper, or the visibility timeout),
/// claimed and completed by a fast one; then the slow one completes it.
async fn late_completion(engine: Engine, sets: &[&str]) -> (Late, Vec<(JobId, i64)>) {
    let name = format!("{} {sets:?}", engine.as_str());
    let url = shared_server(engine);
    let mut all = vec![format!("database.engine={}", engine.as_str())];
    all.extend(sets.iter().map(|s| s.to_string()));
    let p = plan_on(
        url,
        SMALL,
        &all.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let queue = fresh_queue(engine, &p, true).await;
    let mut slow = queue.connect("worker-0").await.unwrap();
    let id = slow
        .enqueue(&NewJob {
            job_type: "late".into(),
            payload: "{}".into(),
            priority: 0,
        })
        .await
        .unwrap();
    assert_eq!(claim_one(&mut slow, &name).await, id);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut reaper = queue.connect("reaper").await.unwrap();
    reaper.reap(Duration::from_millis(1), false).await.unwrap();
    let mut fast = queue.connect("worker-1").await.unwrap();
    assert_eq!(claim_one(&mut fast, &name).await, id, "{name}");
    let stale = fast.finish(ClaimMode::Committed, &[id]).await.unwrap();
    assert!(
        stale.is_empty(),
        "{name}: the fast worker's completion took effect"
    );
    let stale = slow.finish(ClaimMode::Committed, &[id]).await.unwrap();
    let late = match stale.as_slice() {
        [] => Late::Twice,
        [s] if *s == id => Late::Stale,
        other => panic!("{name}: stale {other:?}"),
    };
    let audited = reaper
        .audit()
        .unwrap()
        .audited_completions(id, id + 1)
        .await
        .unwrap();
    for link in [slow, fast, reaper] {
        link.close().await;
    }
    queue.drop_namespace().await.unwrap();
    backend::release(&*queue);
    (late, audited)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_completion_is_stale_where_the_design_guards_it_and_a_duplicate_where_not() {
    let vt = [
        "queue.variant=\"visibility_timeout\"",
        "queue.visibility_timeout=\"300ms\"",
    ];
    let cases: [(Engine, &[&str], Late); 9] = [
        (Engine::Postgres, &[], Late::Twice),
        (Engine::Postgres, &["queue.variant=\"delete\""], Late::Stale),
        (
            Engine::Postgres,
            &["queue.variant=\"archive\""],
            Late::Stale,
        ),
        (Engine::Postgres, &vt, Late::Stale),
        (Engine::Mariadb, &[], Late::Twice),
        (Engine::Mariadb, &["queue.variant=\"delete\""], Late::Stale),
        (Engine::Mariadb, &["queue.variant=\"archive\""], Late::Stale),
        (Engine::Mariadb, &vt, Late::Stale),
        (Engine::Redis, &[], Late::Stale),
    ];
    for (engine, sets, expected) in cases {
        let (late, audited) = late_completion(engine, sets).await;
        let name = format!("{} {sets:?}", engine.as_str());
        assert_eq!(late, expected, "{name}");
        let completions = match expected {
            Late::Twice => 2,
            Late::Stale => 1,
        };
        assert_eq!(audited.len(), 1, "{name}: {audited:?}");
        assert_eq!(audited[0].1, completions, "{name}: what the audit saw");
    }
}
