//! A custom design's rehearsal, before any load: one job goes through its statements as a
//! run would use them — enqueued, claimed, failed, read back by the proof's and the
//! sampler's statements — on the worker's own code path, inside one transaction that is then
//! rolled back. Rules: the queue is empty when it runs (set-up comes before the prefill);
//! nothing it does survives (the rollback, and only the sequence moves); every failure is
//! one error naming the file that failed and what it did, so a statement that prepares but
//! returns what the harness cannot read (an unknown status word, a value that does not
//! decode) stops the run here with exit 2, not during the load or after the drain.

use super::design::SqlDesign;
use crate::backend::error::BackendError;
use crate::backend::figures::DbSample;
use crate::backend::job::{JobId, NewJob};
use crate::backend::queue::ClaimMode;
use crate::backend::seam::{Backend, DesignError, InstallError, Link};

/// The rehearsal job's key (the proof looks in-doubt inserts up by it).
const KEY: &str = "dbq-bench-rehearsal";

/// Rehearses `d` on the installed `queue` when it is a custom design (the built-in designs'
/// statements are the harness's own, tested as such).
pub async fn rehearse_custom(queue: &dyn Backend, d: &SqlDesign) -> Result<(), InstallError> {
    if d.dir.is_none() {
        return Ok(());
    }
    let mut link = queue.connect("rehearsal").await?;
    let rehearsed = rehearse(&mut *link, d).await;
    link.close().await;
    rehearsed.map_err(InstallError::Design)
}

/// Runs the rehearsal on `link` (a fresh connection to the installed queue).
async fn rehearse(link: &mut dyn Link, d: &SqlDesign) -> Result<(), DesignError> {
    let mode = ClaimMode::InTransaction;
    let blame = |file: &'static str| {
        move |e: BackendError| {
            let file = d.file(file);
            let line = e.line();
            // A status word's error names the file already.
            let reason = line.strip_prefix(&format!("{file}: ")).unwrap_or(&line);
            DesignError {
                reason: format!(
                    "fails when the harness runs it on a rehearsal job (in a transaction rolled back, before any load): {reason}"
                ),
                file,
            }
        }
    };
    // The first claim opens the worker's transaction; the queue is still empty.
    let before = link.claim(mode).await.map_err(blame("claim.sql"))?;
    let result = async {
        if !before.is_empty() {
            return Ok(());
        }
        let job = NewJob {
            job_type: "rehearsal".into(),
            payload: format!("{{\"k\":\"{KEY}\",\"t\":0}}"),
            priority: 0,
        };
        let id = link.enqueue(&job).await.map_err(blame("enqueue.sql"))?;
        let claimed = link.claim(mode).await.map_err(blame("claim.sql"))?;
        if claimed.iter().any(|j| j.id == id) {
            link.fail(id, "rehearsal")
                .await
                .map_err(blame("fail.sql"))?;
        }
        read_back(link, d, id)
            .await
            .map_err(|(file, e)| blame(file)(e))
    }
    .await;
    link.recover(mode).await;
    result
}

/// The proof's and the sampler's statements on the rehearsal job (not the sampler's own
/// transaction, which would commit it).
async fn read_back(
    link: &mut dyn Link,
    d: &SqlDesign,
    id: JobId,
) -> Result<(), (&'static str, BackendError)> {
    let at = |file| move |e| (file, e);
    let counts = link
        .status_counts()
        .await
        .map_err(at("status_counts.sql"))?;
    super::count_statuses(d, counts, &mut DbSample::default()).map_err(at("status_counts.sql"))?;
    link.job_statuses(&[id])
        .await
        .map_err(at("job_status.sql"))?;
    link.table_mismatches(&[id], &["open"])
        .await
        .map_err(at("ledger_check.sql"))?;
    link.untracked_between(&[], id, id + 1)
        .await
        .map_err(at("untracked.sql"))?;
    link.jobs_by_key(&[KEY.to_string()])
        .await
        .map_err(at("jobs_by_key.sql"))?;
    Ok(())
}
