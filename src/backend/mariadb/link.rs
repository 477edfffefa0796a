//! A MariaDB connection of the run: what producers and workers do on it. The statements are
//! the design's; what differs from PostgreSQL is how they run: there is no
//! `UPDATE … RETURNING`, so a claim is a locking SELECT and then an UPDATE, a failure update
//! reads the status back, and the reaper locks the stale jobs before it updates them; and
//! there are no arrays, so a list of ids travels as one bound JSON array that the statement
//! reads with `JSON_TABLE`.

use crate::backend::error::{BackendError, ErrorClass};
use crate::backend::job::{ClaimedJob, FailOutcome, Handout, JobId, JobPayload, JobStatus, NewJob};
use crate::backend::queue::ClaimMode;
use crate::backend::seam;
use crate::backend::seam::{Enqueue, Work};
use crate::backend::sql::Shared;
use crate::backend::sql::completion::{self, Completion};
use crate::backend::sql::design::{ClaimShape, CompleteShape, SqlDesign};
use crate::named_params::{ClaimParam, FailParam, MarkParam};
use async_trait::async_trait;
use sqlx::mysql::MySqlConnection;
use sqlx::{AssertSqlSafe, Row};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often a busy worker commits without the next `BEGIN` (as on PostgreSQL).
const REST_EVERY: Duration = Duration::from_secs(1);

/// One connection.
pub struct MariaLink {
    pub(super) conn: MySqlConnection,
    pub(super) shared: Arc<Shared>,
    /// A `BEGIN` already ran on the connection.
    open: bool,
    /// When the session last waited outside a transaction.
    rested_at: Option<Instant>,
}

/// A JSON array of ids, the form every MariaDB statement takes a list of ids in.
pub(super) fn json_ids(ids: &[JobId]) -> String {
    let mut s = String::with_capacity(ids.len() * 8 + 2);
    s.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&id.to_string());
    }
    s.push(']');
    s
}

/// MariaDB has no interval type: durations are bound as microseconds, for
/// `NOW(6) + INTERVAL ? MICROSECOND`.
fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

/// One of the design's statements (never user input spliced in).
pub(super) fn text(sql: &str) -> AssertSqlSafe<&str> {
    AssertSqlSafe(sql)
}

/// Binds the claim's parameters to `query` (the claim's text, maybe `EXPLAIN`ed).
pub(super) fn bind_claim<'q>(
    d: &SqlDesign,
    mut query: sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>,
) -> sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments> {
    for param in &d.claim_binds {
        query = match param {
            ClaimParam::Batch => query.bind(i64::from(d.claim_size())),
            ClaimParam::VisibilityTimeout => query.bind(micros(d.visibility_timeout)),
        };
    }
    query
}

fn follow_up<'a>(sql: &'a Option<String>, what: &str) -> Result<&'a str, BackendError> {
    sql.as_deref().ok_or_else(|| {
        BackendError::new(
            ErrorClass::Permanent,
            format!("the MariaDB design has no {what}"),
        )
    })
}

fn encode(e: serde_json::Error) -> sqlx::Error {
    sqlx::Error::Encode(Box::new(e))
}

impl MariaLink {
    pub(super) fn new(conn: MySqlConnection, shared: Arc<Shared>) -> MariaLink {
        MariaLink {
            conn,
            shared,
            open: false,
            rested_at: None,
        }
    }

    pub(super) async fn execute(&mut self, sql: &str) -> sqlx::Result<()> {
        sqlx::raw_sql(AssertSqlSafe(sql))
            .execute(&mut self.conn)
            .await
            .map(drop)
    }

    /// The locking SELECT, then the UPDATE of what it locked; in the open transaction.
    pub(super) async fn select_and_mark(&mut self) -> Result<Vec<ClaimedJob>, BackendError> {
        let d = &self.shared.design;
        let select = bind_claim(d, sqlx::query(text(&d.sql.claim)));
        let rows = select.fetch_all(&mut self.conn).await?;
        let reports_redelivery = rows.first().is_some_and(|row| {
            use sqlx::Column;
            row.columns().iter().any(|c| c.name() == "redelivered")
        });
        let jobs = rows
            .iter()
            .map(|row| {
                let payload: String = row.try_get("payload")?;
                Ok(ClaimedJob {
                    id: row.try_get("id")?,
                    job_type: row.try_get("type")?,
                    // Never defaults: a payload that is not the harness's JSON loses the
                    // job's stamps, so it fails the claim instead.
                    payload: serde_json::from_str::<JobPayload>(&payload)
                        .map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
                    // MariaDB's booleans are integers.
                    handout: Handout::redelivered_if(
                        reports_redelivery && row.try_get::<i64, _>("redelivered")? != 0,
                    ),
                })
            })
            .collect::<sqlx::Result<Vec<_>>>()?;
        if jobs.is_empty() {
            return Ok(jobs);
        }
        let d = &self.shared.design;
        let mut mark = sqlx::query(text(follow_up(&d.sql.mark_claimed, "mark_claimed.sql")?));
        for param in &d.mark_binds {
            mark = match (param, d.claim) {
                (MarkParam::Id, ClaimShape::Single) => mark.bind(jobs[0].id),
                (MarkParam::Id, ClaimShape::Batch(_)) => {
                    mark.bind(json_ids(&jobs.iter().map(|j| j.id).collect::<Vec<_>>()))
                }
                (MarkParam::VisibilityTimeout, _) => mark.bind(micros(d.visibility_timeout)),
            };
        }
        mark.execute(&mut self.conn).await?;
        Ok(jobs)
    }

    /// Runs `body` in a transaction of its own: committed when it succeeds, rolled back
    /// when it fails.
    async fn alone<T>(
        &mut self,
        body: impl AsyncFnOnce(&mut MariaLink) -> Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        self.execute("BEGIN").await?;
        match body(self).await {
            Ok(v) => {
                self.execute("COMMIT").await?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.execute("ROLLBACK").await;
                Err(e)
            }
        }
    }

    /// Finishes `ids` as done; the ids whose completion finished nothing (rows matched, as
    /// the client asks the server to count them).
    async fn complete(&mut self, ids: &[JobId]) -> Result<Vec<JobId>, BackendError> {
        let d = &self.shared.design;
        let mut results = Vec::new();
        match d.complete {
            CompleteShape::PerBatch => {
                let done = sqlx::query(text(&d.sql.complete))
                    .bind(json_ids(ids))
                    .execute(&mut self.conn)
                    .await?;
                results.push(Completion {
                    rows: done.rows_affected(),
                    ids: None,
                });
            }
            CompleteShape::PerJob => {
                for id in ids {
                    let done = sqlx::query(text(&d.sql.complete))
                        .bind(id)
                        .execute(&mut self.conn)
                        .await?;
                    results.push(Completion {
                        rows: done.rows_affected(),
                        ids: None,
                    });
                }
            }
        }
        completion::stale(d.complete, ids, &results)
    }

    /// The jobs' statuses (the design's job_status.sql, as the proof asks it).
    async fn statuses(
        &mut self,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobStatus, Option<i32>)>, BackendError> {
        seam::Inspect::job_statuses(self, ids).await
    }

    /// The reaper's steps inside its transaction: lock the stale jobs, update them, read
    /// their statuses back.
    async fn reap_locked(
        &mut self,
        stale_after: Duration,
        count_as_attempt: bool,
    ) -> Result<Vec<(JobId, bool)>, BackendError> {
        let d = &self.shared.design;
        let ids: Vec<i64> =
            sqlx::query_scalar(text(follow_up(&d.sql.find_stale, "find_stale.sql")?))
                .bind(micros(stale_after))
                .fetch_all(&mut self.conn)
                .await?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let d = &self.shared.design;
        let update = if count_as_attempt {
            &d.sql.reap_counting
        } else {
            &d.sql.reap
        };
        let update = follow_up(update, "reap.sql")?;
        sqlx::query(text(update))
            .bind(json_ids(&ids))
            .execute(&mut self.conn)
            .await?;
        Ok(self
            .statuses(&ids)
            .await?
            .into_iter()
            .map(|(id, status, _)| (id, status == JobStatus::DeadLetter))
            .collect())
    }
}

#[async_trait]
impl Enqueue for MariaLink {
    async fn enqueue(&mut self, job: &NewJob) -> Result<JobId, BackendError> {
        Ok(sqlx::query_scalar(text(&self.shared.design.sql.enqueue))
            .bind(&job.job_type)
            .bind(&job.payload)
            .bind(self.shared.design.priority(job.priority))
            .bind(self.shared.max_retries)
            .fetch_one(&mut self.conn)
            .await?)
    }

    async fn enqueue_batch(&mut self, jobs: &[NewJob]) -> Result<Vec<JobId>, BackendError> {
        let rows: Vec<(&str, &str, i32)> = jobs
            .iter()
            .map(|j| {
                let priority = self.shared.design.priority(j.priority);
                (j.job_type.as_str(), j.payload.as_str(), priority)
            })
            .collect();
        let rows = serde_json::to_string(&rows).map_err(encode)?;
        Ok(sqlx::query_scalar(text(&self.shared.design.sql.prefill))
            .bind(self.shared.max_retries)
            .bind(rows)
            .fetch_all(&mut self.conn)
            .await?)
    }
}

#[async_trait]
impl Work for MariaLink {
    async fn claim(&mut self, mode: ClaimMode) -> Result<Vec<ClaimedJob>, BackendError> {
        match mode {
            ClaimMode::InTransaction => {
                if !self.open {
                    self.execute("BEGIN").await?;
                    self.open = true;
                }
                self.select_and_mark().await
            }
            ClaimMode::Committed => self.alone(async |l| l.select_and_mark().await).await,
        }
    }

    async fn idle(&mut self, mode: ClaimMode) -> Result<(), BackendError> {
        if mode == ClaimMode::InTransaction {
            self.open = false;
            self.execute("COMMIT").await?;
            self.rested_at = Some(Instant::now());
        }
        Ok(())
    }

    /// The failure update, then the job's status read back (no RETURNING on UPDATE).
    async fn fail(&mut self, id: JobId, error: &str) -> Result<FailOutcome, BackendError> {
        let b = self.shared.backoff;
        let mut query = sqlx::query(text(&self.shared.design.sql.fail));
        for param in &self.shared.design.fail_binds {
            query = match param {
                FailParam::Id => query.bind(id),
                FailParam::Error => query.bind(error),
                FailParam::BackoffBase => query.bind(micros(b.base)),
                FailParam::BackoffFactor => query.bind(b.factor),
                FailParam::BackoffCap => query.bind(b.cap.map(micros)),
                FailParam::BackoffJitter => query.bind(b.jitter.floor()),
            };
        }
        if query.execute(&mut self.conn).await?.rows_affected() == 0 {
            return Ok(FailOutcome::Stale);
        }
        let statuses = self.statuses(&[id]).await?;
        Ok(match statuses.first() {
            Some((_, JobStatus::DeadLetter, _)) => FailOutcome::DeadLettered,
            _ => FailOutcome::Retry,
        })
    }

    async fn finish(
        &mut self,
        mode: ClaimMode,
        done: &[JobId],
    ) -> Result<Vec<JobId>, BackendError> {
        let stale = match done.is_empty() {
            true => Vec::new(),
            false => self.complete(done).await?,
        };
        if mode == ClaimMode::Committed {
            return Ok(stale);
        }
        self.open = false;
        let rest = self.rested_at.is_none_or(|at| at.elapsed() >= REST_EVERY);
        if rest {
            self.execute("COMMIT").await?;
            self.rested_at = Some(Instant::now());
        } else {
            self.execute("COMMIT; BEGIN").await?;
            self.open = true;
        }
        Ok(stale)
    }

    async fn recover(&mut self, mode: ClaimMode) -> bool {
        self.open = false;
        mode == ClaimMode::Committed || self.execute("ROLLBACK").await.is_ok()
    }

    /// In one transaction of its own.
    async fn reap(
        &mut self,
        stale_after: Duration,
        count_as_attempt: bool,
    ) -> Result<Vec<(JobId, bool)>, BackendError> {
        // A design without a reaper (a visibility timeout) has nothing ever stale.
        if self.shared.design.sql.find_stale.is_none() {
            return Ok(Vec::new());
        }
        self.alone(async |l| l.reap_locked(stale_after, count_as_attempt).await)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::json_ids;

    #[test]
    fn ids_travel_as_a_json_array() {
        assert_eq!(json_ids(&[]), "[]");
        assert_eq!(json_ids(&[1, -2, 30]), "[1,-2,30]");
    }
}
