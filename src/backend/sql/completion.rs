//! Whether a completion took effect. Rules: a completion statement reports the rows it
//! finished (and, when it returns an `id` column, which); a job whose completion finished no
//! row is a *stale completion* — it was no longer the worker's (the reaper took it back, and
//! another worker may have finished it), and a design that guards its completion refused it.
//! A per-batch completion that finished some of its jobs and does not return their ids
//! cannot say which it finished: that is an error whose outcome the table settles, never a
//! guess.

use super::design::CompleteShape;
use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::job::JobId;
use futures_util::{Stream, StreamExt};
use sqlx::Either;

/// What one completion statement did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// Rows the statement changed (matched, on MariaDB).
    pub rows: u64,
    /// The ids it returned, when it returns an `id` column.
    pub ids: Option<Vec<JobId>>,
}

/// Reads the results of one message (one statement, or several sent together) into one
/// [`Completion`] per statement, in order: each statement's rows come before its result.
pub async fn read<R, Q>(
    mut results: impl Stream<Item = sqlx::Result<Either<Q, R>>> + Unpin,
    rows_of: impl Fn(&Q) -> u64,
    id_of: impl Fn(&R) -> Option<JobId>,
) -> sqlx::Result<Vec<Completion>> {
    let mut done = Vec::new();
    let mut current = Completion::default();
    while let Some(item) = results.next().await {
        match item? {
            Either::Right(row) => {
                if let Some(id) = id_of(&row) {
                    current.ids.get_or_insert_with(Vec::new).push(id);
                }
            }
            Either::Left(result) => {
                current.rows = rows_of(&result);
                done.push(std::mem::take(&mut current));
            }
        }
    }
    Ok(done)
}

/// The jobs of `ids` whose completion finished nothing, from what the completion statements
/// did (`results`: one per job, or one for the batch; statements after them are ignored).
pub fn stale(
    shape: CompleteShape,
    ids: &[JobId],
    results: &[Completion],
) -> Result<Vec<JobId>, BackendError> {
    match shape {
        CompleteShape::PerJob => Ok(ids
            .iter()
            .zip(results)
            .filter(|(_, c)| c.rows == 0)
            .map(|(id, _)| *id)
            .collect()),
        CompleteShape::PerBatch if ids.is_empty() => Ok(Vec::new()),
        CompleteShape::PerBatch => {
            let c = results.first().cloned().unwrap_or_default();
            if let Some(returned) = &c.ids {
                return Ok(ids
                    .iter()
                    .filter(|id| !returned.contains(id))
                    .copied()
                    .collect());
            }
            match c.rows {
                0 => Ok(ids.to_vec()),
                n if n >= ids.len() as u64 => Ok(Vec::new()),
                n => Err(BackendError::new(
                    ErrorClass::Connection,
                    format!(
                        "complete.sql finished {n} of the batch's {} jobs and returns no id column to say which: the table settles them (on PostgreSQL, add RETURNING id)",
                        ids.len()
                    ),
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rows: u64, ids: Option<Vec<JobId>>) -> Completion {
        Completion { rows, ids }
    }

    #[test]
    fn a_completion_that_finished_no_row_is_stale() {
        let per_job = stale(
            CompleteShape::PerJob,
            &[1, 2, 3],
            &[c(1, None), c(0, None), c(1, None), c(0, None)],
        );
        assert_eq!(
            per_job.unwrap(),
            vec![2],
            "the COMMIT after them is ignored"
        );
    }

    #[test]
    fn a_batch_says_which_it_finished_by_the_ids_it_returns_or_by_its_count() {
        let batch = |rows, ids| stale(CompleteShape::PerBatch, &[4, 5, 6], &[c(rows, ids)]);
        assert_eq!(batch(2, Some(vec![6, 4])).unwrap(), vec![5]);
        assert_eq!(batch(3, None).unwrap(), Vec::<JobId>::new());
        assert_eq!(batch(0, None).unwrap(), vec![4, 5, 6]);
        let partial = batch(2, None).unwrap_err();
        assert!(
            partial.outcome_unknown(),
            "the table settles a partial batch"
        );
        assert!(partial.message.contains("2 of the batch's 3"), "{partial}");
    }
}
